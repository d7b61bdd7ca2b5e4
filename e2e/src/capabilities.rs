//! Kubewarden host capabilities for the e2e host, answered as policy-server
//! answers them (kubewarden/policy-evaluator `src/runtimes/callback.rs` and
//! `src/callback_handler/{oci,kubernetes}.rs`), with the request shapes of the
//! policy SDK (`kubewarden-policy-sdk` `host_capabilities::{oci,kubernetes}`):
//!
//! - `kubewarden`/`oci`/`v1/oci_manifest` and `v1/oci_manifest_config`: from a
//!   real registry, through the same OCI client policy-server uses;
//! - `kubewarden`/`kubernetes`/`get_resource`, `list_resources_all` and
//!   `list_resources_by_namespace`: from fixture files of a cluster
//!   (`e2e/clusters/<name>/*.yaml`) and the objects a test adds (the image
//!   facts ConfigMaps, say).
//!
//! Every other call, and every failure, is an error answer, never a panic.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, HostCallError};
use crate::host::HostCalls;
use crate::selector;

/// One host call the guest made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCall {
    /// `oci`, `kubernetes`, ...
    pub namespace: String,
    /// `v1/oci_manifest`, `get_resource`, ...
    pub operation: String,
    /// The payload, as text.
    pub payload: String,
}

/// Host capabilities from a registry and a cluster fixture; records every call.
#[derive(Debug, Default)]
pub struct ContextHost {
    registries: Option<Registries>,
    cluster: Option<Cluster>,
    /// `hostCapabilities` of the policy: `None` grants every capability.
    granted: Option<BTreeSet<String>>,
    log: Mutex<Vec<HostCall>>,
}

impl ContextHost {
    /// No registry and no cluster: every capability answers an error.
    pub fn new() -> Self {
        Self::default()
    }

    /// OCI calls answered from `registries`.
    #[must_use]
    pub fn with_registries(mut self, registries: Registries) -> Self {
        self.registries = Some(registries);
        self
    }

    /// Kubernetes calls answered from `cluster`.
    #[must_use]
    pub fn with_cluster(mut self, cluster: Cluster) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// Only these capabilities (`namespace/operation`, `namespace/*` or `*`)
    /// may be called, as a policy's `hostCapabilities` limits it in
    /// policy-server (deny by default there; here only once this is set).
    #[must_use]
    pub fn granting(mut self, capabilities: &[&str]) -> Self {
        self.granted = Some(capabilities.iter().map(|c| (*c).to_owned()).collect());
        self
    }

