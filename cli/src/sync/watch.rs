//! What the cluster holds, kept current by watches (kube-runtime watchers,
//! with their backoff): the images of every Pod and workload template, the
//! Nodes, the RuntimeClasses, and Karpenter's NodePools with their node
//! classes (given up quietly where Karpenter is not installed). Each kind is listed once, then watched, so
//! a new workload or tag reaches the syncer within seconds and the API
//! server is not listed again on a timer. Only what the facts need is
//! kept: an object's images, a Node reduced as the core reads it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod, ReplicationController};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use os_placement_core::capacity::{self, CAPACITY_KINDS};
use os_placement_core::published::{Heartbeat, Sources};
use os_placement_core::{host_answers, locate_pod_spec, ClusterRuntimeClass, Kind, Node, PodView};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// What a watched object contributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Watched {
    /// A kind with a pod spec: its images.
    Workload(Kind),
    /// A Node.
    Node,
    /// A RuntimeClass.
    RuntimeClass,
    /// A NodePool or node class, of this kind (`capacity::CAPACITY_KINDS`).
    Capacity(&'static str),
}

impl Watched {
    /// Every kind the syncer watches, with its API coordinates.
    pub fn all() -> Vec<(Watched, ApiResource)> {
        vec![
            (Watched::Workload(Kind::Pod), ApiResource::erase::<Pod>(&())),
            (
                Watched::Workload(Kind::Deployment),
                ApiResource::erase::<Deployment>(&()),
            ),
            (
                Watched::Workload(Kind::ReplicaSet),
                ApiResource::erase::<ReplicaSet>(&()),
            ),
            (
                Watched::Workload(Kind::StatefulSet),
                ApiResource::erase::<StatefulSet>(&()),
            ),
            (
                Watched::Workload(Kind::DaemonSet),
                ApiResource::erase::<DaemonSet>(&()),
            ),
            (
                Watched::Workload(Kind::ReplicationController),
                ApiResource::erase::<ReplicationController>(&()),
            ),
            (Watched::Workload(Kind::Job), ApiResource::erase::<Job>(&())),
            (
                Watched::Workload(Kind::CronJob),
                ApiResource::erase::<CronJob>(&()),
            ),
            (Watched::Node, ApiResource::erase::<KubeNode>(&())),
            (
                Watched::RuntimeClass,
                ApiResource::erase::<RuntimeClass>(&()),
            ),
        ]
        .into_iter()
        .chain(CAPACITY_KINDS.iter().map(|k| {
            let (group, version) = k.api_version.split_once('/').unwrap_or(("", k.api_version));
            let gvk = GroupVersionKind::gvk(group, version, k.kind);
            (
                Watched::Capacity(k.kind),
                ApiResource::from_gvk_with_plural(&gvk, k.plural),
            )
        }))
        .collect()
    }
}

/// One object's contribution.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Images(Vec<String>),
    Node(Node),
    RuntimeClass(ClusterRuntimeClass),
    /// A NodePool or node class, down to what `capacity` reads.
    Capacity(Value),
}

type ObjectKey = (Option<String>, String);

/// Every watched object's contribution, by kind.
#[derive(Debug, Default)]
struct Objects {
    current: HashMap<Watched, HashMap<ObjectKey, Entry>>,
    /// Objects listed since the kind's watch (re)started, not yet complete.
    listing: HashMap<Watched, HashMap<ObjectKey, Entry>>,
    /// Kinds listed once at least, or given up (not allowed).
    ready: BTreeSet<Watched>,
    /// Kinds given up, and why.
    skipped: BTreeMap<Watched, String>,
    /// Kinds whose watch failed, and when last; cleared by their next event.
    failing: HashMap<Watched, Instant>,
    /// Bumped on every change.
    version: u64,
}

/// A watch that failed counts as synced again after its next event, or
/// after this long without another failure (kube-runtime's backoff tries
/// again within 30 s, and says nothing when the retry works).
pub const RECOVERED_AFTER: Duration = Duration::from_secs(30);

/// What the facts are built from, at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every image in use.
    pub images: BTreeSet<String>,
    /// Every Node, by name, then what the NodePools launch.
    pub nodes: Vec<Node>,
    /// Every RuntimeClass, by name.
    pub runtime_classes: os_placement_core::SortedMap<String, ClusterRuntimeClass>,
    /// Whether every kind has been listed (or given up).
    pub complete: bool,
    /// The version of the inventory it was taken at.
    pub version: u64,
}

