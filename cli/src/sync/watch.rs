//! What the cluster holds, kept current by watches (kube-runtime watchers,
//! with their backoff): the images of every Pod and workload template, the
//! Nodes, the RuntimeClasses, and Karpenter's NodePools with their node
//! classes (given up quietly where Karpenter is not installed). Each kind is listed once, then watched, so
//! a new workload or tag reaches the syncer within seconds and the API
//! server is not listed again on a timer. Only what the facts need is
//! kept: an object's images, a Node reduced as the core reads it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod, ReplicationController};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use kube::Client;
use os_placement_core::capacity::{self, CAPACITY_KINDS};
use os_placement_core::published::{self, Heartbeat, Sources};
use os_placement_core::{host_answers, locate_pod_spec, ClusterRuntimeClass, Kind, Node, PodView};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::metrics::KindHealth;
use super::pace::{jittered, Backoff, Pace};
use super::pull::{pull_of, Pull};
use super::serve::Status;

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
    /// The kind's name, as logs, metrics and the published facts say it.
    pub fn name(self) -> &'static str {
        match self {
            Watched::Workload(kind) => kind.name(),
            Watched::Node => "Node",
            Watched::RuntimeClass => "RuntimeClass",
            Watched::Capacity(kind) => kind,
        }
    }

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

/// One object's contribution. Pods are most of a large cluster's objects:
/// their entry is a list of shared image names (a cluster of 150,000 Pods
/// names a few thousand images), and the rarer, larger entries are boxed,
/// so a Pod's slot stays small.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Images(Vec<Arc<str>>),
    /// With `--pull-secrets`: the images and where their pull credentials
    /// come from, shared by the objects that say the same.
    Pulled(Arc<Pull>, Box<[Arc<str>]>),
    Node(Box<Node>),
    RuntimeClass(Box<ClusterRuntimeClass>),
    /// A NodePool or node class, down to what `capacity` reads.
    Capacity(Box<Value>),
}

type ObjectKey = (Option<String>, String);

/// An entry and the list (generation) that last wrote it.
type Slot = (Entry, u32);

/// Every watched object's contribution, by kind, and how each kind's
/// watch fares.
#[derive(Debug, Default)]
struct Objects {
    /// A relist writes in place, each entry marked with its list's
    /// generation; at its end, entries it did not list are removed: no
    /// second copy of a large kind is held.
    current: HashMap<Watched, HashMap<ObjectKey, Slot>>,
    /// By kind: the generation of its current list, and whether the list
    /// in progress changed anything.
    lists: HashMap<Watched, (u32, bool)>,
    /// Every image name in use, shared by the entries that name it.
    images: HashSet<Arc<str>>,
    /// With `--pull-secrets`: every pull context in use, shared likewise.
    pulls: Option<HashSet<Arc<Pull>>>,
    /// The number of image names after the last pruning.
    images_pruned: usize,
    /// Kinds listed once at least.
    listed: BTreeSet<Watched>,
    /// Kinds the API server refuses (not served, or not allowed), and why.
    refused: BTreeMap<Watched, Refusal>,
    /// Kinds whose watch is failing, kept at their last known state.
    recovering: HashMap<Watched, Recovering>,
    /// Kinds failing for longer than the stale bound, and since when
    /// (seconds since the epoch).
    stale: BTreeMap<Watched, u64>,
    /// Bumped on every change.
    version: u64,
}

/// Why the API server refuses a kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 404 (not served: its CRD is not installed) or 403 (not allowed).
    pub code: u16,
    /// The error, as the log said it.
    pub why: String,
}

/// A failing watch.
#[derive(Debug, Clone)]
struct Recovering {
    since: Instant,
    since_epoch: u64,
    last_error: Instant,
    errors: u64,
    /// Whether the log said it is failing (then it says it recovered).
    said: bool,
}

/// A recovering watch whose collection was read successfully after its
/// last error counts as re-established once this passes without another.
pub const CONFIRMED_AFTER: Duration = Duration::from_secs(1);

/// A kind never listed, whose list has been failing since the start for
/// this long, no longer holds the first publication: the facts are
/// published without it (and it is marked stale).
pub const FIRST_LIST_WAIT: Duration = Duration::from_secs(60);