    fn grants(&self, namespace: &str, operation: &str) -> bool {
        self.granted.as_ref().is_none_or(|granted| {
            granted.contains("*")
                || granted.contains(&format!("{namespace}/*"))
                || granted.contains(&format!("{namespace}/{operation}"))
        })
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<HostCall> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The calls made so far, forgetting them.
    pub fn take_calls(&self) -> Vec<HostCall> {
        self.log
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    fn record(&self, namespace: &str, operation: &str, payload: &[u8]) {
        if let Ok(mut log) = self.log.lock() {
            log.push(HostCall {
                namespace: namespace.to_owned(),
                operation: operation.to_owned(),
                payload: String::from_utf8_lossy(payload).into_owned(),
            });
        }
    }

    fn oci(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostCallError> {
        if !matches!(operation, "v1/oci_manifest" | "v1/oci_manifest_config") {
            return Err(format!("unknown operation: {operation}").into());
        }
        let image: String =
            serde_json::from_slice(payload).map_err(|e| HostCallError(e.to_string()))?;
        let registries = self
            .registries
            .as_ref()
            .ok_or_else(|| failure(&"no registry is reachable from this host"))?;
        let answer = match operation {
            "v1/oci_manifest" => registries.manifest(&image),
            _ => registries.manifest_and_config(&image),
        };
        answer
            .and_then(|value| Ok(serde_json::to_vec(&value)?))
            .map_err(|e| failure(&e))
    }

    fn kubernetes(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, HostCallError> {
        let cluster = self.cluster.as_ref();
        let answer = match operation {
            "get_resource" => {
                let request: GetResource =
                    serde_json::from_slice(payload).map_err(|e| HostCallError(e.to_string()))?;
                let cluster = connected(cluster, &request.api_version, &request.kind)?;
                cluster.get(&request)
            }
            "list_resources_all" => {
                let request: ListAll =
                    serde_json::from_slice(payload).map_err(|e| HostCallError(e.to_string()))?;
                let cluster = connected(cluster, &request.api_version, &request.kind)?;
                cluster.list(&request, None)
            }
            "list_resources_by_namespace" => {
                let request: ListByNamespace =
                    serde_json::from_slice(payload).map_err(|e| HostCallError(e.to_string()))?;
                let cluster = connected(cluster, &request.list.api_version, &request.list.kind)?;
                cluster.list(&request.list, Some(&request.namespace))
            }
            _ => return Err(format!("unknown operation: {operation}").into()),
        };
        answer
            .and_then(|value| Ok(serde_json::to_vec(&value)?))
            .map_err(|e| failure(&format_args!("{e:#}")))
    }
}

/// The cluster, when there is one and it lets the policy read `api_version`/`kind`.
fn connected<'a>(
    cluster: Option<&'a Cluster>,
    api_version: &str,
    kind: &str,
) -> Result<&'a Cluster, HostCallError> {
    let cluster = cluster.ok_or_else(|| failure(&"kube::Client was not initialized properly"))?;
    if cluster.allows(api_version, kind) {
        Ok(cluster)
    } else {
        // policy-server's words when `contextAwareResources` does not list the resource.
        Err(HostCallError(format!(
            "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
        )))
    }
}

/// A failed callback, in policy-server's words.
fn failure(error: &dyn std::fmt::Display) -> HostCallError {
    HostCallError(format!("Callback evaluation failure: {error}"))
}

impl HostCalls for ContextHost {
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, HostCallError> {
        self.record(namespace, operation, payload);
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}").into());
        }
        if namespace != "tracing" && !self.grants(namespace, operation) {
            return Err(format!(
                "Policy has not been granted access to the '{namespace}/{operation}' host capability. The violation has been reported."
            ).into());
        }
        match namespace {
            "oci" => self.oci(operation, payload),
            "kubernetes" => self.kubernetes(operation, payload),
            _ => Err(format!("unknown namespace: {namespace}").into()),
        }
    }
}

/// OCI registries reached through oci-client, plain HTTP for the listed
/// `host:port`s (policy-server's `insecure_sources`), HTTPS otherwise.
pub struct Registries {
    client: Client,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Registries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registries").finish_non_exhaustive()
    }
}

impl Registries {
    /// A client for plain HTTP to `insecure` (`127.0.0.1:5000`, ...).
    pub fn new(insecure: &[String]) -> Result<Self, Error> {
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure.to_vec()),
            connect_timeout: Some(Duration::from_secs(2)),
            read_timeout: Some(Duration::from_secs(5)),
            ..ClientConfig::default()
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::io("cannot start the async runtime"))?;
        Ok(Self { client, runtime })
    }

    fn reference(image: &str) -> Result<Reference, Error> {
        image.parse().map_err(|e| Error::Registry {
            action: "not an image reference:".to_owned(),
            reference: format!("{image:?}"),
            message: format!("{e}"),
        })
    }

    fn failed(
        action: &str,
        reference: &Reference,
    ) -> impl FnOnce(oci_client::errors::OciDistributionError) -> Error {
        let (action, reference) = (action.to_owned(), reference.whole());
        move |e| Error::Registry {
            action,
            reference,
            message: format!("{e:#}"),
        }
    }

    /// The manifest `image` names: an index or an image manifest, as the
    /// registry serves it (`v1/oci_manifest`).
    pub fn manifest(&self, image: &str) -> Result<Value, Error> {
        let reference = Self::reference(image)?;
        let (manifest, _digest) = self
            .runtime
            .block_on(
                self.client
                    .pull_manifest(&reference, &RegistryAuth::Anonymous),
            )
            .map_err(Self::failed("cannot fetch the manifest of", &reference))?;
        Ok(serde_json::to_value(manifest)?)
    }

    /// The image manifest and config of `image` (`v1/oci_manifest_config`);
    /// for an index, the entry of this host's platform, as oci-client resolves it.
    pub fn manifest_and_config(&self, image: &str) -> Result<Value, Error> {
        let reference = Self::reference(image)?;
        let (manifest, digest, config) = self
            .runtime
            .block_on(
                self.client
                    .pull_manifest_and_config(&reference, &RegistryAuth::Anonymous),
            )
            .map_err(Self::failed(
                "cannot fetch the manifest and config of",
                &reference,
            ))?;
        let config: Value = serde_json::from_str(&config)?;
        Ok(json!({"manifest": manifest, "digest": digest, "config": config}))
    }
}