/// The watched state, shared between the watchers and the publisher.
#[derive(Debug, Default)]
pub struct Inventory {
    objects: Mutex<Objects>,
    changed: Notify,
}

impl Snapshot {
    /// What to publish: the nodes and RuntimeClasses unless their kind was
    /// given up on (not served, no access), the image facts with when
    /// each was resolved, and the heartbeat.
    pub fn sources<'a>(
        &'a self,
        inventory: &Inventory,
        (images, resolved_at): &'a super::cache::Published,
        syncer: Option<Heartbeat>,
    ) -> Sources<'a> {
        let skipped = inventory.skipped();
        Sources {
            nodes: (!skipped.contains_key(&Watched::Node)).then_some(self.nodes.as_slice()),
            runtime_classes: (!skipped.contains_key(&Watched::RuntimeClass))
                .then_some(&self.runtime_classes),
            images,
            resolved_at: Some(resolved_at),
            syncer,
        }
    }
}

impl Inventory {
    fn lock(&self) -> MutexGuard<'_, Objects> {
        self.objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until something changed since the last wait.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The kinds given up, and why.
    pub fn skipped(&self) -> BTreeMap<Watched, String> {
        self.lock().skipped.clone()
    }

    /// The version of what is watched: bumped on every change.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// Whether every kind is listed (or given up) and no watch is failing.
    pub fn synced(&self) -> bool {
        let objects = self.lock();
        objects.ready.len() == Watched::all().len()
            && objects
                .failing
                .values()
                .all(|at| at.elapsed() >= RECOVERED_AFTER)
    }

    /// The watch of `kind` failed (kube-runtime tries it again).
    pub fn fail(&self, kind: Watched) {
        self.lock().failing.insert(kind, Instant::now());
    }

