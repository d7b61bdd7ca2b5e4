//! A small Kubernetes API server on 127.0.0.1, since no real one runs in the
//! tests: what policy-server's kube client and `os-placement facts sync` ask
//! for, and nothing more. Discovery (`/api`, `/api/v1`, `/apis`,
//! `/apis/<group>/<version>`), LIST (label selectors, set-based ones too;
//! pages of `limit` objects with a `continue` token) and WATCH (chunked JSON
//! events from a resource version) of every kind in [`RESOURCES`], GET,
//! POST, PUT and DELETE of one object: a POST of an object that exists and
//! a PUT whose resourceVersion is not the stored one answer 409, as the
//! syncers' leader election on a Lease needs. Every request is recorded
//! with its label selector and bearer token, so a test can tell whether
//! policy-server answered from its informer cache, and count what each
//! client asked for. A kubeconfig for it is written by
//! [`FakeApi::kubeconfig`] ([`FakeApi::kubeconfig_as`] for a client of its own).
//!
//! The faults a real API server has, on demand, as the API conventions
//! describe them: watches closed or broken ([`FakeApi::reset_watches`]),
//! `BOOKMARK` events where `allowWatchBookmarks` asks for them, a bounded
//! event history whose compacted versions answer a watch with a `410
//! Expired` ERROR event ([`FakeApi::compact`]), lists and watches answered
//! 500, 429 with `Retry-After` or 410 ([`FakeApi::fault`]), and API groups
//! removed and restored at runtime as CRDs are ([`FakeApi::unserve`],
//! [`FakeApi::serve`]).

use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::{chunk, listen, read_request, respond, respond_with, start_chunked, Request};
use crate::error::Error;
use crate::selector;

/// One kind the server serves.
struct Resource {
    group_version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
}

const fn resource(
    group_version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Resource {
    Resource {
        group_version,
        plural,
        kind,
        namespaced,
    }
}

/// Every kind the policy, policy-server and the syncer read (Karpenter's
/// unless [`FakeApi::unserve`] says its CRDs are not installed).
const RESOURCES: &[Resource] = &[
    resource("v1", "pods", "Pod", true),
    resource("v1", "configmaps", "ConfigMap", true),
    // Read one by one with `facts sync --pull-secrets`.
    resource("v1", "secrets", "Secret", true),
    resource("v1", "serviceaccounts", "ServiceAccount", true),
    resource(
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
    ),
    resource("v1", "nodes", "Node", false),
    resource("v1", "namespaces", "Namespace", false),
    resource("apps/v1", "deployments", "Deployment", true),
    resource("apps/v1", "replicasets", "ReplicaSet", true),
    resource("apps/v1", "statefulsets", "StatefulSet", true),
    resource("apps/v1", "daemonsets", "DaemonSet", true),
    resource("batch/v1", "jobs", "Job", true),
    resource("batch/v1", "cronjobs", "CronJob", true),
    resource("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", false),
    resource("karpenter.sh/v1", "nodepools", "NodePool", false),
    resource(
        "karpenter.k8s.aws/v1",
        "ec2nodeclasses",
        "EC2NodeClass",
        false,
    ),
    resource("eks.amazonaws.com/v1", "nodeclasses", "NodeClass", false),
    resource("coordination.k8s.io/v1", "leases", "Lease", true),
];

/// One request the server saw: method, path and whether it was a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path.
    pub path: String,
    /// `watch=true` was asked.
    pub watch: bool,
    /// The label selector, if any.
    pub label_selector: Option<String>,
    /// The bearer token the client sent (its kubeconfig's), if any.
    pub token: Option<String>,
}

#[derive(Default)]
struct Store {
    /// By (kind, namespace, name), in that order, as etcd lists them.
    objects: std::collections::BTreeMap<Identity, Value>,
    version: u64,
    events: Vec<(u64, &'static str, Value)>,
    /// Versions up to this one are compacted: a watch from before it is
    /// answered 410 Expired.
    compacted: u64,
    seen: Vec<Seen>,
}

/// What lists and watches are answered while a fault is on
/// ([`FakeApi::fault`]); writes and single objects are answered as usual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiFault {
    /// 500 Internal Server Error.
    ServerError,
    /// 429 Too Many Requests, with `Retry-After` (and the Status's
    /// `retryAfterSeconds`) of this many seconds, as API Priority and
    /// Fairness answers.
    TooManyRequests(u32),
    /// Watches: a `410 Expired` ERROR event; lists: 410 for a `continue`
    /// token, 500 otherwise.
    Gone,
    /// 500, 429 (1 s) and 410 in turn, request by request.
    Mixed,
}