/// `get_resource` payload (SDK `GetResourceRequest`).
#[derive(Debug, Deserialize)]
struct GetResource {
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    #[allow(dead_code)] // required by the SDK's shape; a fixture has no cache
    disable_cache: bool,
    field_masks: Option<BTreeSet<String>>,
}

/// `list_resources_all` payload (SDK `ListAllResourcesRequest`).
#[derive(Debug, Deserialize)]
struct ListAll {
    api_version: String,
    kind: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    field_masks: Option<BTreeSet<String>>,
}

/// `list_resources_by_namespace` payload (SDK `ListResourcesByNamespaceRequest`).
#[derive(Debug, Deserialize)]
struct ListByNamespace {
    namespace: String,
    #[serde(flatten)]
    list: ListAll,
}

/// Whether `object` matches a label selector (set-based included).
pub fn label_selector_matches(selector: &str, object: &Value) -> Result<bool> {
    Ok(crate::selector::labels_match(
        &crate::selector::parse(Some(selector))?,
        object,
    ))
}

/// A cluster as fixture files: Kubernetes objects (YAML documents or `List`s).
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    objects: Vec<Value>,
    /// The objects of each `(apiVersion, kind)`, by their place in
    /// `objects`: a list reads its kind only, as a reflector holds it.
    by_kind: std::collections::HashMap<(String, String), Vec<usize>>,
    /// `contextAwareResources`: `None` grants everything.
    allowed: Option<BTreeSet<(String, String)>>,
}

/// The Kubernetes objects of a YAML or JSON text, read by the door (lists
/// expanded, null documents dropped).
pub fn objects_of(text: &str) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for document in os_placement_door::read_stream(text) {
        let document = document.map_err(|broken| anyhow!("{}", broken.error))?;
        for found in os_placement_door::objects(&document) {
            match found {
                os_placement_door::Found::Object(subject) => objects.push(subject.object),
                os_placement_door::Found::NotAnObject(problem) => {
                    bail!("line {}: {}", problem.at.line, problem.message)
                }
            }
        }
    }
    Ok(objects)
}

