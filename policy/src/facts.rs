//! Context-aware facts: what the policy asks Kubewarden's host for, and when.
//!
//! Contract with the host (waPC `host_call(binding, namespace, operation, payload)`,
//! binding always `"kubewarden"`). The core decides what is needed
//! (`os_placement_core::needs`); nothing is asked for DELETE/CONNECT,
//! kinds without a pod template, or when the needs are empty.
//!
//! | namespace / operation | when | payload | answer read |
//! |---|---|---|---|
//! | `kubernetes` / `list_resources_by_namespace` | `imageFacts: cluster` (default): once per request that wants images (which ones: `imageLookup`, below) | `{"api_version":"v1","kind":"ConfigMap","namespace":N,"label_selector":"os-placement.kubewarden.io/image-facts=true","field_selector":null,"field_masks":["metadata.name","data"]}` (N: `imageFactsNamespace`) | a List of the ConfigMaps the facts syncer publishes; each `data["images.json"]` is a facts document (`os_placement_core::published`). policy-server serves it from its informer cache: no registry, and no API call once warm |
//! | `oci` / `v1/oci_manifest` | `imageFacts: registry`: per distinct image reference of the pod (containers, init, ephemeral), `imageLookup: undecided` (default): only references the name rules leave undecided, and only while the pod's OS or (with `pinWindowsBuild`) its Windows build is still open; `always`: every image; `off`: never | the reference as a JSON string, e.g. `"registry.corp/app/billing:4.2"` | an image index (`manifests[].platform.{os, os.version, architecture}`; OCI or Docker manifest list) or an image manifest (has `config`, no `manifests`) |
//! | `oci` / `v1/oci_manifest_config` | only after `v1/oci_manifest` answered an image manifest | the same JSON string | `{"manifest", "digest", "config"}`: `config.os`, `config["os.version"]`, `config.architecture` |
//! | `kubernetes` / `get_resource` | once per `spec.runtimeClassName` not declared in settings `runtimeClasses` | `{"api_version":"node.k8s.io/v1","kind":"RuntimeClass","name":N,"namespace":null,"disable_cache":false,"field_masks":null}` | the RuntimeClass: `handler`, `scheduling.nodeSelector`, `scheduling.tolerations`. An error whose text contains `not found` (any case), `NotFound`, or policy-server's `Cannot find <apiVersion>/<Kind> named '<name>'` means the class does not exist |
//! | `kubernetes` / `list_resources_all` | at most once per request, when `nodeInventory` is `warn`/`reject` or `windowsTaint: fromNodes` | `{"api_version":"v1","kind":"Node","label_selector":null,"field_selector":null,"field_masks":["metadata.name","metadata.labels","spec.taints","status.nodeInfo.operatingSystem","status.nodeInfo.architecture","status.nodeInfo.kernelVersion"]}` | a List `{"items":[Node...]}`: OS from `kubernetes.io/os` label else `nodeInfo.operatingSystem`; build from `node.kubernetes.io/windows-build` label else the first three parts of `nodeInfo.kernelVersion` |
//!
//! The answers are read by `os_placement_core::host_answers`, which the CLI
//! and the playground use for their facts files too.
//!
//! Not asked for: images when the pod's own fields already conflict or fix
//! the placement (a Linux selector; Windows with one build, HostProcess, or
//! `pinWindowsBuild: false`). Each distinct reference is asked for once.
//! The facts are plain data (`os_placement_core::Facts`, serde camelCase),
//! so tests and other hosts can pass them to `evaluate_with_facts` directly.
//!
//! A host call that fails, or an answer that does not parse, never traps: it
//! becomes a lookup failure in the facts, and the core falls back to the
//! rules of the references and settings with a warning naming the image (or
//! class, or Nodes) and the error (`lookupFailure: reject` makes an image
//! lookup failure a rejection).

use std::fmt;

use os_placement_core::host_answers::{self, AnswerProblem, ManifestAnswer};
use os_placement_core::published::{self, IMAGE_FACTS_SELECTOR};
use os_placement_core::SortedMap;
use os_placement_core::{Facts, ImageSource, Needs};
use os_placement_core::{ImageFacts, NodeFacts, Platform, RuntimeClassFacts};
use serde::Serialize;
use serde_json::Value;

