//! Host answers read as facts: the JSON a Kubewarden host returns (or
//! `kubectl get -o json` prints) for an image index, an image config, a
//! RuntimeClass or a Node, reduced to the plain data of the facts.
//! Pure conversions: no host call, no I/O. The policy module reads its host
//! calls' answers with them, the CLI and the playground their facts files.
//!
//! Sources: the OCI image spec (image index `manifests[].platform` with
//! `os`, `os.version`, `architecture`; image config `os`, `os.version`,
//! `architecture`), the Docker manifest list (same `platform` object), the
//! Kubernetes API (`core/v1` Node: `metadata.labels`, `spec.taints`,
//! `status.nodeInfo`; `node.k8s.io/v1` RuntimeClass: `handler`,
//! `scheduling`) and the kubelet's well-known labels (`kubernetes.io/os`,
//! `kubernetes.io/arch`, `node.kubernetes.io/windows-build`).

use std::fmt;

use k8s_openapi::api::core::v1::Toleration;
use serde_json::Value;

use crate::input::facts::{ClusterRuntimeClass, NodeFacts, Platform, SchedulingFacts};
use crate::input::node::{object_labels, object_taints, Node};

/// Why an answer holds no platform or node list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerProblem {
    /// Neither an image index (`manifests`) nor an image manifest (`config`).
    NotAnImage,
    /// A manifest config answer without its `config`.
    NoConfig,
    /// An image config without `os`.
    ConfigWithoutOs,
    /// A Node list without `items`.
    NoItems,
}

impl fmt::Display for AnswerProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AnswerProblem::NotAnImage => {
                "the registry answered neither an image index nor an image manifest"
            }
            AnswerProblem::NoConfig => "the manifest config answer has no config",
            AnswerProblem::ConfigWithoutOs => "the image config names no os",
            AnswerProblem::NoItems => "the Node list has no items",
        })
    }
}

/// What an `oci/v1/oci_manifest` answer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestAnswer {
    /// An OCI image index or a Docker manifest list: one platform per entry
    /// that names an `os` (attestation entries carry none and are left out).
    Index(Vec<Platform>),
    /// A single image manifest: its platform is in its config, which takes
    /// one more call (`oci/v1/oci_manifest_config`).
    Image,
}

/// Reads an image index, manifest list or image manifest.
pub fn manifest(answer: &Value) -> Result<ManifestAnswer, AnswerProblem> {
    if let Some(entries) = answer.get("manifests").and_then(Value::as_array) {
        let platforms = entries
            .iter()
            .filter_map(|entry| platform(entry.get("platform")?))
            .collect();
        return Ok(ManifestAnswer::Index(platforms));
    }
    if answer.get("config").is_some() {
        return Ok(ManifestAnswer::Image);
    }
    Err(AnswerProblem::NotAnImage)
}

/// The platform of an `oci/v1/oci_manifest_config` answer
/// (`{"manifest", "digest", "config"}`).
pub fn manifest_config(answer: &Value) -> Result<Platform, AnswerProblem> {
    let config = answer.get("config").ok_or(AnswerProblem::NoConfig)?;
    image_config(config)
}

/// The platform of an image config (`os`, `os.version`, `architecture`).
pub fn image_config(config: &Value) -> Result<Platform, AnswerProblem> {
    platform(config).ok_or(AnswerProblem::ConfigWithoutOs)
}

/// `{os, os.version, architecture}` of an index entry's `platform` or of an
/// image config; `None` without an `os`.
pub fn platform(value: &Value) -> Option<Platform> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Some(Platform {
        os: text("os")?,
        os_version: text("os.version"),
        architecture: text("architecture"),
    })
}

/// A `node.k8s.io/v1` RuntimeClass: its `handler` and `scheduling`.
pub fn runtime_class(object: &Value) -> ClusterRuntimeClass {
    ClusterRuntimeClass {
        handler: object
            .get("handler")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        scheduling: scheduling(object.get("scheduling")),
        isolation: None,
    }
}