/// Kinds every cluster serves, even with no object of them.
const BUILT_IN: [(&str, &str); 3] = [
    ("v1", "Node"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("v1", "ConfigMap"),
];

impl Cluster {
    /// Every `*.yaml` file in `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read cluster fixture {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        let mut objects = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file)?;
            objects.extend(
                objects_of(&text)
                    .with_context(|| format!("{}: not a cluster fixture", file.display()))?,
            );
        }
        Ok(Self::from_objects(objects))
    }

    /// A cluster holding these objects.
    pub fn from_objects(objects: Vec<Value>) -> Self {
        Self::default().with_objects(objects)
    }

    /// The cluster with `objects` added (image facts ConfigMaps, say).
    #[must_use]
    pub fn with_objects(mut self, objects: impl IntoIterator<Item = Value>) -> Self {
        for object in objects {
            let key = (
                text(&object, "apiVersion").unwrap_or_default().to_owned(),
                text(&object, "kind").unwrap_or_default().to_owned(),
            );
            self.by_kind
                .entry(key)
                .or_default()
                .push(self.objects.len());
            self.objects.push(object);
        }
        self
    }

    /// Only these `(apiVersion, kind)` may be read, as a policy's
    /// `contextAwareResources` limits it in policy-server.
    #[must_use]
    pub fn allowing(mut self, resources: &[(&str, &str)]) -> Self {
        self.allowed = Some(
            resources
                .iter()
                .map(|(a, k)| ((*a).to_owned(), (*k).to_owned()))
                .collect(),
        );
        self
    }

    /// The objects of the fixture.
    pub fn objects(&self) -> &[Value] {
        &self.objects
    }

    fn allows(&self, api_version: &str, kind: &str) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|allowed| allowed.contains(&(api_version.to_owned(), kind.to_owned())))
    }

    fn of_kind<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> Result<impl Iterator<Item = &'a Value>> {
        let key = (api_version.to_owned(), kind.to_owned());
        let found = self.by_kind.get(&key);
        if found.is_none() && !BUILT_IN.contains(&(api_version, kind)) {
            return Err(anyhow!("Cannot find resource {api_version}/{kind}"));
        }
        Ok(found
            .into_iter()
            .flatten()
            .filter_map(move |at| self.objects.get(*at)))
    }

    fn get(&self, request: &GetResource) -> Result<Value> {
        let (api_version, kind) = (&request.api_version, &request.kind);
        let found = self.of_kind(api_version, kind)?.find(|o| {
            text(o, "metadata.name") == Some(request.name.as_str())
                && text(o, "metadata.namespace") == request.namespace.as_deref()
        });
        let object = found.ok_or_else(|| {
            anyhow!(
                "Cannot find {api_version}/{kind} named '{}' inside of namespace '{:?}'",
                request.name,
                request.namespace
            )
        })?;
        Ok(masked(object, request.field_masks.as_ref()))
    }

    fn list(&self, request: &ListAll, namespace: Option<&str>) -> Result<Value> {
        let labels = selector::parse(request.label_selector.as_deref())?;
        let fields = selector::parse(request.field_selector.as_deref())?;
        let items: Vec<Value> = self
            .of_kind(&request.api_version, &request.kind)?
            .filter(|o| namespace.is_none_or(|ns| text(o, "metadata.namespace") == Some(ns)))
            .filter(|o| selector::labels_match(&labels, o) && selector::fields_match(&fields, o))
            .map(|o| masked(o, request.field_masks.as_ref()))
            .collect();
        Ok(json!({
            "apiVersion": request.api_version,
            "kind": format!("{}List", request.kind),
            "metadata": {},
            "items": items,
        }))
    }
}

/// The string at a dotted path (`metadata.name`).
fn text<'a>(object: &'a Value, path: &str) -> Option<&'a str> {
    path.split('.')
        .try_fold(object, |v, key| v.get(key))
        .and_then(Value::as_str)
}

/// `object` reduced to the fields of `masks` (dot paths; lists are walked
/// through), or whole when there are none, as the SDK documents `field_masks`.
fn masked(object: &Value, masks: Option<&BTreeSet<String>>) -> Value {
    match masks.filter(|m| !m.is_empty()) {
        None => object.clone(),
        Some(masks) => {
            let paths: Vec<Vec<&str>> = masks.iter().map(|m| m.split('.').collect()).collect();
            let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
            prune(object, &paths).unwrap_or(Value::Object(Map::new()))
        }
    }
}

