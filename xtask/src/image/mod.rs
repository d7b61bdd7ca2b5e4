//! The os-placement CLI as a multi-architecture container image, built
//! without a container engine. Each platform gets one gzip tar layer (the
//! static binary at `/os-placement` and a CA bundle), an OCI image config
//! (non-root user, the binary as entrypoint, the OCI labels) and an OCI image
//! manifest; an OCI image index lists them. The result is an OCI image layout
//! ([`layout`]) that [`push`] sends to a registry.
//!
//! Everything is reproducible: the same binaries, CA bundle, metadata and
//! time give the same bytes, hence the same digests.

pub mod layer;
pub mod layout;
pub mod push;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::oci::{OCI_SOURCE_ANNOTATION, POLICY_SOURCE_ANNOTATION};

pub use layer::{check_binary, layer, Layer, BINARY_PATH, CA_BUNDLE_PATH};
pub use layout::{read_layout, write_layout, Layout};

/// The user the container runs as (the usual non-root uid and gid 65532).
pub const USER: &str = "65532:65532";
/// The entrypoint: the CLI itself; the command line picks the subcommand.
pub const ENTRYPOINT: &str = "/os-placement";
/// `org.opencontainers.image.title`.
pub const TITLE: &str = "os-placement";
/// `org.opencontainers.image.description`.
pub const DESCRIPTION: &str = "The os-placement CLI: `facts sync` publishes the cluster's facts for the os-placement Kubewarden policy; check, fix and explain run the policy's rules over manifests";

/// The media type of an OCI image index.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The media type of an OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The media type of an OCI image config.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The media type of a gzip tar layer.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// The platforms an image may hold, as OCI names them, with their ELF machine.
const PLATFORMS: [(&str, u16); 2] = [("amd64", 62), ("arm64", 183)];

/// A platform of the image: always `linux`, with an architecture of [`PLATFORMS`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Platform {
    /// The OCI architecture: `amd64` or `arm64`.
    pub architecture: String,
}

impl Platform {
    /// Parses `linux/amd64` or `linux/arm64`.
    pub fn parse(text: &str) -> Result<Self> {
        let known = PLATFORMS.iter().map(|(a, _)| format!("linux/{a}"));
        let architecture = text
            .strip_prefix("linux/")
            .filter(|a| PLATFORMS.iter().any(|(known, _)| known == a))
            .ok_or_else(|| {
                let known: Vec<String> = known.collect();
                Error::Usage(format!("platform {text:?}: one of {}", known.join(", ")))
            })?;
        Ok(Self {
            architecture: architecture.to_owned(),
        })
    }

    /// The ELF machine (`e_machine`) of its binaries.
    pub fn elf_machine(&self) -> u16 {
        PLATFORMS
            .iter()
            .find(|(a, _)| *a == self.architecture)
            .map_or(0, |(_, machine)| *machine)
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "linux/{}", self.architecture)
    }
}

/// What an image is built from.
#[derive(Debug, Clone)]
pub struct ImageInputs {
    /// One static binary per platform.
    pub binaries: Vec<(Platform, Vec<u8>)>,
    /// The CA bundle at [`CA_BUNDLE_PATH`], for TLS to registries.
    pub ca_bundle: Option<Vec<u8>>,
    /// The labels of each config, which are also the manifests' and the index's annotations.
    pub annotations: BTreeMap<String, String>,
    /// Seconds since the epoch: the files' times and the config's `created`.
    pub epoch: i64,
}

/// A blob: its media type and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The media type its descriptors carry.
    pub media_type: &'static str,
    /// The content.
    pub bytes: Vec<u8>,
}

impl Blob {
    /// `sha256:<hex>` of the bytes.
    pub fn digest(&self) -> String {
        sha256_digest(&self.bytes)
    }

    /// The OCI descriptor of the blob.
    pub fn descriptor(&self) -> Value {
        json!({"mediaType": self.media_type, "digest": self.digest(), "size": self.bytes.len()})
    }

