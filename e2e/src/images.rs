//! Container images with real `platform` entries, pushed to a registry for
//! the context-aware tests: per platform, a one-layer image manifest whose
//! config carries `os`, `os.version` and `architecture` (as `docker buildx` and
//! Microsoft's builds write them), then either an index listing them with
//! their platforms, or the single manifest under the tag. The layer is an
//! empty tar archive: nothing here is run.
//!
//! Formats: OCI image-spec `image-index.md`/`manifest.md`/`config.md`, and the
//! Docker manifest list v2 schema 2 (what `mcr.microsoft.com` and
//! `registry.k8s.io/pause` serve).

use crate::error::{Error, Result};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

/// One platform of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePlatform {
    /// `linux`, `windows`
    pub os: String,
    /// Full Windows build, e.g. `10.0.20348.2700`; `None` for Linux.
    pub os_version: Option<String>,
    /// `amd64`, `arm64`
    pub architecture: String,
}

impl ImagePlatform {
    /// A Linux platform.
    pub fn linux(architecture: &str) -> Self {
        Self {
            os: "linux".to_owned(),
            os_version: None,
            architecture: architecture.to_owned(),
        }
    }

    /// A Windows amd64 platform of full build `os_version` (`10.0.N.R`).
    pub fn windows(os_version: &str) -> Self {
        Self {
            os: "windows".to_owned(),
            os_version: Some(os_version.to_owned()),
            architecture: "amd64".to_owned(),
        }
    }

    fn json(&self) -> Value {
        let mut platform = json!({"architecture": self.architecture, "os": self.os});
        if let (Some(version), Value::Object(map)) = (&self.os_version, &mut platform) {
            map.insert("os.version".to_owned(), json!(version));
        }
        platform
    }
}

/// Media types of one manifest format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OCI image index and manifests.
    Oci,
    /// Docker manifest list and schema 2 manifests.
    Docker,
}

impl Format {
    fn index(self) -> &'static str {
        match self {
            Self::Oci => "application/vnd.oci.image.index.v1+json",
            Self::Docker => "application/vnd.docker.distribution.manifest.list.v2+json",
        }
    }
    fn manifest(self) -> &'static str {
        match self {
            Self::Oci => "application/vnd.oci.image.manifest.v1+json",
            Self::Docker => "application/vnd.docker.distribution.manifest.v2+json",
        }
    }
    fn config(self) -> &'static str {
        match self {
            Self::Oci => "application/vnd.oci.image.config.v1+json",
            Self::Docker => "application/vnd.docker.container.image.v1+json",
        }
    }
    fn layer(self) -> &'static str {
        match self {
            Self::Oci => "application/vnd.oci.image.layer.v1.tar",
            Self::Docker => "application/vnd.docker.image.rootfs.diff.tar",
        }
    }
}

/// What to push under one tag.
#[derive(Debug, Clone)]
pub struct TestImage {
    /// Repository and tag, e.g. `corp/billing:4.2`.
    pub name: String,
    /// The platforms; with `single`, exactly the first one is pushed.
    pub platforms: Vec<ImagePlatform>,
    /// A single image manifest under the tag instead of an index.
    pub single: bool,
    /// Media types.
    pub format: Format,
}

/// A pushed image.
#[derive(Debug, Clone)]
pub struct PushedImage {
    /// `127.0.0.1:PORT/corp/billing:4.2`, as a pod spec names it.
    pub reference: String,
    /// Digest of what the tag points at (index or manifest).
    pub digest: String,
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// An empty tar archive: two zero blocks.
const EMPTY_TAR: [u8; 1024] = [0; 1024];

/// The config blob of one platform, with the fields container runtimes read.
fn config_blob(platform: &ImagePlatform) -> Vec<u8> {
    let mut config = json!({
        "architecture": platform.architecture,
        "os": platform.os,
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": [sha256(&EMPTY_TAR)]},
    });
    if let (Some(version), Value::Object(map)) = (&platform.os_version, &mut config) {
        map.insert("os.version".to_owned(), json!(version));
    }
    config.to_string().into_bytes()
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({"mediaType": media_type, "digest": sha256(bytes), "size": bytes.len()})
}

/// Pushes `image` to the registry at `host` (`127.0.0.1:PORT`, plain HTTP).
pub fn push_image(host: &str, image: &TestImage) -> Result<PushedImage> {
    let reference: Reference =
        format!("{host}/{}", image.name)
            .parse()
            .map_err(|e| Error::Registry {
                action: "not an image reference:".to_owned(),
                reference: format!("{host}/{}", image.name),
                message: format!("{e}"),
            })?;
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![host.to_owned()]),
        ..ClientConfig::default()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::io("cannot start the async runtime"))?;
    runtime.block_on(async {
        client
            .store_auth_if_needed(reference.resolve_registry(), &RegistryAuth::Anonymous)
            .await;
        let count = if image.single {
            1
        } else {
            image.platforms.len()
        };
        let mut entries = Vec::new();
        for platform in image.platforms.iter().take(count) {
            entries.push(push_platform(&client, &reference, image, platform).await?);
        }
        let digest = match (image.single, entries.first()) {
            (true, Some((_, manifest))) => sha256(manifest),
            _ => push_index(&client, &reference, image.format, &entries).await?,
        };
        Ok(PushedImage {
            reference: reference.whole(),
            digest,
        })
    })
}