fn prune(value: &Value, paths: &[&[&str]]) -> Option<Value> {
    if paths.iter().any(|p| p.is_empty()) {
        return Some(value.clone());
    }
    match value {
        Value::Array(items) => Some(Value::Array(
            items.iter().filter_map(|i| prune(i, paths)).collect(),
        )),
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .iter()
                .filter_map(|(key, child)| {
                    let rest: Vec<&[&str]> = paths
                        .iter()
                        .filter_map(|p| p.split_first())
                        .filter(|(first, _)| *first == key)
                        .map(|(_, rest)| rest)
                        .collect();
                    if rest.is_empty() {
                        return None;
                    }
                    Some((key.clone(), prune(child, &rest)?))
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, os: &str, build: Option<&str>) -> Value {
        let mut labels = json!({"kubernetes.io/os": os, "kubernetes.io/hostname": name});
        if let Some(build) = build {
            labels["node.kubernetes.io/windows-build"] = json!(build);
        }
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": labels, "uid": "u"},
               "spec": {"taints": [{"key": "os", "value": os, "effect": "NoSchedule"}]},
               "status": {"nodeInfo": {"operatingSystem": os, "kernelVersion": "k"}}})
    }

    fn cluster() -> Cluster {
        Cluster::from_objects(vec![
            node("l1", "linux", None),
            node("w1", "windows", Some("10.0.17763")),
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                   "metadata": {"name": "win"}, "handler": "runhcs-wcow-process"}),
        ])
    }

    fn call(
        host: &ContextHost,
        ns: &str,
        op: &str,
        payload: Value,
    ) -> Result<Value, HostCallError> {
        host.call("kubewarden", ns, op, payload.to_string().as_bytes())
            .map(|raw| serde_json::from_slice(&raw).unwrap())
    }

    #[test]
    fn list_applies_masks_and_selectors() {
        let host = ContextHost::new().with_cluster(cluster());
        let list = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({
            "api_version": "v1", "kind": "Node", "label_selector": "kubernetes.io/os=windows",
            "field_selector": null,
            "field_masks": ["metadata.name", "metadata.labels", "spec.taints.key"]}),
        )
        .unwrap();
        assert_eq!(list["kind"], "NodeList");
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        let item = &list["items"][0];
        assert_eq!(item["metadata"]["name"], "w1");
        assert_eq!(
            item["metadata"]["labels"]["node.kubernetes.io/windows-build"],
            "10.0.17763"
        );
        assert!(item["metadata"].get("uid").is_none());
        assert!(item.get("status").is_none() && item.get("apiVersion").is_none());
        assert_eq!(item["spec"]["taints"], json!([{"key": "os"}]));
        // No masks: whole objects; `!=` and absent selectors.
        let list = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({
            "api_version": "v1", "kind": "Node",
            "label_selector": "kubernetes.io/os!=windows,!node.kubernetes.io/windows-build"}),
        )
        .unwrap();
        assert_eq!(list["items"], json!([node("l1", "linux", None)]));
        // Set-based selectors, as the API server reads them.
        let list = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({"api_version": "v1", "kind": "Node",
                "label_selector": "kubernetes.io/os in (windows,other)"}),
        )
        .unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        let err = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({
            "api_version": "v1", "kind": "Node", "label_selector": "a in b"}),
        )
        .unwrap_err();
        assert!(err.0.contains("a set is written (a,b)"), "{err}");
    }

    #[test]
    fn get_finds_by_name_and_says_when_missing() {
        let host = ContextHost::new().with_cluster(cluster());
        let request = |name: &str| {
            json!({"api_version": "node.k8s.io/v1", "kind": "RuntimeClass",
                                         "name": name, "namespace": null, "disable_cache": false})
        };
        let class = call(&host, "kubernetes", "get_resource", request("win")).unwrap();
        assert_eq!(class["handler"], "runhcs-wcow-process");
        let err = call(&host, "kubernetes", "get_resource", request("gpu")).unwrap_err();
        assert_eq!(err.0, "Callback evaluation failure: Cannot find node.k8s.io/v1/RuntimeClass named 'gpu' inside of namespace 'None'");
        let err = call(
            &host,
            "kubernetes",
            "get_resource",
            json!({"api_version": "v1",
            "kind": "Secret", "name": "s", "namespace": "default", "disable_cache": false}),
        )
        .unwrap_err();
        assert!(err.0.contains("Cannot find resource v1/Secret"), "{err}");
        // The SDK always sends disable_cache: a payload without it is refused.
        let err = call(
            &host,
            "kubernetes",
            "get_resource",
            json!({"api_version": "v1",
            "kind": "Node", "name": "l1"}),
        )
        .unwrap_err();
        assert!(err.0.contains("disable_cache"), "{err}");
        assert_eq!(host.calls().len(), 4);
        assert_eq!(host.take_calls()[0].operation, "get_resource");
        assert!(host.calls().is_empty());
    }

    #[test]
    fn access_outside_context_aware_resources_is_refused() {
        let host = ContextHost::new().with_cluster(cluster().allowing(&[("v1", "Node")]));
        let err = call(
            &host,
            "kubernetes",
            "get_resource",
            json!({"api_version": "node.k8s.io/v1",
            "kind": "RuntimeClass", "name": "win", "disable_cache": true}),
        )
        .unwrap_err();
        assert!(
            err.0
                .contains("not been granted access to Kubernetes node.k8s.io/v1/RuntimeClass"),
            "{err}"
        );
        assert!(call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({"api_version": "v1", "kind": "Node"})
        )
        .is_ok());
    }

    #[test]
    fn capabilities_outside_host_capabilities_are_refused() {
        let host = ContextHost::new()
            .with_cluster(cluster())
            .granting(&["kubernetes/get_resource", "oci/*"]);
        let err = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({"api_version": "v1", "kind": "Node"}),
        )
        .unwrap_err();
        assert_eq!(err.0, "Policy has not been granted access to the 'kubernetes/list_resources_all' host capability. The violation has been reported.");
        assert!(call(
            &host,
            "kubernetes",
            "get_resource",
            json!({"api_version": "node.k8s.io/v1",
            "kind": "RuntimeClass", "name": "win", "disable_cache": false})
        )
        .is_ok());
        // Granted, but no registry: the call itself fails, not the grant.
        let err = call(&host, "oci", "v1/oci_manifest", json!("a/b:1")).unwrap_err();
        assert!(err.0.contains("no registry"), "{err}");
        let all = ContextHost::new().with_cluster(cluster()).granting(&["*"]);
        assert!(call(
            &all,
            "kubernetes",
            "list_resources_all",
            json!({"api_version": "v1", "kind": "Node"})
        )
        .is_ok());
    }

    #[test]
    fn unknown_calls_and_missing_parts_are_errors() {
        let host = ContextHost::new();
        let cases = [
            ("other", "oci", "v1/oci_manifest", "unknown binding: other"),
            ("kubewarden", "dns", "x", "unknown namespace: dns"),
            (
                "kubewarden",
                "oci",
                "v1/verify",
                "unknown operation: v1/verify",
            ),
            (
                "kubewarden",
                "kubernetes",
                "can_i",
                "unknown operation: can_i",
            ),
            ("kubewarden", "kubernetes", "get_resource", "expected"),
        ];
        for (binding, ns, op, wanted) in cases {
            let err = host.call(binding, ns, op, b"\"x\"").unwrap_err();
            assert!(err.0.contains(wanted), "{binding}/{ns}/{op}: {err}");
        }
        let err = call(
            &host,
            "kubernetes",
            "list_resources_all",
            json!({"api_version": "v1", "kind": "Node"}),
        )
        .unwrap_err();
        assert!(err.0.contains("kube::Client was not initialized"), "{err}");
        let err = call(&host, "oci", "v1/oci_manifest", json!("corp/app:1")).unwrap_err();
        assert!(err.0.contains("no registry"), "{err}");
    }

    #[test]
    fn registry_down_is_an_error_naming_the_image() {
        let port = xtask::local::registry::free_port().unwrap();
        let registries = Registries::new(&[format!("127.0.0.1:{port}")]).unwrap();
        let host = ContextHost::new().with_registries(registries);
        let image = format!("127.0.0.1:{port}/corp/billing:4.2");
        let err = call(&host, "oci", "v1/oci_manifest", json!(image)).unwrap_err();
        assert!(
            err.0
                .starts_with("Callback evaluation failure: cannot fetch the manifest of"),
            "{err}"
        );
        assert!(err.0.contains(&image), "{err}");
        let err = call(&host, "oci", "v1/oci_manifest", json!("Not A Reference")).unwrap_err();
        assert!(err.0.contains("not an image reference"), "{err}");
    }
}