    /// The descriptor with one more field (`platform`, `annotations`).
    pub fn descriptor_with(&self, key: &str, value: Value) -> Value {
        let mut descriptor = self.descriptor();
        if let Some(fields) = descriptor.as_object_mut() {
            fields.insert(key.to_owned(), value);
        }
        descriptor
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// RFC 3339 (UTC, seconds) of `epoch`.
pub fn rfc3339(epoch: i64) -> Result<String> {
    chrono::DateTime::from_timestamp(epoch, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .ok_or_else(|| Error::Usage(format!("{epoch} is not a time in seconds since 1970")))
}

/// The OCI annotations of the image, from metadata.yml: source, version and
/// licence of the policy (they share a repository and a version), title,
/// description, the time of `epoch`, and the revision when known.
pub fn image_annotations(
    metadata: &Value,
    revision: Option<&str>,
    epoch: i64,
) -> Result<BTreeMap<String, String>> {
    let field = |key: &str| {
        metadata
            .pointer(&format!("/annotations/{}", key.replace('/', "~1")))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::Metadata(format!("annotations.{key} is required")))
    };
    let mut annotations = BTreeMap::from([
        (OCI_SOURCE_ANNOTATION, field(POLICY_SOURCE_ANNOTATION)?),
        (
            "org.opencontainers.image.version",
            field("io.kubewarden.policy.version")?,
        ),
        (
            "org.opencontainers.image.licenses",
            field("io.kubewarden.policy.license")?,
        ),
        ("org.opencontainers.image.title", TITLE.to_owned()),
        (
            "org.opencontainers.image.description",
            DESCRIPTION.to_owned(),
        ),
        ("org.opencontainers.image.created", rfc3339(epoch)?),
    ]);
    if let Some(revision) = revision.filter(|r| !r.is_empty()) {
        annotations.insert("org.opencontainers.image.revision", revision.to_owned());
    }
    Ok(annotations
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect())
}

/// The image config of one platform.
pub fn image_config(
    platform: &Platform,
    labels: &BTreeMap<String, String>,
    diff_id: &str,
    created: &str,
) -> Blob {
    let config = json!({
        "created": created,
        "architecture": platform.architecture,
        "os": "linux",
        "config": {
            "User": USER,
            "Entrypoint": [ENTRYPOINT],
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "cargo xtask image"}],
    });
    Blob {
        media_type: CONFIG_MEDIA_TYPE,
        bytes: serde_json::to_vec(&config).unwrap_or_default(),
    }
}

/// The image manifest of one platform: its config and its one layer.
fn image_manifest(config: &Blob, layer: &Blob, annotations: &BTreeMap<String, String>) -> Blob {
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": config.descriptor(),
        "layers": [layer.descriptor()],
        "annotations": annotations,
    });
    Blob {
        media_type: MANIFEST_MEDIA_TYPE,
        bytes: serde_json::to_vec(&manifest).unwrap_or_default(),
    }
}

