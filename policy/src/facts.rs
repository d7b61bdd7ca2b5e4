//! Context-aware facts: what the policy asks Kubewarden's host for, and when.
//!
//! Contract with the host (waPC `host_call(binding, namespace, operation, payload)`,
//! binding always `"kubewarden"`). The core decides what is needed
//! (`os_placement_core::needs`); nothing is asked for DELETE/CONNECT,
//! kinds without a pod template, or when the needs are empty.
//!
//! | namespace / operation | when | payload | answer read |
//! |---|---|---|---|
//! | `kubernetes` / `list_resources_by_namespace` | once per request that needs published facts: the node inventory (`nodeInventory`, `windowsTaint: fromNodes`; under `auto`, not for a Pod its controller creates or whose own selectors fix its OS and build), a RuntimeClass the settings do not declare, or images with `imageFacts: cluster` (default; which images: `imageLookup`, below). A second call only when the images and node names it looks up fall in different shards | `{"api_version":"v1","kind":"ConfigMap","namespace":N,"label_selector":S,"field_selector":null,"field_masks":["metadata.name","metadata.labels","data.index"]}`; N is `imageFactsNamespace`; S is `os-placement.kubewarden.io/facts=cluster`, or `os-placement.kubewarden.io/facts in (cluster,shard-K)` for the shard K of the images and node names (`os_placement_core::published`) | the cluster ConfigMap (node classes, RuntimeClasses) and shard K's: a few kilobytes whatever the cluster's size. policy-server serves each selector from one reflector, at most 129 |
//! | `oci` / `v1/oci_manifest` | `imageFacts: registry`: per distinct image reference of the pod (containers, init, ephemeral), `imageLookup: undecided` (default): only references the name rules leave undecided, and only while the pod's OS or (with `pinWindowsBuild`) its Windows build is still open; `always`: every image; `off`: never | the reference as a JSON string, e.g. `"registry.corp/app/billing:4.2"` | an image index (`manifests[].platform.{os, os.version, architecture}`; OCI or Docker manifest list) or an image manifest (has `config`, no `manifests`) |
//! | `oci` / `v1/oci_manifest_config` | only after `v1/oci_manifest` answered an image manifest | the same JSON string | `{"manifest", "digest", "config"}`: `config.os`, `config["os.version"]`, `config.architecture` |
//! | `kubernetes` / `get_resource` | once per `spec.runtimeClassName` not declared in settings `runtimeClasses` and not in the published facts (none published, or created since) | `{"api_version":"node.k8s.io/v1","kind":"RuntimeClass","name":N,"namespace":null,"disable_cache":false,"field_masks":null}` | the RuntimeClass: `handler`, `scheduling.nodeSelector`, `scheduling.tolerations`. An error whose text contains `not found` (any case), `NotFound`, or policy-server's `Cannot find <apiVersion>/<Kind> named '<name>'` means the class does not exist |
//!
//! Without published facts (no syncer, or not synced yet) the answer holds
//! no cluster ConfigMap: images are not published yet, the node check is
//! skipped (`nodeInventory: auto` says nothing; `warn`, `reject` and
//! `fromNodes` warn, naming the syncer), and RuntimeClasses are read with
//! `get_resource`. The Node list is never read: its answer grows with the
//! cluster.
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
//! class, or node facts) and the error (`lookupFailure: reject` makes an
//! image lookup failure a rejection). A published facts list the host
//! refuses or fails is `Facts::unreadable`, said once for the request with
//! its fix: policy-server refuses a policy whose `contextAwareResources`
//! lacks `v1/ConfigMap` ("Policy has not been granted access to Kubernetes
//! v1/ConfigMap resources"), or which is not granted the host capability
//! ("... access to the 'kubernetes/list_resources_by_namespace' host
//! capability"; policy-evaluator `runtimes/callback.rs`, `host_callback`).
//! Only a `lookupFailed` record the syncer published is its failure.

use std::fmt;

use os_placement_core::host_answers::{self, AnswerProblem, ManifestAnswer};
use os_placement_core::published::{self, Found, Wanted};
use os_placement_core::SortedMap;
use os_placement_core::{Facts, ImageSource, Needs, Unreadable};
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