/// Answers host calls; the module uses waPC, tests a fake.
pub trait Host {
    /// `host_call("kubewarden", namespace, operation, payload)`.
    fn call(&self, namespace: &str, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError>;
}

/// The host failed a call: its own words (policy-server's error text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError(pub String);

/// Why a lookup gave no facts. Its text goes into the warning as it is.
#[derive(Debug)]
pub enum LookupError {
    /// The host failed the call.
    Host(HostError),
    /// The answer of `call` (`namespace/operation`) is not JSON.
    NotJson {
        /// `namespace/operation`.
        call: String,
        /// Why.
        error: serde_json::Error,
    },
    /// The answer is JSON but not what the capability promises.
    Answer(AnswerProblem),
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::Host(HostError(message)) => f.write_str(message),
            LookupError::NotJson { call, error } => {
                write!(f, "{call}: answer is not JSON: {error}")
            }
            LookupError::Answer(problem) => write!(f, "{problem}"),
        }
    }
}

impl From<HostError> for LookupError {
    fn from(error: HostError) -> LookupError {
        LookupError::Host(error)
    }
}

impl From<AnswerProblem> for LookupError {
    fn from(problem: AnswerProblem) -> LookupError {
        LookupError::Answer(problem)
    }
}

/// The Kubewarden host through waPC.
pub struct Wapc;

impl Host for Wapc {
    #[cfg(target_arch = "wasm32")]
    fn call(&self, namespace: &str, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostError> {
        wapc_guest::host_call("kubewarden", namespace, operation, payload)
            .map_err(|e| HostError(e.to_string()))
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn call(
        &self,
        namespace: &str,
        operation: &str,
        _payload: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        Err(HostError(format!(
            "{namespace}/{operation}: host capabilities exist only inside the policy server"
        )))
    }
}

/// Asks the host for everything `needs` lists: one call per image (two for
/// a single image manifest), one per RuntimeClass, one Node list.
pub fn gather(needs: &Needs, host: &dyn Host) -> Facts {
    let images = if needs.images.is_empty() {
        SortedMap::new()
    } else {
        match &needs.image_source {
            ImageSource::Registry => needs
                .images
                .iter()
                .map(|image| (image.clone(), image_facts(image, host)))
                .collect(),
            ImageSource::Cluster { namespace } => published_images(&needs.images, namespace, host),
        }
    };
    let runtime_classes = needs
        .runtime_classes
        .iter()
        .map(|name| (name.clone(), runtime_class(name, host)))
        .collect();
    let nodes = needs.nodes.then(|| nodes(host, needs.node_labels));
    Facts {
        images,
        runtime_classes,
        nodes,
    }
}

/// A `kubernetes` list request, written straight from its fields (no JSON tree).
#[derive(Serialize)]
struct ListRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    label_selector: Option<&'a str>,
    field_selector: Option<&'a str>,
    field_masks: &'a [&'a str],
}

/// A `kubernetes/get_resource` request.
#[derive(Serialize)]
struct GetRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
    disable_cache: bool,
    field_masks: Option<&'a [&'a str]>,
}

fn call_json(
    host: &dyn Host,
    namespace: &str,
    operation: &str,
    payload: &impl Serialize,
) -> Result<Value, LookupError> {
    // The requests always serialise: their fields are strings and options.
    let body = serde_json::to_vec(payload).unwrap_or_default();
    let answer = host.call(namespace, operation, &body)?;
    serde_json::from_slice(&answer).map_err(|error| LookupError::NotJson {
        call: format!("{namespace}/{operation}"),
        error,
    })
}

/// The fields of an image facts ConfigMap the policy reads (the host prunes the rest).
pub const CONFIG_MAP_FIELD_MASKS: [&str; 2] = ["metadata.name", "data"];

