//! Context-aware facts: what the policy asks Kubewarden's host for, and when.
//!
//! Contract with the host (waPC `host_call(binding, namespace, operation, payload)`,
//! binding always `"kubewarden"`). The core decides what is needed
//! (`os_placement_core::facts::needs`); nothing is asked for DELETE/CONNECT,
//! kinds without a pod template, or when the needs are empty.
//!
//! | namespace / operation | when | payload | answer read |
//! |---|---|---|---|
//! | `oci` / `v1/oci_manifest` | per distinct image reference of the pod (containers, init, ephemeral), `imageLookup: undecided` (default): only references the name rules leave undecided, and only while the pod's OS or (with `pinWindowsBuild`) its Windows build is still open; `always`: every image; `off`: never | the reference as a JSON string, e.g. `"registry.corp/app/billing:4.2"` | an image index (`manifests[].platform.{os, os.version, architecture}`; OCI or Docker manifest list) or an image manifest (has `config`, no `manifests`) |
//! | `oci` / `v1/oci_manifest_config` | only after `v1/oci_manifest` answered an image manifest | the same JSON string | `{"manifest", "digest", "config"}`: `config.os`, `config["os.version"]`, `config.architecture` |
//! | `kubernetes` / `get_resource` | once per `spec.runtimeClassName` not declared in settings `runtimeClasses` | `{"api_version":"node.k8s.io/v1","kind":"RuntimeClass","name":N,"namespace":null,"disable_cache":false,"field_masks":null}` | the RuntimeClass: `handler`, `scheduling.nodeSelector`, `scheduling.tolerations`. An error whose text contains `not found` (any case) or `NotFound` means the class does not exist |
//! | `kubernetes` / `list_resources_all` | at most once per request, when `nodeInventory` is `warn`/`reject` or `windowsTaint: fromNodes` | `{"api_version":"v1","kind":"Node","label_selector":null,"field_selector":null,"field_masks":["metadata.name","metadata.labels","spec.taints","status.nodeInfo.operatingSystem","status.nodeInfo.architecture","status.nodeInfo.kernelVersion"]}` | a List `{"items":[Node...]}`: OS from `kubernetes.io/os` label else `nodeInfo.operatingSystem`; build from `node.kubernetes.io/windows-build` label else the first three parts of `nodeInfo.kernelVersion` |
//!
//! A host call that fails, or an answer that does not parse, never traps: it
//! becomes a lookup failure in the facts, and the core falls back to the
//! rules of the references and settings with a warning naming the image (or
//! class, or Nodes) and the error (`lookupFailure: reject` makes an image
//! lookup failure a rejection).

use std::collections::BTreeMap;

use os_placement_core::facts::{
    ClusterRuntimeClass, ImageFacts, NodeFact, NodeFacts, NodeTaint, Platform, RuntimeClassFacts,
    SchedulingFacts,
};
use os_placement_core::{Facts, Needs};
use serde_json::{json, Value};

/// Answers host calls; the module uses waPC, tests a fake.
pub trait Host {
    /// `host_call("kubewarden", namespace, operation, payload)`.
    fn call(&self, namespace: &str, operation: &str, payload: &[u8]) -> Result<Vec<u8>, String>;
}

/// The Kubewarden host through waPC.
pub struct Wapc;