impl HostError {
    /// Whether policy-server refused the call before making it: a resource
    /// the policy's `contextAwareResources` does not list, or a host
    /// capability it is not granted. Asking again cannot help.
    pub fn refused(&self) -> bool {
        self.0.contains("has not been granted access to")
    }

    /// The error on one line, without the wrappers that say nothing: waPC's
    /// `Host error: ` and policy-server's `Callback evaluation failure: `.
    /// policy-server writes the error with anyhow's `{:?}` (the message,
    /// then `Caused by:` and numbered causes, maybe a backtrace): here the
    /// message and its causes joined by `: `, as anyhow's `{:#}` writes them.
    pub fn words(&self) -> String {
        let text = self.0.trim();
        let text = text.strip_prefix("Host error: ").unwrap_or(text);
        let text = text
            .strip_prefix("Callback evaluation failure: ")
            .unwrap_or(text);
        let mut parts: Vec<&str> = Vec::new();
        let mut causes = false;
        for line in text.lines().map(str::trim) {
            match line {
                "" => {}
                "Caused by:" => causes = true,
                _ if line.starts_with("Stack backtrace:") => break,
                _ if causes => parts.push(numbered(line)),
                _ => parts.push(line),
            }
        }
        parts.join(": ")
    }
}

/// A cause line of anyhow's `{:?}` without its number (`0: `).
fn numbered(line: &str) -> &str {
    match line.split_once(": ") {
        Some((number, rest)) if number.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => line,
    }
}

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
    /// A published facts list answer that cannot be read: why.
    Published(String),
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::Host(HostError(message)) => f.write_str(message),
            LookupError::NotJson { call, error } => {
                write!(f, "{call}: answer is not JSON: {error}")
            }
            LookupError::Answer(problem) => write!(f, "{problem}"),
            LookupError::Published(problem) => f.write_str(problem),
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

/// Asks the host for everything `needs` lists: the published facts in one
/// list (one per shard when the images and names span several), images
/// from their registries when `imageFacts: registry` says so, and a
/// RuntimeClass the published facts do not hold.
pub fn gather(needs: &Needs, host: &dyn Host) -> Facts {
    let published = wants_published(needs).then(|| read_published(needs, host));
    let images = if needs.images.is_empty() {
        SortedMap::new()
    } else {
        match (&needs.image_source, &published) {
            (ImageSource::Registry, _) => needs
                .images
                .iter()
                .map(|image| (image.clone(), image_facts(image, host)))
                .collect(),
            (ImageSource::Cluster { .. }, Some(Ok(found))) => found.image_facts(&needs.images),
            // Nothing is known of them: `unreadable` says why, once.
            (ImageSource::Cluster { .. }, Some(Err(_))) => SortedMap::new(),
            (ImageSource::Cluster { .. }, None) => each(&needs.images, ImageFacts::Unpublished),
        }
    };
    let found = published.as_ref().and_then(|p| p.as_ref().ok());
    let runtime_classes = needs
        .runtime_classes
        .iter()
        .map(|name| {
            let facts = found.and_then(|f| f.runtime_class(name));
            (
                name.clone(),
                facts.unwrap_or_else(|| runtime_class(name, host)),
            )
        })
        .collect();
    let nodes = needs.nodes.then(|| match &published {
        Some(Ok(found)) => found.node_facts(&needs.node_names, &not_published(needs)),
        Some(Err(e)) => NodeFacts::LookupFailed(format!(
            "the node facts of namespace {} cannot be read: {e}",
            needs.facts_namespace
        )),
        None => NodeFacts::LookupFailed(not_published(needs)),
    });
    let syncer = found.map(|found| found.syncer(now()));
    let unreadable = published
        .as_ref()
        .and_then(|p| p.as_ref().err())
        .map(unreadable);
    Facts {
        images,
        runtime_classes,
        nodes,
        syncer,
        unreadable,
    }
}