    /// What the facts are built from now.
    pub fn snapshot(&self) -> Snapshot {
        let objects = self.lock();
        let mut snapshot = Snapshot {
            complete: objects.ready.len() == Watched::all().len(),
            version: objects.version,
            ..Snapshot::default()
        };
        let mut nodes: Vec<&Node> = Vec::new();
        let mut pools: Vec<&Value> = Vec::new();
        for entries in objects.current.values() {
            for entry in entries.values() {
                match entry {
                    Entry::Images(images) => snapshot.images.extend(images.iter().cloned()),
                    Entry::Node(node) => nodes.push(node),
                    Entry::Capacity(object) => pools.push(object),
                    Entry::RuntimeClass(_) => {}
                }
            }
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        snapshot.nodes = nodes.into_iter().cloned().collect();
        // In a stable order, so an unchanged cluster publishes the same text.
        let key = |o: &Value| {
            let text = |p: &str| {
                o.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("/kind"), text("/metadata/name"))
        };
        pools.sort_by_key(|o| key(o));
        let pools: Vec<Value> = pools.into_iter().cloned().collect();
        snapshot.nodes.extend(capacity::from_objects(&pools));
        let mut classes: Vec<(String, ClusterRuntimeClass)> = objects
            .current
            .get(&Watched::RuntimeClass)
            .into_iter()
            .flatten()
            .filter_map(|((_, name), entry)| match entry {
                Entry::RuntimeClass(class) => Some((name.clone(), class.clone())),
                _ => None,
            })
            .collect();
        classes.sort_by(|a, b| a.0.cmp(&b.0));
        snapshot.runtime_classes = classes.into_iter().collect();
        snapshot
    }

    /// Applies one watch event of `kind`.
    pub fn apply(&self, kind: Watched, event: Event<DynamicObject>) {
        let mut objects = self.lock();
        objects.failing.remove(&kind);
        let changed = match event {
            Event::Init => {
                objects.listing.insert(kind, HashMap::new());
                false
            }
            Event::InitApply(object) => {
                let (key, entry) = read(kind, &object);
                objects.listing.entry(kind).or_default().insert(key, entry);
                false
            }
            Event::InitDone => {
                let listed = objects.listing.remove(&kind).unwrap_or_default();
                let before = objects.current.insert(kind, listed);
                let first = objects.ready.insert(kind);
                first || before.as_ref() != objects.current.get(&kind)
            }
            Event::Apply(object) => {
                let (key, entry) = read(kind, &object);
                let entries = objects.current.entry(kind).or_default();
                entries.insert(key, entry.clone()) != Some(entry)
            }
            Event::Delete(object) => {
                let (key, _) = read(kind, &object);
                let entries = objects.current.entry(kind).or_default();
                entries.remove(&key).is_some()
            }
        };
        if changed {
            objects.version += 1;
            drop(objects);
            self.changed.notify_one();
        }
    }

    /// Gives `kind` up: the syncer may not read it.
    pub fn skip(&self, kind: Watched, why: String) {
        let mut objects = self.lock();
        objects.skipped.insert(kind, why);
        if objects.ready.insert(kind) {
            objects.version += 1;
            drop(objects);
            self.changed.notify_one();
        }
    }
}

/// What one object contributes.
fn read(kind: Watched, object: &DynamicObject) -> (ObjectKey, Entry) {
    let key = (
        object.metadata.namespace.clone(),
        object.metadata.name.clone().unwrap_or_default(),
    );
    let value = serde_json::to_value(object).unwrap_or(Value::Null);
    let entry = match kind {
        Watched::Workload(kind) => Entry::Images(images_of(&value, kind)),
        Watched::Node => Entry::Node(host_answers::node(&value)),
        Watched::RuntimeClass => Entry::RuntimeClass(host_answers::runtime_class(&value)),
        Watched::Capacity(_) => {
            let at = |p: &str| value.pointer(p).cloned().unwrap_or(Value::Null);
            Entry::Capacity(json!({
                "apiVersion": at("/apiVersion"), "kind": at("/kind"),
                "metadata": {"name": at("/metadata/name")},
                "spec": at("/spec"), "status": at("/status"),
            }))
        }
    };
    (key, entry)
}

/// The image references of one object's pod spec, read as the policy reads them.
pub fn images_of(object: &Value, kind: Kind) -> Vec<String> {
    let Ok((spec, path)) = locate_pod_spec(object, kind) else {
        return Vec::new();
    };
    match PodView::read(spec, path) {
        Ok(pod) => pod
            .containers
            .iter()
            .filter_map(|c| c.image.map(str::to_string))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Watches `kind` into `inventory` until the stream ends: a list, then a
/// watch, restarted with kube-runtime's backoff after errors. A kind the
/// syncer may not read (403, or not served: 404) is given up with a message.
pub async fn watch(
    client: Client,
    kind: Watched,
    resource: ApiResource,
    inventory: Arc<Inventory>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    // The list is served from the API server's cache (resourceVersion=0).
    let config = watcher::Config::default().any_semantic();
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => inventory.apply(kind, event),
            Err(error) => {
                if let Some(code) = refused(&error) {
                    let why = format!("cannot watch {} ({code}): {error}", resource.plural);
                    if matches!((kind, code), (Watched::Capacity(_), 404)) {
                        eprintln!(
                            "os-placement facts sync: {}.{} is not served (no Karpenter): no launchable capacity from it",
                            resource.plural, resource.group
                        );
                    } else {
                        eprintln!(
                            "os-placement facts sync: skipping {}: {error}",
                            resource.plural
                        );
                    }
                    inventory.skip(kind, why);
                    return;
                }
                inventory.fail(kind);
                eprintln!(
                    "os-placement facts sync: watching {} failed, retrying: {error}",
                    resource.plural
                );
            }
        }
    }
}

/// The HTTP status of an error that retrying does not mend.
fn refused(error: &watcher::Error) -> Option<u16> {
    let api = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status)) => status,
        _ => return None,
    };
    matches!(api.code, 403 | 404).then_some(api.code)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn deployment(name: &str, image: &str) -> DynamicObject {
        object(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "n"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}))
    }

    #[test]
    fn images_come_from_every_container_list_of_the_pod_spec() {
        let value = json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "n"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "initContainers": [{"name": "i", "image": "corp/init:1"}],
                "containers": [{"name": "a", "image": "corp/app:1"}, {"name": "b"}]}}}}}
        });
        assert_eq!(
            images_of(&value, Kind::CronJob),
            ["corp/app:1", "corp/init:1"]
        );
        // Negative: the same object read as a Deployment has no pod spec there.
        assert!(images_of(&value, Kind::Deployment).is_empty());
    }

    #[test]
    fn events_keep_the_images_in_use_and_a_relist_replaces_them() {
        let inventory = Inventory::default();
        let kind = Watched::Workload(Kind::Deployment);
        inventory.apply(kind, Event::Init);
        inventory.apply(kind, Event::InitApply(deployment("a", "corp/a:1")));
        // Nothing is complete, or published, before the list is.
        assert!(inventory.snapshot().images.is_empty());
        inventory.apply(kind, Event::InitDone);
        assert_eq!(
            inventory.snapshot().images,
            BTreeSet::from(["corp/a:1".to_string()])
        );
        assert!(!inventory.snapshot().complete);
        inventory.apply(kind, Event::Apply(deployment("a", "corp/a:2")));
        inventory.apply(kind, Event::Apply(deployment("b", "corp/b:1")));
        let version = inventory.snapshot().version;
        // The same object again changes nothing.
        inventory.apply(kind, Event::Apply(deployment("b", "corp/b:1")));
        assert_eq!(inventory.snapshot().version, version);
        assert_eq!(
            inventory.snapshot().images,
            BTreeSet::from(["corp/a:2".to_string(), "corp/b:1".to_string()])
        );
        inventory.apply(kind, Event::Delete(deployment("a", "corp/a:2")));
        // A relist drops what it no longer lists.
        inventory.apply(kind, Event::Init);
        inventory.apply(kind, Event::InitApply(deployment("c", "corp/c:1")));
        inventory.apply(kind, Event::InitDone);
        assert_eq!(
            inventory.snapshot().images,
            BTreeSet::from(["corp/c:1".to_string()])
        );
    }

    #[test]
    fn the_inventory_is_complete_once_every_kind_is_listed_or_given_up() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            assert!(!inventory.snapshot().complete);
            if kind == Watched::RuntimeClass {
                inventory.skip(kind, "forbidden".into());
            } else {
                inventory.apply(kind, Event::Init);
                inventory.apply(kind, Event::InitDone);
            }
        }
        assert!(inventory.snapshot().complete);
        assert!(inventory.synced());
        assert_eq!(inventory.skipped().len(), 1);
        // A failing watch is not synced until its next event.
        inventory.fail(Watched::Node);
        assert!(!inventory.synced());
        inventory.apply(Watched::Node, Event::Init);
        assert!(inventory.synced());
        let node = object(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w"},
            "status": {"nodeInfo": {"operatingSystem": "windows", "kernelVersion": "10.0.20348.1"}}}),
        );
        inventory.apply(Watched::Node, Event::Apply(node));
        let nodes = inventory.snapshot().nodes;
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
    }

    /// NodePools and their classes become launchable entries after the
    /// Nodes; a class going not ready blocks its NodePool.
    #[test]
    fn nodepools_and_their_classes_publish_what_they_launch() {
        let inventory = Inventory::default();
        let pool = object(json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "windows2022", "resourceVersion": "7"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "w"}}}}}));
        let class = |ready: &str| {
            object(
                json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                "metadata": {"name": "w"}, "spec": {"amiSelectorTerms": [{"alias": "windows2022@latest"}]},
                "status": {"conditions": [{"type": "AMIsReady", "status": ready, "reason": "AMINotFound"}]}}),
            )
        };
        inventory.apply(Watched::Capacity("NodePool"), Event::Apply(pool));
        inventory.apply(
            Watched::Capacity("EC2NodeClass"),
            Event::Apply(class("True")),
        );
        let nodes = inventory.snapshot().nodes;
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].describe(), "NodePool windows2022 (none yet)");
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
        assert!(nodes[0].usable());
        inventory.apply(
            Watched::Capacity("EC2NodeClass"),
            Event::Apply(class("False")),
        );
        let nodes = inventory.snapshot().nodes;
        assert_eq!(
            nodes[0].blocked.as_deref(),
            Some("its EC2NodeClass w reports AMIsReady is False (AMINotFound)")
        );
        // Negative: the NodePool gone, nothing is launchable.
        inventory.apply(
            Watched::Capacity("NodePool"),
            Event::Delete(object(
                json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                "metadata": {"name": "windows2022"}}),
            )),
        );
        assert!(inventory.snapshot().nodes.is_empty());
    }
}