/// What the facts are built from, at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every image in use.
    pub images: BTreeSet<String>,
    /// With `--pull-secrets`: where each image's pull credentials come
    /// from, for every object that uses it.
    pub pulls: BTreeMap<String, BTreeSet<Arc<Pull>>>,
    /// Every Node, by name, then what the NodePools launch.
    pub nodes: Vec<Node>,
    /// Every RuntimeClass, by name.
    pub runtime_classes: os_placement_core::SortedMap<String, ClusterRuntimeClass>,
    /// Whether every kind has been listed, is refused, or is stale.
    pub complete: bool,
    /// Kinds whose objects are not published: never listed, or refused.
    pub unpublished: BTreeSet<Watched>,
    /// Kinds whose facts are stale, and since when.
    pub stale: Vec<published::Stale>,
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
    /// What to publish: the nodes and RuntimeClasses unless their kind
    /// was never listed or is refused (not served, no access), the image
    /// facts with when each was resolved, the heartbeat, and the kinds
    /// whose facts are stale.
    pub fn sources<'a>(
        &'a self,
        (images, resolved_at): &'a super::cache::Published,
        syncer: Option<Heartbeat>,
    ) -> Sources<'a> {
        Sources {
            nodes: self
                .publishes(Watched::Node)
                .then_some(self.nodes.as_slice()),
            runtime_classes: self
                .publishes(Watched::RuntimeClass)
                .then_some(&self.runtime_classes),
            images,
            resolved_at: Some(resolved_at),
            syncer,
            stale: &self.stale,
        }
    }

    fn publishes(&self, kind: Watched) -> bool {
        !self.unpublished.contains(&kind)
    }
}

impl Inventory {
    /// An empty inventory; with `pull_secrets`, each object's pull
    /// context is kept with its images.
    pub fn new(pull_secrets: bool) -> Inventory {
        let inventory = Inventory::default();
        if pull_secrets {
            inventory.lock().pulls = Some(HashSet::new());
        }
        inventory
    }

    fn lock(&self) -> MutexGuard<'_, Objects> {
        self.objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until something changed since the last wait.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    fn bump(&self, mut objects: MutexGuard<'_, Objects>) {
        objects.version += 1;
        drop(objects);
        self.changed.notify_one();
    }

    /// The version of what is watched: bumped on every change.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// Whether the facts can be published: every kind listed once, refused,
    /// or stale. A watch failing after its first list does not count: its
    /// kind keeps what it last listed until a relist replaces it.
    pub fn synced(&self) -> bool {
        self.lock().complete()
    }

    /// The watch of `kind` failed with `error`; its watcher tries again.
    /// Said once, when the kind starts failing.
    /// A watch broken once and resumed at the first try is routine (API
    /// servers close watches all the time): said only from the second
    /// error in a row.
    pub fn fail(&self, kind: Watched, error: &str) {
        let mut objects = self.lock();
        let listed = objects.listed.contains(&kind);
        let now = Instant::now();
        let recovering = objects.recovering.entry(kind).or_insert(Recovering {
            since: now,
            since_epoch: epoch_now(),
            last_error: now,
            errors: 0,
            said: false,
        });
        recovering.last_error = now;
        recovering.errors += 1;
        if recovering.errors < 2 || recovering.said {
            return;
        }
        recovering.said = true;
        let kept = if listed {
            "what it last listed stays published"
        } else {
            "not listed yet"
        };
        eprintln!(
            "os-placement facts sync: watching {} failed, retrying ({kept}): {error}",
            kind.name()
        );
    }

    /// `kind` answered: it is no longer failing. Said once.
    fn recovered(objects: &mut Objects, kind: Watched) -> bool {
        let Some(recovering) = objects.recovering.remove(&kind) else {
            return false;
        };
        if !recovering.said {
            return objects.stale.remove(&kind).is_some();
        }
        eprintln!(
            "os-placement facts sync: watching {} recovered after {:.1?} ({} errors)",
            kind.name(),
            super::round_secs(recovering.since.elapsed()),
            recovering.errors
        );
        objects.stale.remove(&kind).is_some()
    }

    /// The kinds still recovering whose collection was read successfully
    /// after their last error (`read_ok`, by kind), for [`CONFIRMED_AFTER`]:
    /// a watch re-established on a quiet kind sends no event.
    pub fn confirm(&self, read_ok: impl Fn(Watched) -> Option<Instant>) {
        let mut objects = self.lock();
        let confirmed: Vec<Watched> = objects
            .recovering
            .iter()
            .filter(|(kind, r)| {
                r.last_error.elapsed() >= CONFIRMED_AFTER
                    && objects.listed.contains(kind)
                    && read_ok(**kind).is_some_and(|ok| ok > r.last_error)
            })
            .map(|(kind, _)| *kind)
            .collect();
        let mut changed = false;
        for kind in confirmed {
            changed |= Inventory::recovered(&mut objects, kind);
        }
        if changed {
            self.bump(objects);
        }
    }