/// Why the host gave no published facts, read from policy-server's words.
fn unreadable(error: &LookupError) -> Unreadable {
    match error {
        LookupError::Host(host) if host.refused() => {
            if host.0.contains("host capability") {
                Unreadable::CapabilityNotGranted
            } else {
                Unreadable::ConfigMapsNotGranted
            }
        }
        LookupError::Host(host) => Unreadable::Failed(host.words()),
        other => Unreadable::Failed(other.to_string()),
    }
}

/// Seconds since the Unix epoch (the host's clock, through WASI), to age
/// the syncer's heartbeat; 0 when the clock cannot be read (the heartbeat
/// then counts as just renewed).
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn each(images: &[String], facts: ImageFacts) -> SortedMap<String, ImageFacts> {
    images
        .iter()
        .map(|image| (image.clone(), facts.clone()))
        .collect()
}

/// Why the node check has no facts to read.
fn not_published(needs: &Needs) -> String {
    format!(
        "no node facts are published in namespace {} yet",
        needs.facts_namespace
    )
}

/// Whether the request reads the published facts at all.
fn wants_published(needs: &Needs) -> bool {
    needs.nodes
        || !needs.runtime_classes.is_empty()
        || (!needs.images.is_empty() && matches!(needs.image_source, ImageSource::Cluster { .. }))
}