/// One platform of `image`: its config and layer blobs and its manifest
/// (under the tag for a single image, else by digest). Returns the index
/// entry and the manifest bytes.
async fn push_platform(
    client: &Client,
    reference: &Reference,
    image: &TestImage,
    platform: &ImagePlatform,
) -> Result<(Value, Vec<u8>)> {
    let format = image.format;
    let config = config_blob(platform);
    for blob in [&config[..], &EMPTY_TAR[..]] {
        client
            .push_blob(reference, blob.to_vec(), &sha256(blob))
            .await
            .map_err(|e| registry_error("cannot push a blob of", reference, e))?;
    }
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": format.manifest(),
        "config": descriptor(format.config(), &config),
        "layers": [descriptor(format.layer(), &EMPTY_TAR)],
    })
    .to_string()
    .into_bytes();
    let target = if image.single {
        reference.clone()
    } else {
        reference.clone_with_digest(sha256(&manifest))
    };
    push_manifest(client, &target, &manifest, format.manifest()).await?;
    let mut entry = descriptor(format.manifest(), &manifest);
    if let Value::Object(map) = &mut entry {
        map.insert("platform".to_owned(), platform.json());
    }
    Ok((entry, manifest))
}

/// The index of `entries` under the tag; returns its digest.
async fn push_index(
    client: &Client,
    reference: &Reference,
    format: Format,
    entries: &[(Value, Vec<u8>)],
) -> Result<String> {
    let index = json!({
        "schemaVersion": 2,
        "mediaType": format.index(),
        "manifests": entries.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
    })
    .to_string()
    .into_bytes();
    push_manifest(client, reference, &index, format.index()).await?;
    Ok(sha256(&index))
}

async fn push_manifest(
    client: &Client,
    target: &Reference,
    body: &[u8],
    media_type: &str,
) -> Result<()> {
    let content_type = media_type.parse().map_err(|e| Error::Registry {
        action: "not a media type:".to_owned(),
        reference: media_type.to_owned(),
        message: format!("{e}"),
    })?;
    client
        .push_manifest_raw(target, body.to_vec(), content_type)
        .await
        .map_err(|e| registry_error("cannot push manifest", target, e))?;
    Ok(())
}

fn registry_error(
    action: &str,
    reference: &Reference,
    error: oci_client::errors::OciDistributionError,
) -> Error {
    Error::Registry {
        action: action.to_owned(),
        reference: reference.whole(),
        message: format!("{error:#}"),
    }
}

/// The images the context-aware tests use. Their names decide nothing by
/// text: only the registry knows their platforms.
#[derive(Debug, Clone)]
pub struct StandardImages {
    /// `corp/billing:4.2`: OCI index, Linux amd64 and arm64.
    pub linux: PushedImage,
    /// `corp/ledger:7.1`: OCI index, Windows 10.0.17763, 10.0.20348 and 10.0.26100.
    pub windows_multi: PushedImage,
    /// `corp/pause:3.10`: Docker manifest list, Linux amd64/arm64 and the three
    /// Windows builds, as `registry.k8s.io/pause` serves it.
    pub pause: PushedImage,
    /// `corp/reports:2.0`: one OCI image manifest, Windows 10.0.20348.2700.
    pub windows_single: PushedImage,
    /// `corp/batch:1.0`: OCI index with only Windows 10.0.26100 (Server 2025).
    pub windows_2025: PushedImage,
}

/// Full Windows builds, as Microsoft's images carry them.
pub const LTSC2019: &str = "10.0.17763.6893";
/// Windows Server 2022.
pub const LTSC2022: &str = "10.0.20348.2700";
/// Windows Server 2025.
pub const LTSC2025: &str = "10.0.26100.3194";

/// Pushes [`StandardImages`] to the registry at `host`.
pub fn push_standard_images(host: &str) -> Result<StandardImages> {
    let index = |name: &str, platforms: Vec<ImagePlatform>, format: Format| {
        push_image(
            host,
            &TestImage {
                name: name.to_owned(),
                platforms,
                single: false,
                format,
            },
        )
    };
    let windows_all = || {
        [LTSC2019, LTSC2022, LTSC2025]
            .map(ImagePlatform::windows)
            .to_vec()
    };
    let linux = vec![ImagePlatform::linux("amd64"), ImagePlatform::linux("arm64")];
    let mut mixed = linux.clone();
    mixed.extend(windows_all());
    Ok(StandardImages {
        linux: index("corp/billing:4.2", linux, Format::Oci)?,
        windows_multi: index("corp/ledger:7.1", windows_all(), Format::Oci)?,
        pause: index("corp/pause:3.10", mixed, Format::Docker)?,
        windows_single: push_image(
            host,
            &TestImage {
                name: "corp/reports:2.0".to_owned(),
                platforms: vec![ImagePlatform::windows(LTSC2022)],
                single: true,
                format: Format::Oci,
            },
        )?,
        windows_2025: index(
            "corp/batch:1.0",
            vec![ImagePlatform::windows(LTSC2025)],
            Format::Oci,
        )?,
    })
}