impl Host for Wapc {
    #[cfg(target_arch = "wasm32")]
    fn call(&self, namespace: &str, operation: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        wapc_guest::host_call("kubewarden", namespace, operation, payload)
            .map_err(|e| e.to_string())
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn call(&self, namespace: &str, operation: &str, _payload: &[u8]) -> Result<Vec<u8>, String> {
        Err(format!(
            "{namespace}/{operation}: host capabilities exist only inside the policy server"
        ))
    }
}

/// Asks the host for everything `needs` lists: one call per image (two for
/// a single image manifest), one per RuntimeClass, one Node list.
pub fn gather(needs: &Needs, host: &dyn Host) -> Facts {
    let images = needs
        .images
        .iter()
        .map(|image| (image.clone(), image_facts(image, host)))
        .collect();
    let runtime_classes = needs
        .runtime_classes
        .iter()
        .map(|name| (name.clone(), runtime_class(name, host)))
        .collect();
    let nodes = needs.nodes.then(|| nodes(host));
    Facts {
        images,
        runtime_classes,
        nodes,
    }
}

fn call_json(
    host: &dyn Host,
    namespace: &str,
    operation: &str,
    payload: &Value,
) -> Result<Value, String> {
    let body = serde_json::to_vec(payload).map_err(|e| e.to_string())?;
    let answer = host.call(namespace, operation, &body)?;
    serde_json::from_slice(&answer)
        .map_err(|e| format!("{namespace}/{operation}: answer is not JSON: {e}"))
}

fn image_facts(image: &str, host: &dyn Host) -> ImageFacts {
    match image_platforms(image, host) {
        Ok(platforms) => ImageFacts::Platforms(platforms),
        Err(e) => ImageFacts::LookupFailed(e),
    }
}

fn image_platforms(image: &str, host: &dyn Host) -> Result<Vec<Platform>, String> {
    let manifest = call_json(host, "oci", "v1/oci_manifest", &json!(image))?;
    if let Some(entries) = manifest.get("manifests").and_then(Value::as_array) {
        // An OCI image index or a Docker manifest list.
        return Ok(entries
            .iter()
            .filter_map(|e| platform(e.get("platform")?))
            .collect());
    }
    if manifest.get("config").is_none() {
        return Err("the registry answered neither an image index nor an image manifest".into());
    }
    let answer = call_json(host, "oci", "v1/oci_manifest_config", &json!(image))?;
    let config = answer
        .get("config")
        .ok_or("the manifest config answer has no config")?;
    platform(config)
        .map(|p| vec![p])
        .ok_or_else(|| "the image config names no os".to_string())
}

/// `{os, os.version, architecture}` of an index entry's platform or a config.
fn platform(value: &Value) -> Option<Platform> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Some(Platform {
        os: text("os")?,
        os_version: text("os.version"),
        architecture: text("architecture"),
    })
}

fn runtime_class(name: &str, host: &dyn Host) -> RuntimeClassFacts {
    let request = json!({
        "api_version": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "name": name,
        "namespace": null,
        "disable_cache": false,
        "field_masks": null,
    });
    match call_json(host, "kubernetes", "get_resource", &request) {
        Ok(rc) => RuntimeClassFacts::Found(ClusterRuntimeClass {
            handler: rc
                .get("handler")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            scheduling: rc
                .get("scheduling")
                .filter(|s| !s.is_null())
                .and_then(|s| serde_json::from_value::<SchedulingFacts>(s.clone()).ok())
                .unwrap_or_default(),
            isolation: None,
        }),
        Err(e) if is_not_found(&e) => RuntimeClassFacts::Missing,
        Err(e) => RuntimeClassFacts::LookupFailed(e),
    }
}

/// The Kubernetes API's 404, as the host passes it on.
fn is_not_found(error: &str) -> bool {
    error.to_ascii_lowercase().contains("not found") || error.contains("NotFound")
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

fn nodes(host: &dyn Host) -> NodeFacts {
    let request = json!({
        "api_version": "v1",
        "kind": "Node",
        "label_selector": null,
        "field_selector": null,
        "field_masks": NODE_FIELD_MASKS,
    });
    match call_json(host, "kubernetes", "list_resources_all", &request) {
        Ok(list) => match list.get("items").and_then(Value::as_array) {
            Some(items) => NodeFacts::Listed(items.iter().map(node).collect()),
            None => NodeFacts::LookupFailed("the Node list has no items".into()),
        },
        Err(e) => NodeFacts::LookupFailed(e),
    }
}

fn node(item: &Value) -> NodeFact {
    let text = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let labels: BTreeMap<String, String> = item
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let os = labels
        .get("kubernetes.io/os")
        .cloned()
        .or_else(|| text("/status/nodeInfo/operatingSystem"));
    // A Windows kernel version is the build with a revision: 10.0.20348.2700.
    let windows_build = labels
        .get("node.kubernetes.io/windows-build")
        .cloned()
        .or_else(|| {
            let kernel = text("/status/nodeInfo/kernelVersion")?;
            let parts: Vec<&str> = kernel.split('.').take(3).collect();
            (os.as_deref() == Some("windows") && parts.len() == 3).then(|| parts.join("."))
        });
    let taints = item
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter_map(|t| serde_json::from_value::<NodeTaint>(t.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    NodeFact {
        name: text("/metadata/name").unwrap_or_default(),
        architecture: labels
            .get("kubernetes.io/arch")
            .cloned()
            .or_else(|| text("/status/nodeInfo/architecture")),
        os,
        windows_build,
        labels,
        taints,
    }
}