/// The shards the request's images and node names fall in, in order.
fn shards(needs: &Needs) -> Vec<u16> {
    let images = match needs.image_source {
        ImageSource::Cluster { .. } => needs.images.as_slice(),
        ImageSource::Registry => &[],
    };
    let mut shards: Vec<u16> = images
        .iter()
        .chain(&needs.node_names)
        .map(|text| published::shard_of(text))
        .collect();
    shards.sort_unstable();
    shards.dedup();
    shards
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

fn call(
    host: &dyn Host,
    namespace: &str,
    operation: &str,
    payload: &impl Serialize,
) -> Result<Vec<u8>, HostError> {
    // The requests always serialise: their fields are strings and options.
    let body = serde_json::to_vec(payload).unwrap_or_default();
    host.call(namespace, operation, &body)
}

fn call_json(
    host: &dyn Host,
    namespace: &str,
    operation: &str,
    payload: &impl Serialize,
) -> Result<Value, LookupError> {
    let answer = call(host, namespace, operation, payload)?;
    serde_json::from_slice(&answer).map_err(|error| LookupError::NotJson {
        call: format!("{namespace}/{operation}"),
        error,
    })
}

/// One list of published ConfigMaps.
fn list_config_maps(
    host: &dyn Host,
    namespace: &str,
    selector: &str,
) -> Result<Vec<u8>, HostError> {
    let request = ListRequest {
        api_version: "v1",
        kind: "ConfigMap",
        namespace: Some(namespace),
        label_selector: Some(selector),
        field_selector: None,
        field_masks: &published::FIELD_MASKS,
    };
    call(host, "kubernetes", "list_resources_by_namespace", &request)
}

/// The published facts the request wants: one list of the cluster
/// ConfigMap and, per shard it needs, that shard's ConfigMaps.
fn read_published(needs: &Needs, host: &dyn Host) -> Result<Found, LookupError> {
    let shards = shards(needs);
    let selectors: Vec<String> = if shards.is_empty() {
        vec![published::selector(None)]
    } else {
        shards
            .iter()
            .map(|s| published::selector(Some(*s)))
            .collect()
    };
    let mut answers = Vec::with_capacity(selectors.len());
    for (selector, shard) in selectors.iter().zip(shards.iter().map(Some).chain([None])) {
        match list_config_maps(host, &needs.facts_namespace, selector) {
            Ok(answer) => answers.push(answer),
            // A host that takes only equality selectors: the cluster and
            // the shard apart. A refused call is refused again.
            Err(e) if shard.is_some() && !e.refused() => {
                answers.push(list_config_maps(
                    host,
                    &needs.facts_namespace,
                    &published::selector(None),
                )?);
                let label = published::shard_label_value(shard.copied().unwrap_or_default());
                let alone = format!("{}={label}", published::FACTS_LABEL);
                answers.push(list_config_maps(host, &needs.facts_namespace, &alone)?);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let wanted = Wanted {
        images: match needs.image_source {
            ImageSource::Cluster { .. } => &needs.images,
            ImageSource::Registry => &[],
        },
        names: &needs.node_names,
        runtime_classes: &needs.runtime_classes,
        labels: needs.node_labels,
    };
    published::read_answers(&answers, &wanted).map_err(LookupError::Published)
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
        /// The error of a call the table does not answer.
        otherwise: Option<String>,
    }

    impl Fake {
        /// A host that fails every call with `error`.
        fn failing(error: &str) -> Self {
            Fake {
                otherwise: Some(error.into()),
                ..Fake::default()
            }
        }

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
                .ok_or_else(|| {
                    HostError(
                        self.otherwise
                            .clone()
                            .unwrap_or_else(|| format!("{op}: no answer")),
                    )
                })?;
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

    fn config_map_request(namespace: &str, selector: &str) -> Value {
        json!({"api_version": "v1", "kind": "ConfigMap", "namespace": namespace,
            "label_selector": selector, "field_selector": null,
            "field_masks": ["metadata.name", "metadata.labels", "data.index"]})
    }

    /// A host serving `maps` as policy-server serves a label selector: the
    /// ConfigMaps whose facts label the selector names, masked.
    fn serving(mut fake: Fake, namespace: &str, maps: &[Value]) -> Fake {
        let label = |cm: &Value| {
            cm["metadata"]["labels"][published::FACTS_LABEL]
                .as_str()
                .unwrap()
                .to_string()
        };
        let masked = |cm: &Value| {
            json!({"metadata": cm["metadata"].clone(),
                   "data": {"index": cm["data"]["index"].clone()}})
        };
        let mut selectors = vec![(published::selector(None), vec!["cluster".to_string()])];
        for shard in 0..published::SHARDS {
            let values = vec!["cluster".to_string(), format!("shard-{shard}")];
            selectors.push((published::selector(Some(shard)), values));
        }
        for (selector, values) in selectors {
            let items: Vec<Value> = maps
                .iter()
                .filter(|cm| values.contains(&label(cm)))
                .map(masked)
                .collect();
            fake = fake.answer(
                "kubernetes/list_resources_by_namespace",
                config_map_request(namespace, &selector),
                Ok(json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": items})),
            );
        }
        fake
    }

    fn windows(version: &str) -> ImageFacts {
        ImageFacts::Platforms(vec![Platform {
            os: "windows".into(),
            os_version: Some(version.into()),
            architecture: None,
        }])
    }

    fn cluster_needs(images: &[&str]) -> Needs {
        Needs {
            images: images.iter().map(|s| s.to_string()).collect(),
            image_source: ImageSource::Cluster {
                namespace: "facts".into(),
            },
            facts_namespace: "facts".into(),
            ..Needs::default()
        }
    }

    #[test]
    fn cluster_facts_are_one_config_map_list_for_the_images_of_one_shard() {
        let published = SortedMap::from([("corp/win:1".to_string(), windows("10.0.17763.1"))]);
        let maps = published::config_maps(
            &published::Sources {
                images: &published,
                ..published::Sources::default()
            },
            "facts",
        );
        let host = serving(Fake::default(), "facts", &maps);
        // Two images of one shard: one call.
        let new = (0..)
            .map(|i| format!("corp/new:{i}"))
            .find(|image| published::shard_of(image) == published::shard_of("corp/win:1"))
            .unwrap();
        let facts = gather(&cluster_needs(&["corp/win:1", &new]), &host);
        assert_eq!(facts.images.get("corp/win:1"), published.get("corp/win:1"));
        assert_eq!(facts.images.get(&new), Some(&ImageFacts::Unpublished));
        assert_eq!(
            host.operations(),
            ["kubernetes/list_resources_by_namespace"]
        );
        let selector = host.calls.borrow()[0].1["label_selector"].clone();
        assert_eq!(
            selector,
            published::selector(Some(published::shard_of("corp/win:1")))
        );
        // Negative: images of two shards take two calls, never a registry.
        host.calls.borrow_mut().clear();
        let other = (0..)
            .map(|i| format!("corp/other:{i}"))
            .find(|image| published::shard_of(image) != published::shard_of("corp/win:1"))
            .unwrap();
        gather(&cluster_needs(&["corp/win:1", &other]), &host);
        assert_eq!(host.operations().len(), 2);
        // The list fails: no image facts, and why, once.
        let down = Fake::default();
        let facts = gather(&cluster_needs(&["corp/win:1"]), &down);
        assert!(facts.images.is_empty(), "{facts:?}");
        assert_eq!(
            facts.unreadable,
            Some(Unreadable::Failed(
                "kubernetes/list_resources_by_namespace: no answer".into()
            ))
        );
        // No image wanted: no call.
        let idle = Fake::default();
        gather(&cluster_needs(&[]), &idle);
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

    fn node(name: &str, os: &str, build: Option<&str>) -> os_placement_core::Node {
        let mut labels = os_placement_core::StringMap::new();
        labels.insert("kubernetes.io/os".into(), os.into());
        labels.insert("kubernetes.io/hostname".into(), name.into());
        os_placement_core::Node {
            name: name.into(),
            os: Some(os.into()),
            windows_build: build.map(str::to_string),
            labels,
            ..os_placement_core::Node::default()
        }
    }

    #[test]
    fn nodes_are_the_published_classes_and_the_named_nodes_are_looked_up() {
        let nodes: Vec<_> = (0..50)
            .map(|i| node(&format!("linux-{i}"), "linux", None))
            .chain([node("win-1", "windows", Some("10.0.20348"))])
            .collect();
        let maps = published::config_maps(
            &published::Sources {
                nodes: Some(&nodes),
                ..published::Sources::default()
            },
            "facts",
        );
        let host = serving(Fake::default(), "facts", &maps);
        let needs = Needs {
            nodes: true,
            node_labels: true,
            node_names: vec!["win-1".into()],
            facts_namespace: "facts".into(),
            ..Needs::default()
        };
        let facts = gather(&needs, &host);
        let listed = facts.listed_nodes().unwrap();
        let counts: Vec<(&str, u32)> = listed.iter().map(|n| (n.name.as_str(), n.count)).collect();
        assert_eq!(counts, [("linux-0", 50), ("win-1", 1)]);
        assert_eq!(listed[1].windows_build.as_deref(), Some("10.0.20348"));
        // One call: the cluster and the shard of win-1.
        let calls = host.calls.borrow();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0].1["label_selector"],
            published::selector(Some(published::shard_of("win-1")))
        );
        drop(calls);
        // Without names to look up, the cluster ConfigMap alone.
        host.calls.borrow_mut().clear();
        let facts = gather(
            &Needs {
                node_names: Vec::new(),
                ..needs.clone()
            },
            &host,
        );
        assert_eq!(facts.listed_nodes().unwrap().len(), 2);
        assert_eq!(
            host.calls.borrow()[0].1["label_selector"],
            published::selector(None)
        );
    }

    /// A host that takes only equality selectors answers the set-based one
    /// with an error: the cluster and the shard are then listed apart.
    #[test]
    fn a_host_without_set_based_selectors_is_asked_twice() {
        let published = SortedMap::from([("corp/win:1".to_string(), windows("10.0.17763.1"))]);
        let maps = published::config_maps(
            &published::Sources {
                images: &published,
                ..published::Sources::default()
            },
            "facts",
        );
        let label = |cm: &Value| cm["metadata"]["labels"][published::FACTS_LABEL].clone();
        let mut host = Fake::default();
        for value in [
            "cluster".to_string(),
            published::shard_label_value(published::shard_of("corp/win:1")),
        ] {
            let items: Vec<Value> = maps
                .iter()
                .filter(|cm| label(cm) == value.as_str())
                .cloned()
                .collect();
            host = host.answer(
                "kubernetes/list_resources_by_namespace",
                config_map_request("facts", &format!("{}={value}", published::FACTS_LABEL)),
                Ok(json!({"items": items})),
            );
        }
        let facts = gather(&cluster_needs(&["corp/win:1"]), &host);
        assert_eq!(facts.images.get("corp/win:1"), published.get("corp/win:1"));
        assert_eq!(host.operations().len(), 3);
        // Negative: a host that answers nothing gives no facts, and says why.
        let facts = gather(&cluster_needs(&["corp/win:1"]), &Fake::default());
        assert!(facts.images.is_empty(), "{facts:?}");
        assert!(matches!(facts.unreadable, Some(Unreadable::Failed(_))));
    }

    /// Without the syncer the answer holds no cluster ConfigMap: the node
    /// check has no facts, and says so, and a RuntimeClass is read from the
    /// cluster; the Node list is never read.
    #[test]
    fn without_published_facts_the_node_list_is_not_read() {
        let host = serving(Fake::default(), "facts", &[]);
        let rc = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runhcs-wcow-process"});
        let host = host.answer(
            "kubernetes/get_resource",
            json!({"api_version": "node.k8s.io/v1", "kind": "RuntimeClass", "name": "win",
                   "namespace": null, "disable_cache": false, "field_masks": null}),
            Ok(rc),
        );
        let needs = Needs {
            nodes: true,
            runtime_classes: vec!["win".into()],
            facts_namespace: "facts".into(),
            ..Needs::default()
        };
        let facts = gather(&needs, &host);
        assert!(
            matches!(&facts.nodes, Some(NodeFacts::LookupFailed(e)) if e.contains("no node facts are published in namespace facts")),
            "{facts:?}"
        );
        assert!(matches!(
            facts.runtime_classes.get("win"),
            Some(RuntimeClassFacts::Found(_))
        ));
        assert_eq!(
            host.operations(),
            [
                "kubernetes/list_resources_by_namespace",
                "kubernetes/get_resource"
            ]
        );
        // Negative: published RuntimeClasses answer without a second call.
        let class: os_placement_core::ClusterRuntimeClass =
            serde_json::from_value(json!({"handler": "runhcs-wcow-process"})).unwrap();
        let classes = SortedMap::from([("win".to_string(), class)]);
        let maps = published::config_maps(
            &published::Sources {
                runtime_classes: Some(&classes),
                ..published::Sources::default()
            },
            "facts",
        );
        let host = serving(Fake::default(), "facts", &maps);
        let facts = gather(&needs, &host);
        assert!(matches!(
            facts.runtime_classes.get("win"),
            Some(RuntimeClassFacts::Found(_))
        ));
        assert_eq!(
            host.operations(),
            ["kubernetes/list_resources_by_namespace"]
        );
    }

    #[test]
    fn no_host_call_when_nothing_is_needed() {
        let host = Fake::default();
        let payload = json!({"settings": {"imageLookup": "off"}, "request": {
            "operation": "CREATE", "kind": {"kind": "Pod"},
            "object": {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": "registry.corp.example/a:1"}]}}}});
        let response = crate::respond_with(&serde_json::to_vec(&payload).unwrap(), &host);
        assert!(response.accepted);
        // Only the node facts of nodeInventory auto: no image lookup.
        assert_eq!(
            host.operations(),
            ["kubernetes/list_resources_by_namespace"]
        );
        let off = json!({"settings": {"imageLookup": "off", "nodeInventory": "off"},
            "request": payload["request"]});
        crate::respond_with(&serde_json::to_vec(&off).unwrap(), &host);
        assert_eq!(
            host.operations(),
            ["kubernetes/list_resources_by_namespace"]
        );
        // Negative: with the default undecided, the one image is asked for
        // once: with the node facts (the default; this host fails the call,
        // so the cluster alone is tried before giving up), or from its registry.
        let pod = json!({"operation": "CREATE", "kind": {"kind": "Pod"},
            "object": {"kind": "Pod", "spec": {"containers": [
                {"name": "c", "image": "registry.corp.example/a:1"},
                {"name": "d", "image": "registry.corp.example/a:1"}]}}});
        for (settings, lookups) in [
            (
                json!({}),
                &[
                    "kubernetes/list_resources_by_namespace",
                    "kubernetes/list_resources_by_namespace",
                ][..],
            ),
            (
                json!({"imageFacts": "registry"}),
                &[
                    "kubernetes/list_resources_by_namespace",
                    "oci/v1/oci_manifest",
                ][..],
            ),
        ] {
            host.calls.borrow_mut().clear();
            let payload = json!({"settings": settings, "request": pod});
            let response = crate::respond_with(&serde_json::to_vec(&payload).unwrap(), &host);
            assert!(response.accepted);
            assert_eq!(host.operations(), lookups);
            assert!(response.warnings.unwrap()[0].contains("registry.corp.example/a:1"));
        }
    }

    /// `nodeInventory: auto` on a Pod its controller creates: the node
    /// facts could only add a warning the controller would get, so no call;
    /// a Pod someone creates (which the policy places: its image says
    /// Windows), the full check or `pinArchitecture` reads them.
    #[test]
    fn no_node_facts_for_a_controllers_pod_under_auto() {
        let host = Fake::default();
        let pod = |owners: Value| {
            json!({"operation": "CREATE", "kind": {"kind": "Pod"},
            "resource": {"resource": "pods"}, "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": {"kind": "Pod", "metadata": {"name": "web-1", "ownerReferences": owners},
                "spec": {"containers": [{"name": "c",
                    "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]}}})
        };
        let owned = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": true}]);
        let not_controller =
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u"}]);
        for (settings, owners, calls) in [
            (json!({}), owned.clone(), false),
            (json!({}), json!(null), true),
            (json!({}), not_controller, true),
            (json!({"nodeInventory": "warn"}), owned.clone(), true),
            (json!({"pinArchitecture": true}), owned, true),
        ] {
            host.calls.borrow_mut().clear();
            let payload = json!({"settings": settings, "request": pod(owners.clone())});
            let response = crate::respond_with(&serde_json::to_vec(&payload).unwrap(), &host);
            assert!(response.accepted, "{settings} {owners}");
            assert_eq!(!host.operations().is_empty(), calls, "{settings} {owners}");
        }
    }

    /// policy-server's refusal when `contextAwareResources` lacks
    /// `v1/ConfigMap` (policy-evaluator `runtimes/callback.rs`), as waPC
    /// hands it to the guest.
    const CONFIGMAPS_REFUSED: &str = "Host error: Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported.";

    /// A Deployment of the private image `registry.corp.example/billing/api:4.2`
    /// under the default settings (`imageFacts: cluster`).
    fn private_deployment() -> Vec<u8> {
        let payload = json!({"settings": {}, "request": {
            "operation": "CREATE", "kind": {"kind": "Deployment"},
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "api", "image": "registry.corp.example/billing/api:4.2"}]}}}}}});
        serde_json::to_vec(&payload).unwrap()
    }

    #[test]
    fn a_refused_list_is_unreadable_facts_asked_once() {
        let host = Fake::failing(CONFIGMAPS_REFUSED);
        let needs = Needs {
            nodes: true,
            ..cluster_needs(&["corp/win:1", "corp/other:2"])
        };
        let facts = gather(&needs, &host);
        assert_eq!(facts.unreadable, Some(Unreadable::ConfigMapsNotGranted));
        assert!(facts.images.is_empty(), "{facts:?}");
        assert!(matches!(facts.nodes, Some(NodeFacts::LookupFailed(_))));
        assert_eq!(facts.syncer, None);
        // Refused once: the equality selectors are not tried.
        assert_eq!(
            host.operations(),
            ["kubernetes/list_resources_by_namespace"]
        );
        // The host capability itself not granted.
        let host = Fake::failing("Host error: Policy has not been granted access to the 'kubernetes/list_resources_by_namespace' host capability. The violation has been reported.");
        let facts = gather(&cluster_needs(&["corp/win:1"]), &host);
        assert_eq!(facts.unreadable, Some(Unreadable::CapabilityNotGranted));
        assert_eq!(host.operations().len(), 1);
        // Negative: a host that fails the call (no API server) is asked with
        // equality selectors too, and its words are kept without wrappers.
        let host = Fake::failing(
            "Host error: Callback evaluation failure: kube::Client was not initialized properly",
        );
        let facts = gather(&cluster_needs(&["corp/win:1"]), &host);
        assert_eq!(
            facts.unreadable,
            Some(Unreadable::Failed(
                "kube::Client was not initialized properly".into()
            ))
        );
        assert_eq!(host.operations().len(), 2);
        // Negative: facts read are never unreadable.
        let read = gather(
            &cluster_needs(&["corp/win:1"]),
            &serving(Fake::default(), "facts", &[]),
        );
        assert_eq!(read.unreadable, None);
    }

    /// policy-server's errors as the guest gets them: waPC's wrapper, its
    /// own, and anyhow's `{:?}` over several lines.
    #[test]
    fn host_words_are_one_line_without_wrappers() {
        let words = |text: &str| HostError(text.into()).words();
        assert_eq!(
            words("Host error: Callback evaluation failure: kube::Client was not initialized properly"),
            "kube::Client was not initialized properly"
        );
        assert_eq!(
            words("Host error: Callback evaluation failure: error finding resource v1 / ConfigMap\n\nCaused by:\n    0: HyperError: error trying to connect\n    1: tcp connect error: Connection refused (os error 111)\n"),
            "error finding resource v1 / ConfigMap: HyperError: error trying to connect: tcp connect error: Connection refused (os error 111)"
        );
        assert_eq!(
            words("Host error: Callback evaluation failure: broken\n\nStack backtrace:\n   0: anyhow::error"),
            "broken"
        );
        // Negative: other words are kept as they are.
        assert_eq!(words("forbidden"), "forbidden");
        assert_eq!(words("10: not a cause"), "10: not a cause");
        assert!(!HostError("forbidden".into()).refused());
        assert!(HostError(CONFIGMAPS_REFUSED.into()).refused());
    }

    #[test]
    fn a_refused_list_warns_once_with_the_grant_never_the_syncer() {
        let host = Fake::failing(CONFIGMAPS_REFUSED);
        let response = crate::respond_with(&private_deployment(), &host);
        assert!(response.accepted);
        let warnings = response.warnings.unwrap_or_default();
        assert_eq!(
            warnings,
            ["spec.template.spec.containers[0].image: the image facts cannot be read (policy-server denies v1/ConfigMap), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; add v1/ConfigMap to the policy's contextAwareResources"]
        );
        assert!(!warnings[0].contains("syncer"), "{warnings:?}");
        // A host that fails the call: its words, and where to look.
        let host = Fake::failing(
            "Host error: Callback evaluation failure: kube::Client was not initialized properly",
        );
        let response = crate::respond_with(&private_deployment(), &host);
        let warnings = response.warnings.unwrap_or_default();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("cannot be read (kube::Client was not initialized properly)")
                && warnings[0]
                    .ends_with("check policy-server's access to ConfigMaps in os-placement"),
            "{warnings:?}"
        );
        assert!(!warnings[0].contains("syncer"), "{warnings:?}");
    }

    /// Negative: a failure the syncer published (a `lookupFailed` record)
    /// is its failure, and the warning says so.
    #[test]
    fn a_published_failed_lookup_names_the_syncer() {
        let image = "registry.corp.example/billing/api:4.2";
        let published = SortedMap::from([(
            image.to_string(),
            ImageFacts::LookupFailed("registry.corp.example answered 401".into()),
        )]);
        let maps = published::config_maps(
            &published::Sources {
                images: &published,
                ..published::Sources::default()
            },
            "os-placement",
        );
        let host = serving(Fake::default(), "os-placement", &maps);
        let response = crate::respond_with(&private_deployment(), &host);
        assert!(response.accepted);
        let warnings = response.warnings.unwrap_or_default();
        assert!(
            warnings.iter().any(|w| w.contains("the syncer's lookup of registry.corp.example/billing/api:4.2 failed (registry.corp.example answered 401)")
                && w.ends_with("check that the syncer may reach the registry")),
            "{warnings:?}"
        );
        assert!(
            !warnings.iter().any(|w| w.contains("cannot be read")),
            "{warnings:?}"
        );
    }
}