/// The wanted images' facts from the ConfigMaps the syncer publishes in
/// `namespace`: one list, served from the policy server's informer cache.
fn published_images(
    wanted: &[String],
    namespace: &str,
    host: &dyn Host,
) -> SortedMap<String, ImageFacts> {
    let request = ListRequest {
        api_version: "v1",
        kind: "ConfigMap",
        namespace: Some(namespace),
        label_selector: Some(IMAGE_FACTS_SELECTOR),
        field_selector: None,
        field_masks: &CONFIG_MAP_FIELD_MASKS,
    };
    match call_json(host, "kubernetes", "list_resources_by_namespace", &request) {
        Ok(list) => published::wanted_images(&list, wanted),
        Err(e) => {
            let error = format!("the image facts of namespace {namespace} cannot be read: {e}");
            wanted
                .iter()
                .map(|image| (image.clone(), ImageFacts::LookupFailed(error.clone())))
                .collect()
        }
    }
}

fn image_facts(image: &str, host: &dyn Host) -> ImageFacts {
    match image_platforms(image, host) {
        Ok(platforms) => ImageFacts::Platforms(platforms),
        Err(e) => ImageFacts::LookupFailed(e.to_string()),
    }
}

fn image_platforms(image: &str, host: &dyn Host) -> Result<Vec<Platform>, LookupError> {
    let answer = call_json(host, "oci", "v1/oci_manifest", &image)?;
    match host_answers::manifest(&answer)? {
        ManifestAnswer::Index(platforms) => Ok(platforms),
        ManifestAnswer::Image => {
            let answer = call_json(host, "oci", "v1/oci_manifest_config", &image)?;
            Ok(vec![host_answers::manifest_config(&answer)?])
        }
    }
}

fn runtime_class(name: &str, host: &dyn Host) -> RuntimeClassFacts {
    let request = GetRequest {
        api_version: "node.k8s.io/v1",
        kind: "RuntimeClass",
        name,
        namespace: None,
        disable_cache: false,
        field_masks: None,
    };
    match call_json(host, "kubernetes", "get_resource", &request) {
        Ok(rc) => RuntimeClassFacts::Found(host_answers::runtime_class(&rc)),
        Err(LookupError::Host(HostError(e))) if is_not_found(&e) => RuntimeClassFacts::Missing,
        Err(e) => RuntimeClassFacts::LookupFailed(e.to_string()),
    }
}

/// The Kubernetes API's 404, as the host passes it on; policy-server words
/// it `Cannot find {api_version}/{kind} named '{name}' ...` (policy-evaluator
/// `callback_handler/kubernetes/client.rs`, `get_resource`).
fn is_not_found(error: &str) -> bool {
    error.to_ascii_lowercase().contains("not found")
        || error.contains("NotFound")
        || (error.contains("Cannot find ") && error.contains(" named '"))
}

/// The fields of a Node the rules read (the host prunes the rest).
pub const NODE_FIELD_MASKS: [&str; 6] = [
    "metadata.name",
    "metadata.labels",
    "spec.taints",
    "status.nodeInfo.operatingSystem",
    "status.nodeInfo.architecture",
    "status.nodeInfo.kernelVersion",
];

/// The fields that tell a Node's OS, build and architecture: all the
/// automatic check reads, a few dozen bytes a node.
pub const NODE_PLATFORM_MASKS: [&str; 4] = [
    "metadata.name",
    "status.nodeInfo.operatingSystem",
    "status.nodeInfo.architecture",
    "status.nodeInfo.kernelVersion",
];

fn nodes(host: &dyn Host, labels: bool) -> NodeFacts {
    let masks: &[&str] = if labels {
        &NODE_FIELD_MASKS
    } else {
        &NODE_PLATFORM_MASKS
    };
    let request = ListRequest {
        api_version: "v1",
        kind: "Node",
        namespace: None,
        label_selector: None,
        field_selector: None,
        field_masks: masks,
    };
    match call_json(host, "kubernetes", "list_resources_all", &request) {
        Ok(list) => host_answers::node_list(&list)
            .unwrap_or_else(|e| NodeFacts::LookupFailed(e.to_string())),
        Err(e) => NodeFacts::LookupFailed(e.to_string()),
    }
}

