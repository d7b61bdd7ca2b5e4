//! The policy as an OCI artifact, as `kwctl push`/`kwctl pull` handle it: one
//! layer holding the annotated module (`application/vnd.wasm.content.layer.v1+wasm`),
//! a `{}` config blob (`application/vnd.wasm.config.v1+json`), an OCI image
//! manifest annotated with the single-line metadata annotations and
//! `org.opencontainers.image.source`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::Value;

use crate::annotate::read_metadata;
use crate::error::{Error, Result};

/// The `org.opencontainers.image.source` manifest annotation.
pub const OCI_SOURCE_ANNOTATION: &str = "org.opencontainers.image.source";
/// The metadata annotation it is taken from.
pub const POLICY_SOURCE_ANNOTATION: &str = "io.kubewarden.policy.source";

/// How to reach a registry.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Plain HTTP even for a registry that is not on this machine.
    pub insecure: bool,
}

/// A pushed policy.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// `registry://host/path:tag@sha256:...`
    pub reference: String,
    /// The manifest digest the registry reports.
    pub digest: String,
    /// The manifest that was pushed.
    pub manifest: OciImageManifest,
}

/// A pulled policy.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The module bytes (the only layer), digest-checked.
    pub module: Vec<u8>,
    /// The manifest digest.
    pub digest: String,
    /// The manifest.
    pub manifest: OciImageManifest,
}

/// Parses `registry://host[:port]/path[:tag][@digest]` or the same without the scheme.
pub fn parse_reference(reference: &str) -> Result<Reference> {
    let bare = reference.strip_prefix("registry://").unwrap_or(reference);
    bare.parse::<Reference>().map_err(|e| Error::Reference {
        reference: reference.to_owned(),
        message: e.to_string(),
    })
}

/// The manifest annotations for a module's metadata, as kwctl writes them:
/// single-line values only (trimmed), and `org.opencontainers.image.source`
/// from `io.kubewarden.policy.source` unless already set.
pub fn manifest_annotations(metadata: &Value) -> BTreeMap<String, String> {
    let mut annotations: BTreeMap<String, String> = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| Some((key, value.as_str()?)))
        .filter(|(_, value)| value.lines().count() <= 1)
        .map(|(key, value)| (key.clone(), value.trim().to_owned()))
        .collect();
    if let Some(source) = annotations.get(POLICY_SOURCE_ANNOTATION).cloned() {
        annotations
            .entry(OCI_SOURCE_ANNOTATION.to_owned())
            .or_insert(source);
    }
    annotations
}

/// The manifest for a module: one wasm layer, the `{}` config, the annotations.
pub fn policy_manifest(
    module: &[u8],
    annotations: BTreeMap<String, String>,
) -> (OciImageManifest, ImageLayer, Config) {
    let layer = ImageLayer::new(module.to_vec(), WASM_LAYER_MEDIA_TYPE.to_owned(), None);
    let config = Config::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.to_owned(), None);
    let annotations = (!annotations.is_empty()).then_some(annotations);
    let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, annotations);
    (manifest, layer, config)
}

/// Plain HTTP for registries on this machine or when asked, HTTPS otherwise.
pub fn client_config(reference: &Reference, options: &RegistryOptions) -> ClientConfig {
    let registry = reference.resolve_registry().to_owned();
    let host = registry
        .rsplit_once(':')
        .map_or(registry.as_str(), |(h, _)| h);
    let local = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    let protocol = if options.insecure || local {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    ClientConfig {
        protocol,
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        read_timeout: Some(std::time::Duration::from_secs(60)),
        ..ClientConfig::default()
    }
}

fn client_for(reference: &Reference, options: &RegistryOptions) -> Client {
    Client::new(client_config(reference, options))
}

/// Credentials for `registry` from the docker config (`$DOCKER_CONFIG/config.json`
/// or `~/.docker/config.json`, `auths.<registry>.auth`); anonymous otherwise.
pub fn registry_auth(registry: &str) -> RegistryAuth {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")));
    dir.and_then(|d| std::fs::read(d.join("config.json")).ok())
        .and_then(|raw| serde_json::from_slice::<Value>(&raw).ok())
        .and_then(|config| docker_config_auth(&config, registry))
        .unwrap_or(RegistryAuth::Anonymous)
}

fn docker_config_auth(config: &Value, registry: &str) -> Option<RegistryAuth> {
    let encoded = config.get("auths")?.get(registry)?.get("auth")?.as_str()?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let (user, password) = String::from_utf8(decoded)
        .ok()?
        .split_once(':')
        .map(|(u, p)| (u.to_owned(), p.to_owned()))?;
    Some(RegistryAuth::Basic(user, password))
}

/// A single-threaded async runtime for one registry exchange.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::io("the async runtime"))
}

/// An [`Error::Registry`] for `image`.
pub fn registry_error(
    action: &'static str,
    image: &Reference,
) -> impl FnOnce(oci_client::errors::OciDistributionError) -> Error {
    let reference = image.whole();
    move |e| Error::Registry {
        action,
        reference,
        message: format!("{e:#}"),
    }
}