/// Builds the image: per platform a layer, a config and a manifest, then the
/// index over the manifests, in the order of [`PLATFORMS`].
pub fn build(inputs: &ImageInputs) -> Result<Layout> {
    if inputs.binaries.is_empty() {
        return Err(Error::Usage(
            "an image needs at least one binary".to_owned(),
        ));
    }
    let mut binaries: Vec<&(Platform, Vec<u8>)> = inputs.binaries.iter().collect();
    binaries.sort_by_key(|(platform, _)| {
        PLATFORMS
            .iter()
            .position(|(a, _)| *a == platform.architecture)
    });
    if binaries
        .windows(2)
        .any(|w| matches!(w, [a, b] if a.0 == b.0))
    {
        return Err(Error::Usage("one binary per platform".to_owned()));
    }
    let created = rfc3339(inputs.epoch)?;
    let mut blobs = Vec::new();
    let mut entries = Vec::new();
    for (platform, binary) in binaries {
        check_binary(platform, binary)?;
        let Layer { tar, gzip } = layer(binary, inputs.ca_bundle.as_deref(), inputs.epoch)?;
        let config = image_config(
            platform,
            &inputs.annotations,
            &sha256_digest(&tar),
            &created,
        );
        let manifest = image_manifest(&config, &gzip, &inputs.annotations);
        let platform = json!({"architecture": platform.architecture, "os": "linux"});
        entries.push(manifest.descriptor_with("platform", platform));
        blobs.extend([config, gzip, manifest]);
    }
    let index = json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": entries,
        "annotations": inputs.annotations,
    });
    let index = Blob {
        media_type: INDEX_MEDIA_TYPE,
        bytes: serde_json::to_vec(&index).unwrap_or_default(),
    };
    Ok(Layout { index, blobs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::layer::tests::elf;

    fn inputs() -> ImageInputs {
        ImageInputs {
            binaries: vec![
                (Platform::parse("linux/arm64").unwrap(), elf(183, false)),
                (Platform::parse("linux/amd64").unwrap(), elf(62, false)),
            ],
            ca_bundle: Some(b"-----BEGIN CERTIFICATE-----\n".to_vec()),
            annotations: BTreeMap::from([("a".to_owned(), "b".to_owned())]),
            epoch: 1_700_000_000,
        }
    }

    fn json(blob: &Blob) -> Value {
        serde_json::from_slice(&blob.bytes).unwrap()
    }

    #[test]
    fn platforms() {
        assert_eq!(
            Platform::parse("linux/arm64").unwrap().to_string(),
            "linux/arm64"
        );
        assert_eq!(Platform::parse("linux/amd64").unwrap().elf_machine(), 62);
        for bad in ["windows/amd64", "linux/riscv64", "amd64"] {
            let err = Platform::parse(bad).unwrap_err().to_string();
            assert!(err.contains("linux/amd64, linux/arm64"), "{err}");
        }
    }

    #[test]
    fn index_lists_one_manifest_per_platform_in_a_fixed_order() {
        let layout = build(&inputs()).unwrap();
        let index = json(&layout.index);
        assert_eq!(index["mediaType"], INDEX_MEDIA_TYPE);
        let platforms: Vec<&Value> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["platform"])
            .collect();
        assert_eq!(
            platforms,
            [
                &json!({"architecture": "amd64", "os": "linux"}),
                &json!({"architecture": "arm64", "os": "linux"})
            ]
        );
        assert_eq!(index["annotations"]["a"], "b");
        // Every descriptor names a blob of the layout with that size.
        for entry in index["manifests"].as_array().unwrap() {
            let manifest = layout.blob(entry["digest"].as_str().unwrap()).unwrap();
            assert_eq!(entry["size"], manifest.bytes.len());
            let manifest = json(manifest);
            for descriptor in [&manifest["config"], &manifest["layers"][0]] {
                let blob = layout.blob(descriptor["digest"].as_str().unwrap()).unwrap();
                assert_eq!(descriptor["size"], blob.bytes.len());
                assert_eq!(descriptor["mediaType"], blob.media_type);
            }
        }
    }

    #[test]
    fn config_runs_the_binary_as_non_root() {
        let layout = build(&inputs()).unwrap();
        let index = json(&layout.index);
        let manifest = json(
            layout
                .blob(index["manifests"][1]["digest"].as_str().unwrap())
                .unwrap(),
        );
        let config = json(
            layout
                .blob(manifest["config"]["digest"].as_str().unwrap())
                .unwrap(),
        );
        assert_eq!(config["architecture"], "arm64");
        assert_eq!(config["os"], "linux");
        assert_eq!(config["created"], "2023-11-14T22:13:20Z");
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(config["config"]["Entrypoint"], json!(["/os-placement"]));
        assert_eq!(config["config"]["WorkingDir"], "/");
        assert_eq!(config["config"]["Labels"]["a"], "b");
        assert!(config["config"].get("Cmd").is_none());
        assert!(config["config"].get("Env").is_none());
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn same_inputs_same_digests() {
        let one = build(&inputs()).unwrap();
        assert_eq!(build(&inputs()).unwrap(), one);
        let mut later = inputs();
        later.epoch += 1;
        assert_ne!(build(&later).unwrap().index.digest(), one.index.digest());
    }

    #[test]
    fn refuses_a_binary_of_another_platform_or_twice_the_same() {
        let mut swapped = inputs();
        swapped.binaries[0].1 = elf(62, false);
        let err = build(&swapped).unwrap_err().to_string();
        assert!(err.contains("linux/arm64"), "{err}");
        let mut twice = inputs();
        twice.binaries[0] = twice.binaries[1].clone();
        assert!(build(&twice).is_err());
        let mut none = inputs();
        none.binaries.clear();
        assert!(build(&none).is_err());
    }

    #[test]
    fn annotations_from_metadata() {
        let metadata = json!({"annotations": {
            "io.kubewarden.policy.source": "https://example.com/src",
            "io.kubewarden.policy.version": "1.2.3",
            "io.kubewarden.policy.license": "Apache-2.0",
        }});
        let annotations = image_annotations(&metadata, Some("abc123"), 0).unwrap();
        assert_eq!(
            annotations[OCI_SOURCE_ANNOTATION],
            "https://example.com/src"
        );
        assert_eq!(annotations["org.opencontainers.image.version"], "1.2.3");
        assert_eq!(
            annotations["org.opencontainers.image.licenses"],
            "Apache-2.0"
        );
        assert_eq!(
            annotations["org.opencontainers.image.title"],
            "os-placement"
        );
        assert_eq!(annotations["org.opencontainers.image.revision"], "abc123");
        assert_eq!(
            annotations["org.opencontainers.image.created"],
            "1970-01-01T00:00:00Z"
        );
        let unknown = image_annotations(&metadata, None, 0).unwrap();
        assert!(!unknown.contains_key("org.opencontainers.image.revision"));
        let err = image_annotations(&json!({}), None, 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("io.kubewarden.policy.source"), "{err}");
    }
}