struct Shared {
    store: Mutex<Store>,
    changed: Condvar,
    stop: AtomicBool,
    /// Accept connections, answer nothing (an API server that hangs).
    stalled: AtomicBool,
    /// API groups not served (their CRDs not installed).
    unserved: Mutex<Vec<String>>,
    /// Bumped by [`FakeApi::reset_watches`]: open watches break.
    resets: std::sync::atomic::AtomicU64,
    /// The fault lists and watches are answered with, if any.
    fault: Mutex<Option<ApiFault>>,
    /// Requests answered with a fault, for [`ApiFault::Mixed`]'s turns.
    faulted: std::sync::atomic::AtomicU64,
    /// How often a watch that asked for bookmarks gets one, milliseconds.
    bookmark_every: std::sync::atomic::AtomicU64,
    /// (plural, namespace) the client may not read: answered 403.
    forbidden: Mutex<Vec<(String, String)>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running server; it stops, and its watches end, when dropped.
pub struct FakeApi {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Starts a server holding `objects` (each with apiVersion, kind and
    /// metadata.name, and metadata.namespace when namespaced).
    pub fn start(objects: Vec<Value>) -> Result<FakeApi, Error> {
        let (listener, port) = listen("the fake API server")?;
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            unserved: Mutex::new(Vec::new()),
            resets: std::sync::atomic::AtomicU64::new(0),
            fault: Mutex::new(None),
            faulted: std::sync::atomic::AtomicU64::new(0),
            bookmark_every: std::sync::atomic::AtomicU64::new(5_000),
            forbidden: Mutex::new(Vec::new()),
        });
        for object in objects {
            write(&shared, object, "ADDED");
        }
        let accept = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                while !shared.stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let shared = shared.clone();
                            std::thread::spawn(move || serve(&stream, &shared));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Ok(FakeApi {
            port,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Writes a kubeconfig for this server at `path`.
    pub fn kubeconfig(&self, path: &Path) -> Result<(), Error> {
        write_kubeconfig(path, &self.url())
    }

    /// Writes a kubeconfig whose client sends `token`, so its requests can
    /// be told apart ([`Seen::token`]).
    pub fn kubeconfig_as(&self, path: &Path, token: &str) -> Result<(), Error> {
        write_kubeconfig_with_token(path, &self.url(), token)
    }

    /// The objects of `kind` it holds now.
    pub fn objects(&self, kind: &str) -> Vec<Value> {
        let store = self.shared.lock();
        of_kind(&store, kind, None, None)
            .map(|(_, o)| o.clone())
            .collect()
    }

    /// Adds or replaces an object, as a client's write would.
    pub fn put(&self, object: Value) {
        write(&self.shared, object, "MODIFIED");
    }

    /// From now on, connections are accepted and never answered, and open
    /// watches go silent: an API server that hangs.
    pub fn stall(&self) {
        self.shared.stalled.store(true, Ordering::SeqCst);
    }

    /// From now on, `group_version` (`karpenter.sh/v1`) is not served: as
    /// on a cluster without those CRDs, its paths answer 404. As when a
    /// CRD is deleted, its objects are deleted first (a DELETED event
    /// each), then its open watches end.
    pub fn unserve(&self, group_version: &str) {
        let mut store = self.shared.lock();
        let gone: Vec<Identity> = store
            .objects
            .iter()
            .filter(|(_, o)| *at(o, &["apiVersion"]) == group_version)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some(object) = store.objects.remove(&id) {
                store.version += 1;
                let version = store.version;
                store.events.push((version, "DELETED", object));
            }
        }
        drop(store);
        self.shared.changed.notify_all();
        // The DELETED events reach the open watches before they end.
        std::thread::sleep(Duration::from_millis(400));
        if let Ok(mut unserved) = self.shared.unserved.lock() {
            unserved.push(group_version.to_string());
        }
    }

    /// `group_version` is served again (its CRD reinstalled, empty).
    pub fn serve(&self, group_version: &str) {
        if let Ok(mut unserved) = self.shared.unserved.lock() {
            unserved.retain(|u| u != group_version);
        }
    }

    /// Every open watch breaks now: its connection is shut down without
    /// the end of its chunked body, as a load balancer's reset or an API
    /// server's restart leaves it. The clients resume from their last
    /// resource version.
    pub fn reset_watches(&self) {
        self.shared.resets.fetch_add(1, Ordering::SeqCst);
        self.shared.changed.notify_all();
    }

    /// Lists and watches are answered with `fault` from now on (`None`:
    /// answered again). A fault also breaks the open watches.
    pub fn fault(&self, fault: Option<ApiFault>) {
        if let Ok(mut current) = self.shared.fault.lock() {
            *current = fault;
        }
        if fault.is_some() {
            self.reset_watches();
        }
    }

    /// Forgets the event history up to now, as etcd's compaction does: a
    /// watch resuming from an older version is answered 410 Expired.
    pub fn compact(&self) {
        let mut store = self.shared.lock();
        store.compacted = store.version;
        store.events.clear();
    }

    /// A watch that asked for bookmarks gets one every `every` (5 s unless set).
    pub fn bookmark_every(&self, every: Duration) {
        let millis = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        self.shared.bookmark_every.store(millis, Ordering::SeqCst);
    }

    /// From now on, `plural` (`secrets`) in `namespace` may not be read:
    /// answered 403 Forbidden, as RBAC answers a ServiceAccount bound
    /// only in other namespaces.
    pub fn forbid(&self, plural: &str, namespace: &str) {
        if let Ok(mut forbidden) = self.shared.forbidden.lock() {
            forbidden.push((plural.to_string(), namespace.to_string()));
        }
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().seen.clone()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// A kubeconfig whose one context points at `server`.
pub fn write_kubeconfig(path: &Path, server: &str) -> Result<(), Error> {
    write_kubeconfig_with_token(path, server, "fake")
}

/// A kubeconfig whose one context points at `server`, with `token`.
pub fn write_kubeconfig_with_token(path: &Path, server: &str, token: &str) -> Result<(), Error> {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\nusers:\n- name: fake\n  user:\n    token: {token}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\n"
    );
    std::fs::write(path, text).map_err(Error::io(path.display().to_string()))
}

/// The value at `path` (`Null` when absent): reading never panics.
fn at<'a>(object: &'a Value, path: &[&str]) -> &'a Value {
    path.iter()
        .try_fold(object, |v, key| v.get(key))
        .unwrap_or(&Value::Null)
}

/// Sets the value at `path`, making objects on the way (replacing what is not one).
fn set(object: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = object;
    for key in parents {
        if !current.is_object() {
            *current = json!({});
        }
        let Some(map) = current.as_object_mut() else {
            return;
        };
        current = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
    if !current.is_object() {
        *current = json!({});
    }
    if let Some(map) = current.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Stores `object` with the next resource version, replacing one of the
/// same kind, namespace and name, and records the event.
fn write(shared: &Shared, object: Value, event: &'static str) -> Value {
    let mut store = shared.lock();
    let written = store_object(&mut store, object, event);
    drop(store);
    shared.changed.notify_all();
    written
}

/// [`write`] under a lock the caller holds, so that a check before it (a
/// resourceVersion, an existing name) and the write are one step.
fn store_object(store: &mut Store, mut object: Value, event: &'static str) -> Value {
    store.version += 1;
    let version = store.version;
    set(
        &mut object,
        &["metadata", "resourceVersion"],
        json!(version.to_string()),
    );
    let replaced = store.objects.insert(identity(&object), object.clone());
    let event = match (replaced, event) {
        (Some(_), _) => "MODIFIED",
        (None, "MODIFIED") => "ADDED",
        (None, event) => event,
    };
    store.events.push((version, event, object.clone()));
    object
}

/// (kind, namespace, name).
type Identity = (String, String, String);

fn identity(object: &Value) -> Identity {
    let text = |path: &[&str]| at(object, path).as_str().unwrap_or_default().to_owned();
    (
        text(&["kind"]),
        text(&["metadata", "namespace"]),
        text(&["metadata", "name"]),
    )
}

/// What a path names.
enum Target<'a> {
    Versions,
    Groups,
    Resources(&'a str),
    Collection(&'static Resource, Option<&'a str>),
    Item(&'static Resource, Option<&'a str>, &'a str),
}

fn target(path: &str) -> Option<Target<'_>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group_version, rest): (String, &[&str]) = match parts.as_slice() {
        ["api"] => return Some(Target::Versions),
        ["apis"] => return Some(Target::Groups),
        ["api", "v1", rest @ ..] => ("v1".into(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let find = |plural: &str| {
        RESOURCES
            .iter()
            .find(|r| r.group_version == group_version && r.plural == plural)
    };
    Some(match rest {
        [] => {
            let known = RESOURCES
                .iter()
                .find(|r| r.group_version == group_version)?;
            Target::Resources(known.group_version)
        }
        ["namespaces", namespace, plural] => Target::Collection(find(plural)?, Some(namespace)),
        ["namespaces", namespace, plural, name] => {
            Target::Item(find(plural)?, Some(namespace), name)
        }
        [plural] => Target::Collection(find(plural)?, None),
        [plural, name] => Target::Item(find(plural)?, None, name),
        _ => return None,
    })
}

/// Holds a connection without answering until the server stops.
fn hang(shared: &Shared) {
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve(stream: &TcpStream, shared: &Shared) {
    if shared.stalled.load(Ordering::SeqCst) {
        return hang(shared);
    }
    let Some(request) = read_request(stream) else {
        return;
    };
    let watch = matches!(request.param("watch"), Some("true" | "1"));
    shared.lock().seen.push(Seen {
        method: request.method.clone(),
        path: request.path.clone(),
        watch,
        label_selector: request.param("labelSelector").map(str::to_owned),
        token: request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned),
    });
    let unserved = shared
        .unserved
        .lock()
        .map(|u| u.clone())
        .unwrap_or_default();
    let target = target(&request.path).filter(|t| match t {
        Target::Resources(gv) => !unserved.iter().any(|u| u == gv),
        Target::Collection(r, _) | Target::Item(r, _, _) => {
            !unserved.iter().any(|u| u == r.group_version)
        }
        _ => true,
    });
    if let Some(
        Target::Collection(resource, Some(namespace)) | Target::Item(resource, Some(namespace), _),
    ) = &target
    {
        let forbidden = shared
            .forbidden
            .lock()
            .map(|f| {
                f.iter()
                    .any(|(p, n)| p == resource.plural && n == namespace)
            })
            .unwrap_or(false);
        if forbidden {
            let name = match &target {
                Some(Target::Item(_, _, name)) => format!("{} \"{name}\" is", resource.plural),
                _ => format!("{} is", resource.plural),
            };
            let (code, body) = status(
                403,
                "Forbidden",
                &format!(
                    "{name} forbidden: User \"system:serviceaccount:os-placement:os-placement-facts-sync\" cannot {} resource \"{}\" in API group \"\" in the namespace \"{namespace}\"",
                    request.method.to_lowercase(),
                    resource.plural
                ),
            );
            return respond(
                stream,
                code,
                "application/json",
                body.to_string().as_bytes(),
            );
        }
    }
    let collection_read = request.method == "GET" && matches!(target, Some(Target::Collection(..)));
    if collection_read {
        if let Some(fault) = current_fault(shared) {
            return answer_fault(stream, shared, fault, watch, &request);
        }
    }
    let (status, body) = match target {
        None => status(404, "NotFound", &format!("no route for {}", request.path)),
        Some(Target::Versions) => (200, json!({"kind": "APIVersions", "versions": ["v1"]})),
        Some(Target::Groups) => (200, groups(&unserved)),
        Some(Target::Resources(group_version)) => (200, resources(group_version)),
        Some(Target::Collection(resource, namespace)) => match request.method.as_str() {
            "GET" if watch => {
                return watch_collection(stream, shared, resource, namespace, &request)
            }
            "GET" => list(shared, resource, namespace, &request),
            "POST" => create(shared, resource, namespace, &request),
            _ => status(405, "MethodNotAllowed", "not served"),
        },
        Some(Target::Item(resource, namespace, name)) => {
            item(shared, resource, namespace, name, &request)
        }
    };
    respond(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
    );
}

fn current_fault(shared: &Shared) -> Option<ApiFault> {
    *shared
        .fault
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Answers a list or watch with `fault`.
fn answer_fault(
    stream: &TcpStream,
    shared: &Shared,
    fault: ApiFault,
    watch: bool,
    request: &Request,
) {
    let turn = shared.faulted.fetch_add(1, Ordering::SeqCst);
    let fault = match fault {
        ApiFault::Mixed => match turn % 3 {
            0 => ApiFault::ServerError,
            1 => ApiFault::TooManyRequests(1),
            _ => ApiFault::Gone,
        },
        fault => fault,
    };
    let (code, body, retry_after) = match fault {
        ApiFault::TooManyRequests(seconds) => {
            let (code, mut body) = status(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            );
            set(
                &mut body,
                &["details"],
                json!({"retryAfterSeconds": seconds}),
            );
            (code, body, Some(seconds.to_string()))
        }
        ApiFault::Gone if watch => {
            // As the watch cache answers a too old version: 200, then an ERROR event.
            if start_chunked(stream, "application/json").is_ok() {
                let (_, body) = status(410, "Expired", "too old resource version");
                let event = json!({"type": "ERROR", "object": body});
                let _ = chunk(stream, format!("{event}\n").as_bytes());
                let _ = chunk(stream, b"");
            }
            return;
        }
        ApiFault::Gone if request.param("continue").is_some() => {
            let (code, body) = status(410, "Expired", "the provided continue parameter is too old");
            (code, body, None)
        }
        _ => {
            let (code, body) = status(
                500,
                "InternalError",
                "an error on the server has prevented the request from succeeding",
            );
            (code, body, None)
        }
    };
    let text = body.to_string();
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(after) = retry_after.as_deref() {
        headers.push(("Retry-After", after));
    }
    respond_with(stream, code, &headers, text.as_bytes());
}

fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code}),
    )
}

fn groups(unserved: &[String]) -> Value {
    let mut names: Vec<&str> = RESOURCES
        .iter()
        .map(|r| r.group_version)
        .filter(|gv| gv.contains('/') && !unserved.iter().any(|u| u == gv))
        .collect();
    names.dedup();
    let groups: Vec<Value> = names
        .iter()
        .map(|gv| {
            let (group, version) = gv.split_once('/').unwrap_or((gv, ""));
            let entry = json!({"groupVersion": gv, "version": version});
            json!({"name": group, "versions": [entry], "preferredVersion": entry})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resources(group_version: &str) -> Value {
    let list: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group_version == group_version)
        .map(|r| {
            json!({"name": r.plural, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                   "kind": r.kind, "verbs": ["get", "list", "watch", "create", "update", "delete"]})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list})
}

/// Whether `object` is of `resource`, in `namespace` (any when `None`), and
/// matches the request's label selector.
fn selected(
    object: &Value,
    resource: &Resource,
    namespace: Option<&str>,
    request: &Request,
) -> bool {
    let labels = selector::parse(request.param("labelSelector"));
    is_selected(object, resource, namespace, labels.as_ref().ok())
}

/// As [`selected`], with the request's label selector parsed once (`None`:
/// one that does not parse, which selects nothing).
fn is_selected(
    object: &Value,
    resource: &Resource,
    namespace: Option<&str>,
    labels: Option<&selector::Selector>,
) -> bool {
    *at(object, &["kind"]) == resource.kind
        && *at(object, &["apiVersion"]) == resource.group_version
        && namespace.is_none_or(|ns| *at(object, &["metadata", "namespace"]) == ns)
        && labels.is_some_and(|labels| selector::labels_match(labels, object))
}

/// A page of the selected objects: `limit` of them from the offset the
/// `continue` token holds, with the token of the next page when there is one.
fn list(
    shared: &Shared,
    resource: &Resource,
    namespace: Option<&str>,
    request: &Request,
) -> (u16, Value) {
    let store = shared.lock();
    // The token names the last object of the page before: `namespace/name`.
    let after = match request.param("continue") {
        None => None,
        Some(token) => match token.split_once('/') {
            Some((ns, name)) => Some((ns.to_string(), name.to_string())),
            None => return status(400, "BadRequest", "the continue token is not valid"),
        },
    };
    let limit: usize = request
        .param("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let labels = selector::parse(request.param("labelSelector"));
    let mut page: Vec<(&Identity, &Value)> = of_kind(&store, resource.kind, namespace, after)
        .filter(|(_, o)| is_selected(o, resource, namespace, labels.as_ref().ok()))
        .take(limit.saturating_add(1))
        .collect();
    let more = page.len() > limit;
    page.truncate(limit);
    let version = store.version.to_string();
    let metadata = match page.last().filter(|_| more) {
        Some(((_, ns, name), _)) => {
            json!({"resourceVersion": version, "continue": format!("{ns}/{name}")})
        }
        None => json!({"resourceVersion": version}),
    };
    let items: Vec<&Value> = page.into_iter().map(|(_, o)| o).collect();
    (
        200,
        json!({"kind": format!("{}List", resource.kind), "apiVersion": resource.group_version,
               "metadata": metadata, "items": items}),
    )
}

/// The stored objects of `kind` (in `namespace`, when given) in key order,
/// from just after `after` (namespace, name): a range of the store, so a
/// page costs what it holds, not what the store holds.
fn of_kind<'a>(
    store: &'a Store,
    kind: &'a str,
    namespace: Option<&'a str>,
    after: Option<(String, String)>,
) -> impl Iterator<Item = (&'a Identity, &'a Value)> + 'a {
    use std::ops::Bound;
    let start = match after {
        Some((ns, name)) => Bound::Excluded((kind.to_string(), ns, name)),
        None => Bound::Included((
            kind.to_string(),
            namespace.unwrap_or_default().to_string(),
            String::new(),
        )),
    };
    store
        .objects
        .range((start, Bound::Unbounded))
        .take_while(move |((k, ns, _), _)| k == kind && namespace.is_none_or(|n| n == ns))
}

/// Streams the events after the request's resource version until its
/// `timeoutSeconds` (at most a minute) or the server stops.
fn watch_collection(
    stream: &TcpStream,
    shared: &Shared,
    resource: &Resource,
    namespace: Option<&str>,
    request: &Request,
) {
    let mut from: u64 = request
        .param("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let bookmarks = matches!(request.param("allowWatchBookmarks"), Some("true" | "1"));
    let resets = shared.resets.load(Ordering::SeqCst);
    let expired = {
        let store = shared.lock();
        from != 0 && from < store.compacted
    };
    let limit = request
        .param("timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(60), |s: u64| {
            Duration::from_secs(s.min(60))
        });
    if start_chunked(stream, "application/json").is_err() {
        return;
    }
    if expired {
        let (_, body) = status(410, "Expired", &format!("too old resource version: {from}"));
        let event = json!({"type": "ERROR", "object": body});
        let _ = chunk(stream, format!("{event}\n").as_bytes());
        let _ = chunk(stream, b"");
        return;
    }
    let labels = selector::parse(request.param("labelSelector"));
    let started = Instant::now();
    let mut bookmarked = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) && started.elapsed() < limit {
        if shared.stalled.load(Ordering::SeqCst) {
            return hang(shared);
        }
        if shared.resets.load(Ordering::SeqCst) != resets {
            // Broken off: no end of the chunked body.
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
        let unserved = shared
            .unserved
            .lock()
            .map(|u| u.iter().any(|gv| gv == resource.group_version))
            .unwrap_or(false);
        if unserved {
            break;
        }
        let every = Duration::from_millis(shared.bookmark_every.load(Ordering::SeqCst));
        if bookmarks && bookmarked.elapsed() >= every {
            bookmarked = Instant::now();
            // Every event up to `from` was sent: the client may resume there.
            let event = json!({"type": "BOOKMARK", "object": {"kind": resource.kind,
                "apiVersion": resource.group_version,
                "metadata": {"resourceVersion": from.to_string()}}});
            if chunk(stream, format!("{event}\n").as_bytes()).is_err() {
                return;
            }
        }
        let store = shared.lock();
        // Events are in version order: only those after `from` are read.
        let start = store
            .events
            .partition_point(|(version, _, _)| *version <= from);
        let events: Vec<Value> = store
            .events
            .get(start..)
            .unwrap_or_default()
            .iter()
            .filter(|(_, _, object)| is_selected(object, resource, namespace, labels.as_ref().ok()))
            .map(|(_, kind, object)| json!({"type": kind, "object": object}))
            .collect();
        from = store.version;
        let (store, _) = match shared
            .changed
            .wait_timeout(store, Duration::from_millis(200))
        {
            Ok(woken) => woken,
            Err(poisoned) => poisoned.into_inner(),
        };
        drop(store);
        for event in events {
            let line = format!("{event}\n");
            if chunk(stream, line.as_bytes()).is_err() {
                return;
            }
        }
    }
    let _ = chunk(stream, b"");
}

fn create(
    shared: &Shared,
    resource: &Resource,
    namespace: Option<&str>,
    request: &Request,
) -> (u16, Value) {
    let Ok(mut object) = serde_json::from_slice::<Value>(&request.body) else {
        return status(400, "BadRequest", "the body is not JSON");
    };
    set(&mut object, &["apiVersion"], json!(resource.group_version));
    set(&mut object, &["kind"], json!(resource.kind));
    if let Some(namespace) = namespace {
        set(&mut object, &["metadata", "namespace"], json!(namespace));
    }
    let mut store = shared.lock();
    if store.objects.contains_key(&identity(&object)) {
        return status(409, "AlreadyExists", "the object exists");
    }
    let created = store_object(&mut store, object, "ADDED");
    drop(store);
    shared.changed.notify_all();
    (201, created)
}

/// Replaces `current` with the request's object, unless the object's
/// resourceVersion is not the stored one (409), checked and written as one step.
fn replace(shared: &Shared, current: &Value, request: &Request) -> (u16, Value) {
    let Ok(mut object) = serde_json::from_slice::<Value>(&request.body) else {
        return status(400, "BadRequest", "the body is not JSON");
    };
    for path in [&["apiVersion"][..], &["kind"], &["metadata", "namespace"]] {
        set(&mut object, path, at(current, path).clone());
    }
    let mut store = shared.lock();
    let Some(stored) = store.objects.get(&identity(current)) else {
        return status(404, "NotFound", "the object is gone");
    };
    let version = ["metadata", "resourceVersion"];
    let asked = at(&object, &version);
    if !asked.is_null() && asked != at(stored, &version) {
        return status(409, "Conflict", "the object has been modified");
    }
    let written = store_object(&mut store, object, "MODIFIED");
    drop(store);
    shared.changed.notify_all();
    (200, written)
}

fn item(
    shared: &Shared,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
    request: &Request,
) -> (u16, Value) {
    let found = {
        let store = shared.lock();
        let key = (
            resource.kind.to_string(),
            namespace.unwrap_or_default().to_string(),
            name.to_string(),
        );
        store
            .objects
            .get(&key)
            .filter(|o| selected(o, resource, namespace, request))
            .cloned()
    };
    let Some(current) = found else {
        return status(
            404,
            "NotFound",
            &format!("{} {name:?} not found", resource.plural),
        );
    };
    match request.method.as_str() {
        "GET" => (200, current),
        "PUT" => replace(shared, &current, request),
        "DELETE" => {
            let mut store = shared.lock();
            store.objects.remove(&identity(&current));
            store.version += 1;
            let version = store.version;
            store.events.push((version, "DELETED", current.clone()));
            drop(store);
            shared.changed.notify_all();
            (200, current)
        }
        _ => status(405, "MethodNotAllowed", "not served"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use xtask::local::http::http;

    #[test]
    fn lists_filter_by_namespace_and_labels_and_writes_bump_versions() {
        let api = FakeApi::start(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "namespace": "facts", "labels": {"x": "1"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "b", "namespace": "other", "labels": {"x": "1"}}}),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}),
        ])
        .unwrap();
        let get = |path: &str| {
            let answer = http(api.port, "GET", path, &[], b"").unwrap();
            (
                answer.status,
                serde_json::from_slice::<Value>(&answer.body).unwrap(),
            )
        };
        let (code, list) = get("/api/v1/namespaces/facts/configmaps?labelSelector=x%3D1");
        assert_eq!(code, 200);
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        assert_eq!(list["metadata"]["resourceVersion"], "3");
        let (_, list) = get("/api/v1/configmaps?labelSelector=x%3D2");
        assert!(list["items"].as_array().unwrap().is_empty());
        let (_, nodes) = get("/api/v1/nodes");
        assert_eq!(nodes["kind"], "NodeList");
        let (code, _) = get("/api/v1/namespaces/facts/configmaps/missing");
        assert_eq!(code, 404);
        let (_, discovery) = get("/api/v1");
        assert!(discovery["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "configmaps" && r["namespaced"] == true));
        let send = |method: &str, path: &str, body: &Value| {
            http(api.port, method, path, &[], body.to_string().as_bytes())
                .unwrap()
                .status
        };
        let created = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
        let configmaps = "/api/v1/namespaces/facts/configmaps";
        assert_eq!(send("POST", configmaps, &created), 201);
        assert_eq!(send("POST", configmaps, &created), 409);
        let stale = json!({"metadata": {"name": "c", "resourceVersion": "1"}});
        assert_eq!(send("PUT", &format!("{configmaps}/c"), &stale), 409);
        assert_eq!(api.objects("ConfigMap").len(), 3);
        assert!(api.seen().iter().any(|s| s.method == "POST"));
    }

    /// Leases as leader election uses them: created once, read, and
    /// replaced only by a writer that read the current version.
    #[test]
    fn leases_are_created_once_and_replaced_only_at_their_version() {
        let api = FakeApi::start(Vec::new()).unwrap();
        let leases = "/apis/coordination.k8s.io/v1/namespaces/facts/leases";
        let lease = |version: Option<&str>, holder: &str| {
            let mut lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l"}, "spec": {"holderIdentity": holder}});
            if let Some(version) = version {
                lease["metadata"]["resourceVersion"] = json!(version);
            }
            lease.to_string().into_bytes()
        };
        let send = |method: &str, path: &str, body: &[u8]| {
            let answer = http(
                api.port,
                method,
                path,
                &[("Authorization", "Bearer a")],
                body,
            )
            .unwrap();
            (
                answer.status,
                serde_json::from_slice::<Value>(&answer.body).unwrap_or(Value::Null),
            )
        };
        let item = format!("{leases}/l");
        assert_eq!(send("GET", &item, b"").0, 404);
        let (code, created) = send("POST", leases, &lease(None, "a"));
        assert_eq!(code, 201);
        assert_eq!(send("POST", leases, &lease(None, "b")).0, 409);
        let version = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let (code, taken) = send("PUT", &item, &lease(Some(&version), "b"));
        assert_eq!(
            (code, taken["spec"]["holderIdentity"].as_str()),
            (200, Some("b"))
        );
        // The version read before that write is stale now.
        assert_eq!(send("PUT", &item, &lease(Some(&version), "c")).0, 409);
        assert_eq!(send("GET", &item, b"").1["spec"]["holderIdentity"], "b");
        assert_eq!(api.objects("Lease")[0]["metadata"]["namespace"], "facts");
        assert!(api.seen().iter().all(|s| s.token.as_deref() == Some("a")));
    }

    /// Lists page over one kind only, in (namespace, name) order, each
    /// object once, with a token naming the page's last object.
    #[test]
    fn lists_page_over_their_kind_in_order_with_tokens() {
        let mut objects: Vec<Value> = (0..1_203)
            .map(|i| {
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": format!("p-{i:05}"), "namespace": format!("ns-{}", i % 3)}})
            })
            .collect();
        objects.extend((0..50).map(
            |i| json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n-{i}")}}),
        ));
        let api = FakeApi::start(objects).unwrap();
        let page = |path: &str| -> Value {
            serde_json::from_slice(&http(api.port, "GET", path, &[], b"").unwrap().body).unwrap()
        };
        let all = |base: &str| -> (Vec<String>, usize) {
            let mut names = Vec::new();
            let mut pages = 0;
            let mut token: Option<String> = None;
            loop {
                let path = match &token {
                    Some(t) => format!("{base}?limit=100&continue={t}"),
                    None => format!("{base}?limit=100"),
                };
                let list = page(&path);
                pages += 1;
                for item in list["items"].as_array().unwrap() {
                    let ns = item["metadata"]["namespace"].as_str().unwrap_or("");
                    names.push(format!(
                        "{ns}/{}",
                        item["metadata"]["name"].as_str().unwrap()
                    ));
                }
                match list["metadata"]["continue"].as_str() {
                    Some(t) => token = Some(t.to_string()),
                    None => break,
                }
            }
            (names, pages)
        };
        let (pods, pages) = all("/api/v1/pods");
        assert_eq!((pods.len(), pages), (1_203, 13));
        let mut sorted = pods.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, pods, "in order, each once");
        // A namespace's list holds its Pods only.
        let (ns1, _) = all("/api/v1/namespaces/ns-1/pods");
        assert_eq!(ns1.len(), 401);
        assert!(ns1.iter().all(|p| p.starts_with("ns-1/")));
        // Other kinds are not in the range; a bad token is refused.
        let (nodes, pages) = all("/api/v1/nodes");
        assert_eq!((nodes.len(), pages), (50, 1));
        let bad = http(
            api.port,
            "GET",
            "/api/v1/pods?limit=10&continue=oops",
            &[],
            b"",
        )
        .unwrap();
        assert_eq!(bad.status, 400);
        assert_eq!(api.objects("Node").len(), 50);
    }
}