/// Pushes an annotated module to `reference` (a tag). Refuses a module without
/// metadata, as kwctl does without `--force`.
pub fn push(module: &[u8], reference: &str, options: &RegistryOptions) -> Result<Pushed> {
    let metadata = read_metadata(module)?.ok_or_else(|| {
        Error::Usage(
            "cannot push a policy that is not annotated: run `cargo xtask annotate` first"
                .to_owned(),
        )
    })?;
    let image = parse_reference(reference)?;
    if image.digest().is_some() {
        return Err(Error::Usage(format!(
            "{reference}: push to a tag, not a digest"
        )));
    }
    let (manifest, layer, config) = policy_manifest(module, manifest_annotations(&metadata));
    let client = client_for(&image, options);
    let auth = registry_auth(image.resolve_registry());
    let digest = runtime()?.block_on(async {
        client
            .push(&image, &[layer], config, &auth, Some(manifest.clone()))
            .await
            .map_err(registry_error("cannot push to", &image))?;
        client
            .fetch_manifest_digest(&image, &auth)
            .await
            .map_err(registry_error(
                "pushed, but cannot read back the digest of",
                &image,
            ))
    })?;
    Ok(Pushed {
        reference: format!("registry://{}@{digest}", image.whole()),
        digest,
        manifest,
    })
}

/// Pulls the policy at `reference` (tag or digest); every blob is checked
/// against its digest.
pub fn pull(reference: &str, options: &RegistryOptions) -> Result<Pulled> {
    let image = parse_reference(reference)?;
    let client = client_for(&image, options);
    let auth = registry_auth(image.resolve_registry());
    let data = runtime()?
        .block_on(client.pull(&image, &auth, vec![WASM_LAYER_MEDIA_TYPE]))
        .map_err(registry_error("cannot pull", &image))?;
    let refused = |message: String| Error::Registry {
        action: "cannot pull",
        reference: image.whole(),
        message,
    };
    let [layer] = <[ImageLayer; 1]>::try_from(data.layers)
        .map_err(|layers| refused(format!("{} layers where a policy has one", layers.len())))?;
    let manifest = data
        .manifest
        .ok_or_else(|| refused("the registry returned no manifest".to_owned()))?;
    let digest = data.digest.unwrap_or_default();
    if let Some(wanted) = image.digest() {
        if wanted != digest {
            return Err(refused(format!("the registry served manifest {digest}")));
        }
    }
    Ok(Pulled {
        module: layer.data.to_vec(),
        digest,
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_keep_single_lines_and_add_the_source() {
        let metadata = json!({"annotations": {
            "io.kubewarden.policy.title": "os-placement",
            "io.kubewarden.policy.source": "https://example.com/src",
            "io.kubewarden.policy.usage": "# Title\n\ntext",
            "io.kubewarden.policy.description": "one line\n",
        }});
        let annotations = manifest_annotations(&metadata);
        assert_eq!(
            annotations.get(OCI_SOURCE_ANNOTATION).map(String::as_str),
            Some("https://example.com/src")
        );
        assert!(!annotations.contains_key("io.kubewarden.policy.usage"));
        assert_eq!(annotations["io.kubewarden.policy.description"], "one line");
        assert_eq!(annotations.len(), 4);
        let own =
            json!({"annotations": {POLICY_SOURCE_ANNOTATION: "a", OCI_SOURCE_ANNOTATION: "b"}});
        assert_eq!(manifest_annotations(&own)[OCI_SOURCE_ANNOTATION], "b");
    }

    #[test]
    fn manifest_has_one_wasm_layer_and_an_empty_config() {
        let (manifest, _, _) = policy_manifest(b"\0asm", BTreeMap::new());
        let json = serde_json::to_value(&manifest).unwrap();
        assert_eq!(json["schemaVersion"], 2);
        assert_eq!(json["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(json["config"]["size"], 2);
        // sha256 of `{}`
        assert_eq!(
            json["config"]["digest"],
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(json["layers"].as_array().unwrap().len(), 1);
        assert_eq!(json["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
        assert_eq!(json["layers"][0]["size"], 4);
        assert!(json.get("annotations").is_none());
    }

    #[test]
    fn references() {
        let r = parse_reference("registry://127.0.0.1:5000/os-placement/policy:v0.1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "os-placement/policy");
        assert_eq!(r.tag(), Some("v0.1.0"));
        assert!(parse_reference("registry://host/Upper/Case:tag").is_err());
    }

    #[test]
    fn docker_config_credentials() {
        let config = json!({"auths": {"r.example.com": {"auth": "dXNlcjpwYXNz"}}});
        match docker_config_auth(&config, "r.example.com") {
            Some(RegistryAuth::Basic(user, password)) => {
                assert_eq!((user.as_str(), password.as_str()), ("user", "pass"))
            }
            other => panic!("{other:?}"),
        }
        assert!(docker_config_auth(&config, "other.example.com").is_none());
    }
}