    /// Marks stale the kinds failing for `stale_after` (or, never listed,
    /// for [`FIRST_LIST_WAIT`]), once each.
    pub fn check_stale(&self, stale_after: Duration) {
        let mut objects = self.lock();
        let newly: Vec<(Watched, u64)> = objects
            .recovering
            .iter()
            .filter(|(kind, r)| {
                let bound = if objects.listed.contains(kind) {
                    stale_after
                } else {
                    FIRST_LIST_WAIT.min(stale_after)
                };
                !objects.stale.contains_key(kind) && r.since.elapsed() >= bound
            })
            .map(|(kind, r)| (*kind, r.since_epoch))
            .collect();
        if newly.is_empty() {
            return;
        }
        for (kind, since) in newly {
            eprintln!(
                "os-placement facts sync: {} could not be read for {:.0?}: its facts are published as stale",
                kind.name(),
                if objects.listed.contains(&kind) { stale_after } else { FIRST_LIST_WAIT.min(stale_after) }
            );
            objects.stale.insert(kind, since);
        }
        self.bump(objects);
    }

    /// How each kind's watch fares.
    pub fn health(&self) -> Vec<KindHealth> {
        let objects = self.lock();
        Watched::all()
            .into_iter()
            .map(|(kind, _)| KindHealth {
                kind: kind.name(),
                recovering_since: objects.recovering.get(&kind).map(|r| r.since_epoch),
                refused: objects.refused.get(&kind).map(|r| r.code),
                stale: objects.stale.contains_key(&kind),
            })
            .collect()
    }