/// `scheduling`, read field by field: a toleration that does not parse is
/// left out, as the API server would have refused it.
fn scheduling(value: Option<&Value>) -> SchedulingFacts {
    let Some(value) = value else {
        return SchedulingFacts::default();
    };
    SchedulingFacts {
        node_selector: object_labels(value.get("nodeSelector")),
        tolerations: value
            .get("tolerations")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|t| serde_json::from_value::<Toleration>(t.clone()).ok())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A `Node List` answer (`kubernetes/list_resources_all`, or `kubectl get
/// nodes -o json`): every item read with [`node`].
pub fn node_list(list: &Value) -> Result<NodeFacts, AnswerProblem> {
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .ok_or(AnswerProblem::NoItems)?;
    Ok(NodeFacts::Listed(items.iter().map(node).collect()))
}

/// A `core/v1` Node, reduced to what placement depends on: the OS from the
/// `kubernetes.io/os` label, else `status.nodeInfo.operatingSystem`; the
/// Windows build from `node.kubernetes.io/windows-build`, else the first
/// three parts of a Windows node's `nodeInfo.kernelVersion`
/// (`10.0.20348.2700`); the architecture from `kubernetes.io/arch`, else
/// `nodeInfo.architecture`; labels; taints with a key and an effect.
pub fn node(item: &Value) -> Node {
    let text = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let labels = object_labels(item.pointer("/metadata/labels"));
    let os = labels
        .get("kubernetes.io/os")
        .cloned()
        .or_else(|| text("/status/nodeInfo/operatingSystem"));
    let windows_build = labels
        .get("node.kubernetes.io/windows-build")
        .cloned()
        .or_else(|| {
            let kernel = text("/status/nodeInfo/kernelVersion")?;
            let parts: Vec<&str> = kernel.split('.').take(3).collect();
            (os.as_deref() == Some("windows") && parts.len() == 3).then(|| parts.join("."))
        });
    Node {
        name: text("/metadata/name").unwrap_or_default(),
        architecture: labels
            .get("kubernetes.io/arch")
            .cloned()
            .or_else(|| text("/status/nodeInfo/architecture")),
        os,
        windows_build,
        taints: object_taints(item.pointer("/spec/taints")),
        labels,
        ..Node::default()
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The image index example of the OCI image spec (image-index.md),
    /// with a Windows entry and a BuildKit attestation entry added.
    #[test]
    fn an_image_index_gives_one_platform_per_entry_that_names_an_os() {
        let index = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7143,
                 "digest": "sha256:e692418e4cbaf90ca69d05a66403747baa33ee08806650b51fab815ad7fc331f",
                 "platform": {"architecture": "ppc64le", "os": "linux"}},
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7682,
                 "digest": "sha256:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0ad69efa1f392e94a4333501270",
                 "platform": {"architecture": "amd64", "os": "linux"}},
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7682,
                 "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000001",
                 "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2700"}},
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 840,
                 "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000002",
                 "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}
            ]
        });
        let ManifestAnswer::Index(platforms) = manifest(&index).unwrap() else {
            panic!("an index")
        };
        let read: Vec<(&str, Option<&str>, Option<&str>)> = platforms
            .iter()
            .map(|p| {
                (
                    p.os.as_str(),
                    p.architecture.as_deref(),
                    p.os_version.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                ("linux", Some("ppc64le"), None),
                ("linux", Some("amd64"), None),
                ("windows", Some("amd64"), Some("10.0.20348.2700")),
            ]
        );
    }

    /// A Docker manifest list names its entries' platforms the same way.
    #[test]
    fn a_docker_manifest_list_is_an_index() {
        let list = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
            "manifests": [{"digest": "sha256:a", "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}]
        });
        assert_eq!(
            manifest(&list),
            Ok(ManifestAnswer::Index(vec![Platform {
                os: "linux".into(),
                os_version: None,
                architecture: Some("arm64".into()),
            }]))
        );
    }

    /// An image manifest (OCI image-manifest.md) has `config` and no
    /// `manifests`: its platform is in the config, one call away.
    #[test]
    fn an_image_manifest_asks_for_its_config_and_anything_else_is_refused() {
        let manifest_json = json!({"schemaVersion": 2,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:c", "size": 7023},
            "layers": []});
        assert_eq!(manifest(&manifest_json), Ok(ManifestAnswer::Image));
        assert_eq!(
            manifest(&json!({"errors": [{"code": "MANIFEST_UNKNOWN"}]})),
            Err(AnswerProblem::NotAnImage)
        );
        assert_eq!(
            AnswerProblem::NotAnImage.to_string(),
            "the registry answered neither an image index nor an image manifest"
        );
    }

    /// The image config (OCI config.md): `os`, `os.version`, `architecture`.
    #[test]
    fn an_image_config_names_the_platform_or_is_refused() {
        let answer = json!({"manifest": {}, "digest": "sha256:m",
            "config": {"os": "windows", "os.version": "10.0.17763.6414", "architecture": "amd64", "rootfs": {}}});
        assert_eq!(
            manifest_config(&answer),
            Ok(Platform {
                os: "windows".into(),
                os_version: Some("10.0.17763.6414".into()),
                architecture: Some("amd64".into()),
            })
        );
        assert_eq!(
            manifest_config(&json!({"manifest": {}})),
            Err(AnswerProblem::NoConfig)
        );
        assert_eq!(
            image_config(&json!({"architecture": "amd64"})),
            Err(AnswerProblem::ConfigWithoutOs)
        );
    }

    /// A RuntimeClass as the Kubernetes Windows guide declares one per build.
    #[test]
    fn a_runtime_class_gives_its_handler_and_scheduling() {
        let rc = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "windows-2019"}, "handler": "runhcs-wcow-process",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
                           "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
                                           {"key": 7}]}});
        let read = runtime_class(&rc);
        assert_eq!(read.handler, "runhcs-wcow-process");
        assert_eq!(
            read.scheduling
                .node_selector
                .get("node.kubernetes.io/windows-build")
                .map(String::as_str),
            Some("10.0.17763")
        );
        assert_eq!(
            read.scheduling.tolerations.len(),
            1,
            "the malformed one is left out"
        );
        assert_eq!(read.scheduling.tolerations[0].key.as_deref(), Some("os"));
        // No scheduling: the class places nothing.
        let bare = runtime_class(&json!({"handler": "runc"}));
        assert!(bare.scheduling.node_selector.is_empty() && bare.scheduling.tolerations.is_empty());
    }

    /// NodeFacts as the kubelet registers them: labels first, `nodeInfo` as the fallback.
    #[test]
    fn nodes_read_labels_first_then_node_info() {
        let list = json!({"apiVersion": "v1", "kind": "NodeList", "items": [
            {"metadata": {"name": "w1", "labels": {"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64"}},
             "spec": {"taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}, {"effect": "NoSchedule"}]},
             "status": {"nodeInfo": {"operatingSystem": "windows", "architecture": "amd64", "kernelVersion": "10.0.20348.2700"}}},
            {"metadata": {"name": "w2", "labels": {"node.kubernetes.io/windows-build": "10.0.17763"}},
             "status": {"nodeInfo": {"operatingSystem": "windows", "architecture": "amd64", "kernelVersion": "10.0.20348.2700"}}},
            {"metadata": {"name": "l1"},
             "status": {"nodeInfo": {"operatingSystem": "linux", "architecture": "arm64", "kernelVersion": "6.1.0-1.2.3"}}}
        ]});
        let Ok(NodeFacts::Listed(nodes)) = node_list(&list) else {
            panic!("a list")
        };
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
        assert_eq!(
            nodes[0].taints.len(),
            1,
            "a taint without a key is left out"
        );
        assert_eq!(nodes[0].taints[0].value, "windows");
        assert_eq!(
            nodes[1].windows_build.as_deref(),
            Some("10.0.17763"),
            "the label wins over the kernel version"
        );
        assert_eq!(nodes[2].os.as_deref(), Some("linux"));
        assert_eq!(nodes[2].architecture.as_deref(), Some("arm64"));
        assert_eq!(nodes[2].windows_build, None, "a Linux kernel is no build");
        assert_eq!(
            node_list(&json!({"kind": "NodeList"})),
            Err(AnswerProblem::NoItems)
        );
    }
}