#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use serde_json::json;

    /// Answers from a table of (namespace/operation, payload) → answer, and
    /// records every call.
    #[derive(Default)]
    struct Fake {
        answers: Vec<(String, Value, Result<Value, String>)>,
        calls: RefCell<Vec<(String, Value)>>,
    }

    impl Fake {
        fn answer(mut self, op: &str, payload: Value, answer: Result<Value, &str>) -> Self {
            self.answers
                .push((op.into(), payload, answer.map_err(str::to_string)));
            self
        }

        /// The operations called so far, in order.
        fn operations(&self) -> Vec<String> {
            self.calls
                .borrow()
                .iter()
                .map(|(op, _)| op.clone())
                .collect()
        }
    }

    impl Host for Fake {
        fn call(
            &self,
            namespace: &str,
            operation: &str,
            payload: &[u8],
        ) -> Result<Vec<u8>, HostError> {
            let op = format!("{namespace}/{operation}");
            let payload: Value = serde_json::from_slice(payload).unwrap();
            self.calls.borrow_mut().push((op.clone(), payload.clone()));
            let (_, _, answer) = self
                .answers
                .iter()
                .find(|(o, p, _)| *o == op && *p == payload)
                .ok_or_else(|| HostError(format!("{op}: no answer")))?;
            answer
                .clone()
                .map(|v| serde_json::to_vec(&v).unwrap())
                .map_err(HostError)
        }
    }

    /// Images read from their registry (`imageFacts: registry`).
    fn needs_images(images: &[&str]) -> Needs {
        Needs {
            images: images.iter().map(|s| s.to_string()).collect(),
            ..Needs::default()
        }
    }

    fn config_map_request(namespace: &str) -> Value {
        json!({"api_version": "v1", "kind": "ConfigMap", "namespace": namespace,
            "label_selector": "os-placement.kubewarden.io/image-facts=true",
            "field_selector": null, "field_masks": ["metadata.name", "data"]})
    }

    #[test]
    fn cluster_facts_are_one_config_map_list_for_every_image() {
        let published = SortedMap::from([(
            "corp/win:1".to_string(),
            ImageFacts::Platforms(vec![Platform {
                os: "windows".into(),
                os_version: Some("10.0.17763.1".into()),
                architecture: None,
            }]),
        )]);
        let list = json!({"items": published::config_maps(&published, "facts")});
        let host = Fake::default().answer(
            "kubernetes/list_resources_by_namespace",
            config_map_request("facts"),
            Ok(list),
        );
        let needs = Needs {
            images: vec!["corp/win:1".into(), "corp/new:1".into()],
            image_source: ImageSource::Cluster {
                namespace: "facts".into(),
            },
            ..Needs::default()
        };
        let facts = gather(&needs, &host);
        assert_eq!(
            *facts.images.get("corp/win:1").unwrap(),
            *published.get("corp/win:1").unwrap()
        );
        assert_eq!(
            *facts.images.get("corp/new:1").unwrap(),
            ImageFacts::Unpublished
        );
        // One call, and never a registry.
        let calls = host.calls.borrow();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "kubernetes/list_resources_by_namespace");
        drop(calls);
        // The list fails: each image is a failed lookup naming the namespace.
        let down = Fake::default();
        let facts = gather(&needs, &down);
        assert!(
            matches!(facts.images.get("corp/win:1").unwrap(), ImageFacts::LookupFailed(e)
                if e.starts_with("the image facts of namespace facts cannot be read")),
            "{facts:?}"
        );
        // No image wanted: no call.
        let idle = Fake::default();
        gather(
            &Needs {
                image_source: needs.image_source.clone(),
                ..Needs::default()
            },
            &idle,
        );
        assert!(idle.calls.borrow().is_empty());
    }

    #[test]
    fn an_index_gives_one_platform_per_entry_and_skips_attestations() {
        let index = json!({"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
            {"digest": "sha256:a", "platform": {"os": "linux", "architecture": "amd64"}},
            {"digest": "sha256:b", "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.2700"}},
            {"digest": "sha256:c", "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}
        ]});
        let host = Fake::default().answer("oci/v1/oci_manifest", json!("app:1"), Ok(index));
        let facts = gather(&needs_images(&["app:1"]), &host);
        let ImageFacts::Platforms(p) = facts.images.get("app:1").unwrap() else {
            panic!("{facts:?}")
        };
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].os_version.as_deref(), Some("10.0.20348.2700"));
        assert_eq!(host.calls.borrow().len(), 1);
    }

    #[test]
    fn a_single_manifest_reads_its_config() {
        let manifest = json!({"schemaVersion": 2, "config": {"digest": "sha256:c"}, "layers": []});
        let config = json!({"manifest": manifest, "digest": "sha256:m",
            "config": {"os": "windows", "os.version": "10.0.17763.6414", "architecture": "amd64"}});
        let host = Fake::default()
            .answer("oci/v1/oci_manifest", json!("w:1"), Ok(manifest.clone()))
            .answer("oci/v1/oci_manifest_config", json!("w:1"), Ok(config));
        let facts = gather(&needs_images(&["w:1"]), &host);
        assert_eq!(
            *facts.images.get("w:1").unwrap(),
            ImageFacts::Platforms(vec![Platform {
                os: "windows".into(),
                os_version: Some("10.0.17763.6414".into()),
                architecture: Some("amd64".into()),
            }])
        );
    }

    #[test]
    fn a_failed_call_or_an_odd_answer_is_a_lookup_failure() {
        let host = Fake::default()
            .answer(
                "oci/v1/oci_manifest",
                json!("down:1"),
                Err("connection refused"),
            )
            .answer(
                "oci/v1/oci_manifest",
                json!("odd:1"),
                Ok(json!({"errors": []})),
            );
        let facts = gather(&needs_images(&["down:1", "odd:1"]), &host);
        assert_eq!(
            *facts.images.get("down:1").unwrap(),
            ImageFacts::LookupFailed("connection refused".into())
        );
        assert!(matches!(
            *facts.images.get("odd:1").unwrap(),
            ImageFacts::LookupFailed(_)
        ));
    }

    #[test]
    fn runtime_classes_found_missing_or_failed() {
        let request = |name: &str| {
            json!({"api_version": "node.k8s.io/v1", "kind": "RuntimeClass", "name": name,
                   "namespace": null, "disable_cache": false, "field_masks": null})
        };
        let rc = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runhcs-wcow-hypervisor",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"},
                           "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]}});
        let host = Fake::default()
            .answer("kubernetes/get_resource", request("hv"), Ok(rc))
            .answer(
                "kubernetes/get_resource",
                request("gone"),
                Err("runtimeclasses.node.k8s.io \"gone\" not found"),
            )
            .answer(
                "kubernetes/get_resource",
                request("absent"),
                Err("Callback evaluation failure: Cannot find node.k8s.io/v1/RuntimeClass named 'absent' inside of namespace 'None'"),
            )
            .answer(
                "kubernetes/get_resource",
                request("denied"),
                Err("forbidden"),
            );
        let needs = Needs {
            runtime_classes: vec!["hv".into(), "gone".into(), "absent".into(), "denied".into()],
            ..Needs::default()
        };
        let facts = gather(&needs, &host);
        let RuntimeClassFacts::Found(hv) = facts.runtime_classes.get("hv").unwrap() else {
            panic!("{facts:?}")
        };
        assert_eq!(hv.handler, "runhcs-wcow-hypervisor");
        assert_eq!(hv.scheduling.tolerations.len(), 1);
        assert_eq!(
            *facts.runtime_classes.get("gone").unwrap(),
            RuntimeClassFacts::Missing
        );
        assert_eq!(
            *facts.runtime_classes.get("absent").unwrap(),
            RuntimeClassFacts::Missing
        );
        assert_eq!(
            *facts.runtime_classes.get("denied").unwrap(),
            RuntimeClassFacts::LookupFailed("forbidden".into())
        );
    }

    #[test]
    fn nodes_are_listed_with_masks_and_read_narrowly() {
        let request = json!({"api_version": "v1", "kind": "Node", "label_selector": null,
            "field_selector": null, "field_masks": NODE_FIELD_MASKS});
        let list = json!({"items": [
            {"metadata": {"name": "w1", "labels": {"kubernetes.io/os": "windows"}},
             "spec": {"taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]},
             "status": {"nodeInfo": {"operatingSystem": "windows", "architecture": "amd64", "kernelVersion": "10.0.20348.2700"}}},
            {"metadata": {"name": "l1", "labels": {"kubernetes.io/os": "linux"}},
             "status": {"nodeInfo": {"operatingSystem": "linux", "kernelVersion": "6.1.0-1.2.3"}}}
        ]});
        let host = Fake::default().answer("kubernetes/list_resources_all", request, Ok(list));
        let facts = gather(
            &Needs {
                nodes: true,
                node_labels: true,
                ..Needs::default()
            },
            &host,
        );
        let nodes = facts.listed_nodes().unwrap();
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
        assert_eq!(nodes[0].taints[0].effect, "NoSchedule");
        assert_eq!(nodes[1].windows_build, None);
        let host = Fake::default();
        let facts = gather(
            &Needs {
                nodes: true,
                ..Needs::default()
            },
            &host,
        );
        assert!(matches!(facts.nodes, Some(NodeFacts::LookupFailed(_))));
    }

    /// nodeInventory auto reads only what tells a node's OS, build and
    /// architecture: `status.nodeInfo` (kubernetes core/v1 NodeSystemInfo;
    /// a Windows node's kernelVersion is its build, e.g. 10.0.20348.2700).
    #[test]
    fn the_automatic_check_lists_nodes_without_labels_or_taints() {
        let request = json!({"api_version": "v1", "kind": "Node", "label_selector": null,
            "field_selector": null, "field_masks": NODE_PLATFORM_MASKS});
        let list = json!({"items": [
            {"metadata": {"name": "w1"},
             "status": {"nodeInfo": {"operatingSystem": "windows", "architecture": "amd64", "kernelVersion": "10.0.20348.2700"}}}
        ]});
        let host = Fake::default().answer("kubernetes/list_resources_all", request, Ok(list));
        let needs = Needs {
            nodes: true,
            ..Needs::default()
        };
        let facts = gather(&needs, &host);
        let nodes = facts.listed_nodes().unwrap();
        assert!(nodes[0].is_windows());
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
        assert_eq!(nodes[0].architecture.as_deref(), Some("amd64"));
    }

    #[test]
    fn no_host_call_when_nothing_is_needed() {
        let host = Fake::default();
        let payload = json!({"settings": {"imageLookup": "off"}, "request": {
            "operation": "CREATE", "kind": {"kind": "Pod"},
            "object": {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": "registry.corp.example/a:1"}]}}}});
        let response = crate::respond_with(&serde_json::to_vec(&payload).unwrap(), &host);
        assert!(response.accepted);
        // Only the Node list of nodeInventory auto: no image lookup.
        assert_eq!(host.operations(), ["kubernetes/list_resources_all"]);
        let off = json!({"settings": {"imageLookup": "off", "nodeInventory": "off"},
            "request": payload["request"]});
        crate::respond_with(&serde_json::to_vec(&off).unwrap(), &host);
        assert_eq!(host.operations(), ["kubernetes/list_resources_all"]);
        // Negative: with the default undecided, the one image is asked for
        // once: from the published facts (the default), or from its registry.
        let pod = json!({"operation": "CREATE", "kind": {"kind": "Pod"},
            "object": {"kind": "Pod", "spec": {"containers": [
                {"name": "c", "image": "registry.corp.example/a:1"},
                {"name": "d", "image": "registry.corp.example/a:1"}]}}});
        for (settings, lookup) in [
            (json!({}), "kubernetes/list_resources_by_namespace"),
            (json!({"imageFacts": "registry"}), "oci/v1/oci_manifest"),
        ] {
            host.calls.borrow_mut().clear();
            let payload = json!({"settings": settings, "request": pod});
            let response = crate::respond_with(&serde_json::to_vec(&payload).unwrap(), &host);
            assert!(response.accepted);
            assert_eq!(host.operations(), [lookup, "kubernetes/list_resources_all"]);
            assert!(response.warnings.unwrap()[0].contains("registry.corp.example/a:1"));
        }
    }
}