    /// What the facts are built from now.
    pub fn snapshot(&self) -> Snapshot {
        let objects = self.lock();
        let mut snapshot = Snapshot {
            complete: objects.complete(),
            version: objects.version,
            unpublished: Watched::all()
                .into_iter()
                .map(|(kind, _)| kind)
                .filter(|kind| {
                    !objects.listed.contains(kind)
                        || objects.refused.get(kind).is_some_and(|r| r.code == 404)
                })
                .collect(),
            stale: objects
                .stale
                .iter()
                .map(|(kind, since)| published::Stale {
                    kind: kind.name().to_string(),
                    since: *since,
                })
                .collect(),
            ..Snapshot::default()
        };
        let mut nodes: Vec<&Node> = Vec::new();
        let mut pools: Vec<&Value> = Vec::new();
        // A NodePool whose node class kind is not served has no class to
        // launch from: left out, not published as blocked.
        let unserved: Vec<&str> = objects
            .refused
            .iter()
            .filter(|(_, r)| r.code == 404)
            .filter_map(|(kind, _)| match kind {
                Watched::Capacity(kind) => Some(*kind),
                _ => None,
            })
            .collect();
        // A kind's first list is not published before it is complete.
        let listed = objects
            .current
            .iter()
            .filter(|(kind, _)| objects.listed.contains(kind));
        for (_, entries) in listed {
            for (entry, _) in entries.values() {
                match entry {
                    Entry::Images(images) => {
                        for image in images {
                            if !snapshot.images.contains(&**image) {
                                snapshot.images.insert(image.to_string());
                            }
                        }
                    }
                    Entry::Pulled(pull, images) => {
                        for image in images.iter() {
                            match snapshot.pulls.get_mut(&**image) {
                                Some(pulls) => {
                                    pulls.insert(pull.clone());
                                }
                                None => {
                                    snapshot.images.insert(image.to_string());
                                    snapshot
                                        .pulls
                                        .insert(image.to_string(), BTreeSet::from([pull.clone()]));
                                }
                            }
                        }
                    }
                    Entry::Node(node) => nodes.push(node),
                    Entry::Capacity(object) if !refers_to(object, &unserved) => pools.push(object),
                    Entry::Capacity(_) | Entry::RuntimeClass(_) => {}
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
            .filter_map(|((_, name), (entry, _))| match entry {
                Entry::RuntimeClass(class) => Some((name.clone(), (**class).clone())),
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
        // A relist in progress is not yet a recovery; its end is, and so is any event.
        let answered = !matches!(event, Event::Init | Event::InitApply(_));
        let mut changed = match event {
            Event::Init => {
                let list = objects.lists.entry(kind).or_default();
                *list = (list.0.wrapping_add(1), false);
                false
            }
            Event::InitApply(object) => {
                let (key, entry) = objects.read(kind, &object);
                let generation = objects.lists.get(&kind).map_or(0, |l| l.0);
                let entries = objects.current.entry(kind).or_default();
                let differs = entries
                    .insert(key, (entry.clone(), generation))
                    .is_none_or(|(before, _)| before != entry);
                if let Some(list) = objects.lists.get_mut(&kind) {
                    list.1 |= differs;
                }
                false
            }
            Event::InitDone => {
                let (generation, differs) = objects.lists.get(&kind).copied().unwrap_or_default();
                let entries = objects.current.entry(kind).or_default();
                let before = entries.len();
                entries.retain(|_, (_, listed)| *listed == generation);
                let removed = entries.len() != before;
                objects.prune_images(true);
                let first = objects.listed.insert(kind);
                let served = match objects.refused.remove(&kind) {
                    Some(refusal) => {
                        eprintln!(
                            "os-placement facts sync: {} is {} again ({} listed)",
                            kind.name(),
                            if refusal.code == 404 {
                                "served"
                            } else {
                                "allowed"
                            },
                            objects.current.get(&kind).map_or(0, HashMap::len)
                        );
                        true
                    }
                    None => false,
                };
                first || served || removed || differs
            }
            Event::Apply(object) => {
                let (key, entry) = objects.read(kind, &object);
                let generation = objects.lists.get(&kind).map_or(0, |l| l.0);
                let entries = objects.current.entry(kind).or_default();
                entries
                    .insert(key, (entry.clone(), generation))
                    .is_none_or(|(before, _)| before != entry)
            }
            Event::Delete(object) => {
                let key = object_key(&object);
                let entries = objects.current.entry(kind).or_default();
                let removed = entries.remove(&key).is_some();
                objects.prune_images(false);
                removed
            }
        };
        if answered {
            changed |= Inventory::recovered(&mut objects, kind);
        }
        if changed {
            self.bump(objects);
        }
    }

    /// The API server refuses `kind` (`code` 404: not served; 403: not
    /// allowed). Not served, its objects are dropped at once; not allowed,
    /// what was listed stays, as for a failing watch. Said once.
    pub fn refuse(&self, kind: Watched, code: u16, why: String) {
        let mut objects = self.lock();
        if objects.refused.get(&kind).is_some_and(|r| r.code == code) {
            return;
        }
        if code == 404 {
            objects.current.remove(&kind);
            objects.prune_images(true);
            objects.recovering.remove(&kind);
            objects.stale.remove(&kind);
        }
        eprintln!("os-placement facts sync: {why}");
        objects.refused.insert(kind, Refusal { code, why });
        self.bump(objects);
    }
}

impl Objects {
    /// What one object contributes, its image names shared.
    fn read(&mut self, kind: Watched, object: &DynamicObject) -> (ObjectKey, Entry) {
        let (key, entry) = read(kind, object, self.pulls.is_some());
        let entry = match entry {
            Read::Images(images, None) => {
                Entry::Images(images.into_iter().map(|image| self.intern(image)).collect())
            }
            Read::Images(images, Some(pull)) => Entry::Pulled(
                self.intern_pull(pull),
                images.into_iter().map(|image| self.intern(image)).collect(),
            ),
            Read::Entry(entry) => entry,
        };
        (key, entry)
    }

    fn intern(&mut self, image: String) -> Arc<str> {
        if let Some(shared) = self.images.get(image.as_str()) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(image);
        self.images.insert(shared.clone());
        shared
    }

    fn intern_pull(&mut self, pull: Pull) -> Arc<Pull> {
        let pulls = self.pulls.get_or_insert_with(HashSet::new);
        if let Some(shared) = pulls.get(&pull) {
            return shared.clone();
        }
        let shared = Arc::new(pull);
        pulls.insert(shared.clone());
        shared
    }

    /// Forgets the image names (and pull contexts) no entry holds any
    /// more: always when `now`, else once they have doubled since the last time.
    fn prune_images(&mut self, now: bool) {
        if now || self.images.len() > 2 * self.images_pruned + 1024 {
            self.images.retain(|image| Arc::strong_count(image) > 1);
            self.images_pruned = self.images.len();
            if let Some(pulls) = self.pulls.as_mut() {
                pulls.retain(|pull| Arc::strong_count(pull) > 1);
            }
        }
    }

    fn complete(&self) -> bool {
        Watched::all().iter().all(|(kind, _)| {
            self.listed.contains(kind)
                || self.refused.contains_key(kind)
                || self.stale.contains_key(kind)
        })
    }
}

/// Whether a NodePool names a node class of one of `kinds`.
fn refers_to(object: &Value, kinds: &[&str]) -> bool {
    object
        .pointer("/spec/template/spec/nodeClassRef/kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| kinds.contains(&kind))
}

/// Seconds since the epoch.
fn epoch_now() -> u64 {
    super::cache::epoch_seconds(std::time::SystemTime::now())
}

/// An object's key: its namespace and name.
fn object_key(object: &DynamicObject) -> ObjectKey {
    (
        object.metadata.namespace.clone(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// What one object contributes, its image names (and pull context) not yet shared.
enum Read {
    Images(Vec<String>, Option<Pull>),
    Entry(Entry),
}

/// What one object contributes; with `pulls`, a workload's pull context too.
fn read(kind: Watched, object: &DynamicObject, pulls: bool) -> (ObjectKey, Read) {
    let key = object_key(object);
    let value = serde_json::to_value(object).unwrap_or(Value::Null);
    let entry = match kind {
        Watched::Workload(kind) => {
            let images = images_of(&value, kind);
            let pull = pulls
                .then(|| locate_pod_spec(&value, kind).ok())
                .flatten()
                .and_then(|(spec, _)| pull_of(kind, key.0.as_deref(), spec));
            return (key, Read::Images(images, pull));
        }
        Watched::Node => Entry::Node(Box::new(host_answers::node(&value))),
        Watched::RuntimeClass => Entry::RuntimeClass(Box::new(host_answers::runtime_class(&value))),
        Watched::Capacity(_) => {
            let at = |p: &str| value.pointer(p).cloned().unwrap_or(Value::Null);
            Entry::Capacity(Box::new(json!({
                "apiVersion": at("/apiVersion"), "kind": at("/kind"),
                "metadata": {"name": at("/metadata/name")},
                "spec": at("/spec"), "status": at("/status"),
            })))
        }
    };
    (key, Read::Entry(entry))
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

/// How often, at most, a kind the API server refuses is asked for again
/// (between half of this and all of it, jittered): a CRD installed, or
/// access granted, is picked up within this, without a restart.
pub const RECHECK: Duration = Duration::from_secs(30);

/// Watches `kind` into `inventory` for as long as the syncer runs: a list,
/// then a watch (kube-runtime's watcher: it resumes from the last resource
/// version or bookmark when a watch ends or breaks, and lists again on
/// 410 Gone), each failure followed by a jittered, doubling pause that
/// honours `Retry-After` ([`pace`](super::pace)). A kind the API server
/// refuses (404: not served; 403: not allowed) is asked for again every
/// [`RECHECK`].
pub async fn watch(
    client: Client,
    kind: Watched,
    resource: ApiResource,
    inventory: Arc<Inventory>,
    pace: Arc<Pace>,
    metrics: Arc<Status>,
) {
    let mut backoff = Backoff::default();
    let path = collection_path(&resource);
    let mut last_error: Option<Instant> = None;
    loop {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        // Lists come in pages of 500 (the watcher's default), so a large
        // kind is never one answer in memory; with a page size kube sends no
        // resourceVersion=0, so they are read from etcd, not from the watch
        // cache (which would ignore the limit). Bookmarks are asked for.
        let config = watcher::Config::default();
        let mut events = watcher::watcher(api, config).boxed();
        let mut failing = false;
        let refusal = loop {
            match events.next().await {
                // The watcher's own mark that it lists again: no answer yet.
                Some(Ok(Event::Init)) => inventory.apply(kind, Event::Init),
                Some(Ok(event)) => {
                    if std::mem::take(&mut failing) {
                        backoff.reset();
                        pace.wake();
                    }
                    inventory.apply(kind, event);
                }
                Some(Err(error)) => {
                    if let Some(code) = refused(&error) {
                        break Some(code);
                    }
                    metrics.metrics.watch_error(kind.name());
                    if let Some(after) = asked_to_wait(&error) {
                        pace.retry_after(after);
                    }
                    // Answered since the last error: this one starts afresh.
                    if let (Some(at), Some(ok)) = (last_error, pace.read_ok(&path)) {
                        if ok > at {
                            backoff.reset();
                        }
                    }
                    last_error = Some(Instant::now());
                    inventory.fail(kind, &error.to_string());
                    failing = true;
                    // A 410 the watcher does not relist on by itself (an
                    // answer to the request, not an event): start over.
                    let gone = code_of(&error) == Some(410);
                    pace.wait(backoff.delay()).await;
                    if gone {
                        break None;
                    }
                }
                None => break None,
            }
        };
        if let Some(code) = refusal {
            inventory.refuse(kind, code, refusal_message(kind, &resource, code));
            tokio::time::sleep(jittered(RECHECK)).await;
        }
    }
}

/// The path of a kind's collection across namespaces, as the client asks for it.
pub fn collection_path(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        format!("/api/{}/{}", resource.version, resource.plural)
    } else {
        format!(
            "/apis/{}/{}/{}",
            resource.group, resource.version, resource.plural
        )
    }
}

/// What the log says once when the API server refuses `kind`.
fn refusal_message(kind: Watched, resource: &ApiResource, code: u16) -> String {
    let name = if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    match (kind, code) {
        (Watched::Capacity(_), 404) => format!(
            "{name} is not served (no Karpenter): no launchable capacity from it; asked again within {RECHECK:?}"
        ),
        (_, 404) => format!("{name} is not served: its objects are left out of the facts; asked again within {RECHECK:?}"),
        _ => format!(
            "{name} may not be read ({code}): grant the syncer's ServiceAccount list and watch on it; asked again within {RECHECK:?}"
        ),
    }
}

/// The HTTP status an error carries, in any of the watcher's forms.
fn code_of(error: &watcher::Error) -> Option<u16> {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::WatchError(status) => Some(status.code),
        _ => None,
    }
}

/// The HTTP status of an error that retrying soon does not mend: the kind
/// is not served (404, its CRD removed) or not allowed (403).
fn refused(error: &watcher::Error) -> Option<u16> {
    code_of(error).filter(|code| matches!(code, 403 | 404))
}

/// The wait a 429's or 503's Status asks for (`details.retryAfterSeconds`).
fn asked_to_wait(error: &watcher::Error) -> Option<Duration> {
    let status = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::WatchError(status) => status,
        _ => return None,
    };
    let seconds = status.details.as_ref()?.retry_after_seconds;
    (seconds > 0).then(|| Duration::from_secs(u64::from(seconds)))
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
    fn pull_contexts_are_kept_only_with_pull_secrets_and_shared() {
        let with_secret = |name: &str, ns: &str, secret: &str| {
            object(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"template": {"spec": {"imagePullSecrets": [{"name": secret}],
                    "containers": [{"name": "c", "image": "corp/app:1"}]}}}}))
        };
        let kind = Watched::Workload(Kind::Deployment);
        let objects = || {
            vec![
                with_secret("a", "team-a", "regcred"),
                with_secret("a2", "team-a", "regcred"),
                with_secret("b", "team-b", "other"),
                deployment("c", "corp/app:1"),
            ]
        };
        let inventory = Inventory::new(true);
        list(&inventory, kind, objects());
        let snapshot = inventory.snapshot();
        let pulls = &snapshot.pulls["corp/app:1"];
        let seen: Vec<(&str, &[String], Option<&str>)> = pulls
            .iter()
            .map(|p| {
                (
                    p.namespace.as_str(),
                    p.secrets.as_slice(),
                    p.service_account.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("n", &[][..], Some("default")),
                ("team-a", &["regcred".to_string()][..], None),
                ("team-b", &["other".to_string()][..], None),
            ]
        );
        assert_eq!(snapshot.images.len(), 1);
        // One shared context for both objects of team-a.
        assert_eq!(inventory.lock().pulls.as_ref().unwrap().len(), 3);
        drop(snapshot);
        inventory.apply(kind, Event::Delete(with_secret("b", "team-b", "other")));
        list(
            &inventory,
            kind,
            vec![with_secret("a", "team-a", "regcred")],
        );
        assert_eq!(inventory.lock().pulls.as_ref().unwrap().len(), 1);
        // Negative: without --pull-secrets nothing of it is kept.
        let inventory = Inventory::default();
        list(&inventory, kind, objects());
        assert!(inventory.snapshot().pulls.is_empty());
        assert!(inventory.lock().pulls.is_none());
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

    fn list(inventory: &Inventory, kind: Watched, objects: Vec<DynamicObject>) {
        inventory.apply(kind, Event::Init);
        for object in objects {
            inventory.apply(kind, Event::InitApply(object));
        }
        inventory.apply(kind, Event::InitDone);
    }

    fn windows_node(name: &str) -> DynamicObject {
        object(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"nodeInfo": {"operatingSystem": "windows", "kernelVersion": "10.0.20348.1"}}}),
        )
    }

    #[test]
    fn the_inventory_is_complete_once_every_kind_is_listed_or_refused() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            assert!(!inventory.snapshot().complete);
            assert!(!inventory.synced());
            if kind == Watched::RuntimeClass {
                inventory.refuse(kind, 403, "forbidden".into());
            } else {
                list(&inventory, kind, Vec::new());
            }
        }
        assert!(inventory.snapshot().complete);
        assert!(inventory.synced());
        // Refused before it was ever listed: no RuntimeClasses published.
        let snapshot = inventory.snapshot();
        assert!(snapshot.unpublished.contains(&Watched::RuntimeClass));
        assert!(!snapshot.unpublished.contains(&Watched::Node));
        let health = inventory.health();
        let runtime = health.iter().find(|h| h.kind == "RuntimeClass").unwrap();
        assert_eq!(runtime.refused, Some(403));
        inventory.apply(Watched::Node, Event::Apply(windows_node("w")));
        let nodes = inventory.snapshot().nodes;
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
    }

    /// A watch failing after its first list holds nothing up: the kind
    /// keeps what it listed, the facts stay publishable, and it recovers
    /// at its next event or once a read of it succeeded after the error.
    #[test]
    fn a_failing_watch_keeps_its_objects_and_never_blocks_publishing() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            list(&inventory, kind, Vec::new());
        }
        list(&inventory, Watched::Node, vec![windows_node("w")]);
        let version = inventory.version();
        inventory.fail(Watched::Node, "connection reset");
        inventory.fail(Watched::Node, "connection reset");
        assert!(inventory.synced());
        assert_eq!(inventory.snapshot().nodes.len(), 1);
        assert_eq!(inventory.version(), version, "a failure changes no fact");
        let node_health = |inventory: &Inventory| {
            inventory
                .health()
                .into_iter()
                .find(|h| h.kind == "Node")
                .unwrap()
        };
        assert!(node_health(&inventory).recovering_since.is_some());
        // A read before the error, or one just after it, does not confirm.
        let before = Instant::now().checked_sub(Duration::from_secs(5)).unwrap();
        inventory.confirm(|_| Some(before));
        assert!(node_health(&inventory).recovering_since.is_some());
        inventory.confirm(|_| Some(Instant::now()));
        assert!(
            node_health(&inventory).recovering_since.is_some(),
            "confirmed within {CONFIRMED_AFTER:?} of the error"
        );
        // Any event ends it at once.
        inventory.apply(Watched::Node, Event::Apply(windows_node("w2")));
        assert_eq!(node_health(&inventory).recovering_since, None);
        // A relist in progress does not; its end does.
        inventory.fail(Watched::Workload(Kind::Pod), "410");
        inventory.apply(Watched::Workload(Kind::Pod), Event::Init);
        assert!(inventory
            .health()
            .iter()
            .any(|h| h.recovering_since.is_some()));
        inventory.apply(Watched::Workload(Kind::Pod), Event::InitDone);
        assert!(inventory
            .health()
            .iter()
            .all(|h| h.recovering_since.is_none()));
    }

    #[test]
    fn a_kind_failing_past_the_bound_is_published_as_stale_until_it_answers() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            list(&inventory, kind, Vec::new());
        }
        inventory.fail(Watched::Node, "500");
        inventory.check_stale(Duration::from_secs(300));
        assert!(inventory.snapshot().stale.is_empty());
        let version = inventory.version();
        inventory.check_stale(Duration::ZERO);
        let snapshot = inventory.snapshot();
        assert_eq!(snapshot.stale.len(), 1);
        assert_eq!(snapshot.stale[0].kind, "Node");
        assert!(snapshot.version > version, "stale is a change to publish");
        // Marked once.
        inventory.check_stale(Duration::ZERO);
        assert_eq!(inventory.snapshot().version, snapshot.version);
        inventory.apply(Watched::Node, Event::Init);
        inventory.apply(Watched::Node, Event::InitDone);
        assert!(inventory.snapshot().stale.is_empty());
    }

    /// A kind that cannot be listed from the start holds the first
    /// publication for at most `FIRST_LIST_WAIT`, then counts as stale.
    #[test]
    fn a_kind_never_listed_stops_holding_the_first_publication_once_stale() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            if kind != Watched::RuntimeClass {
                list(&inventory, kind, Vec::new());
            }
        }
        inventory.fail(Watched::RuntimeClass, "500");
        inventory.check_stale(Duration::from_secs(300));
        assert!(!inventory.synced(), "within FIRST_LIST_WAIT");
        inventory.check_stale(Duration::ZERO);
        assert!(inventory.synced());
        let snapshot = inventory.snapshot();
        assert!(snapshot.unpublished.contains(&Watched::RuntimeClass));
        assert_eq!(snapshot.stale[0].kind, "RuntimeClass");
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
        // Watched after their first list.
        list(&inventory, Watched::Capacity("NodePool"), Vec::new());
        list(&inventory, Watched::Capacity("EC2NodeClass"), Vec::new());
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

    /// Karpenter's CRDs removed at runtime (404): their objects leave the
    /// facts at once, a NodePool whose class kind is gone is left out
    /// rather than published as blocked, and a relist brings them back.
    #[test]
    fn kinds_no_longer_served_leave_the_facts_and_come_back_when_listed() {
        let inventory = Inventory::default();
        for (kind, _) in Watched::all() {
            list(&inventory, kind, Vec::new());
        }
        let pool = object(json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "w"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "w"}}}}}));
        let class = object(
            json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "w"}, "spec": {"amiSelectorTerms": [{"alias": "windows2022@latest"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        list(
            &inventory,
            Watched::Capacity("NodePool"),
            vec![pool.clone()],
        );
        list(
            &inventory,
            Watched::Capacity("EC2NodeClass"),
            vec![class.clone()],
        );
        list(&inventory, Watched::Node, vec![windows_node("n")]);
        assert_eq!(inventory.snapshot().nodes.len(), 2);
        let version = inventory.version();
        inventory.refuse(Watched::Capacity("EC2NodeClass"), 404, "gone".into());
        let snapshot = inventory.snapshot();
        assert!(snapshot.version > version);
        // Only the Node: the NodePool is not published as blocked.
        assert_eq!(snapshot.nodes.len(), 1, "{:?}", snapshot.nodes);
        assert_eq!(snapshot.nodes[0].name, "n");
        assert!(snapshot.complete && inventory.synced());
        // Refused again: nothing changes, nothing is said again.
        inventory.refuse(Watched::Capacity("EC2NodeClass"), 404, "gone".into());
        assert_eq!(inventory.version(), snapshot.version);
        // Negative: a 403 keeps what was listed.
        inventory.refuse(Watched::Node, 403, "forbidden".into());
        assert_eq!(inventory.snapshot().nodes.len(), 1);
        assert!(!inventory.snapshot().unpublished.contains(&Watched::Node));
        // Installed again: listed, served, the NodePool launches again.
        list(&inventory, Watched::Capacity("EC2NodeClass"), vec![class]);
        let nodes = inventory.snapshot().nodes;
        assert_eq!(nodes.len(), 2);
        assert!(nodes
            .iter()
            .any(|n| n.describe() == "NodePool w (none yet)" && n.usable()));
        let health = inventory.health();
        assert!(health
            .iter()
            .all(|h| h.kind == "Node" || h.refused.is_none()));
    }

    /// A relist writes in place: during it, what was listed stays (with
    /// what the new list brought); at its end, what it did not list goes,
    /// and one change is counted, none when it listed the same.
    #[test]
    fn a_relist_replaces_in_place_and_changes_nothing_when_the_same() {
        let inventory = Inventory::default();
        let kind = Watched::Workload(Kind::Deployment);
        list(
            &inventory,
            kind,
            vec![
                deployment("a", "corp/a:1"),
                deployment("b", "corp/shared:1"),
            ],
        );
        let version = inventory.version();
        // The same list again: no change.
        list(
            &inventory,
            kind,
            vec![
                deployment("a", "corp/a:1"),
                deployment("b", "corp/shared:1"),
            ],
        );
        assert_eq!(inventory.version(), version);
        inventory.apply(kind, Event::Init);
        inventory.apply(kind, Event::InitApply(deployment("c", "corp/shared:1")));
        // Mid-relist: the old objects are still there, with the new.
        let images = inventory.snapshot().images;
        assert!(images.contains("corp/a:1") && images.contains("corp/shared:1"));
        assert_eq!(inventory.version(), version, "counted at the end");
        inventory.apply(kind, Event::InitDone);
        assert!(inventory.version() > version);
        assert_eq!(
            inventory.snapshot().images,
            BTreeSet::from(["corp/shared:1".to_string()])
        );
        // Image names are shared, and forgotten once no entry names them.
        let objects = inventory.lock();
        assert_eq!(objects.images.len(), 1);
        let entries = objects.current.get(&kind).unwrap();
        assert_eq!(entries.len(), 1);
        drop(objects);
        // A Pod's slot stays small whatever the Node's size.
        assert!(
            std::mem::size_of::<Slot>() <= 40,
            "{}",
            std::mem::size_of::<Slot>()
        );
    }
}
