//! The facts syncer against a cluster of 10,000 Pods on the fake API, two
//! replicas as deploy/facts-sync.yaml runs them: they elect a leader on
//! the Lease, and only the leader writes; each lists each kind once (in
//! pages), then follows the cluster by watches; a new workload's image and
//! a new node are published within seconds, rewriting only the ConfigMaps
//! whose content changed; with nothing changing, the only requests are the
//! Lease's renewals and reads and the heartbeat's writes. Stopped (SIGTERM),
//! the leader gives the Lease up and the standby publishes within seconds;
//! killed, its Lease expires first. The figures (requests by kind and
//! replica, reaction and takeover times, memory) are printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use os_placement_e2e::faults::api::{FakeApi, Seen};
use os_placement_e2e::faults::registry::{Answer, Scripted};
use os_placement_e2e::http::http;
use serde_json::{json, Value};

use super::setup::{cli_binary, deployment};

/// Pods in the cluster, spread over this many images and namespaces.
const PODS: usize = 10_000;
const IMAGES: usize = 400;
pub(super) const NODES: usize = 200;

/// No registry listens there: every lookup fails at once, and is published
/// as a failed lookup. It is on 127.0.0.1, so it must be allowed.
pub(super) const NO_REGISTRY: &str = "127.0.0.1:9";

/// The syncer's defaults: the heartbeat's interval, the Lease's duration.
const HEARTBEAT: Duration = Duration::from_secs(20);
const LEASE: Duration = Duration::from_secs(15);

pub(super) const CLUSTER_MAP: &str = "os-placement-facts-cluster";

pub(super) fn pod(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("app-{i}"), "namespace": format!("team-{}", i % 50)},
        "spec": {"nodeName": format!("node-{}", i % NODES), "containers": [
            {"name": "app", "image": format!("{NO_REGISTRY}/team-{}/app:{}", i % 50, i % IMAGES)},
            {"name": "proxy", "image": format!("{NO_REGISTRY}/mesh/proxy:1.{}", i % 3)}]}})
}

pub(super) fn node(i: usize) -> Value {
    let os = if i % 10 == 3 { "windows" } else { "linux" };
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("node-{i}"),
        "labels": {"kubernetes.io/os": os, "kubernetes.io/hostname": format!("node-{i}"),
                   "topology.kubernetes.io/zone": format!("zone-{}", i % 3)}},
        "status": {"nodeInfo": {"operatingSystem": os, "architecture": "amd64",
                   "kernelVersion": if os == "windows" { "10.0.20348.2700" } else { "6.1.0" }}}})
}

fn cluster() -> Vec<Value> {
    let mut objects: Vec<Value> = (0..PODS).map(pod).collect();
    objects.extend((0..NODES).map(node));
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    objects
}

/// What a request was: `LIST pods`, `WATCH nodes`, `PUT configmaps`...
pub(super) fn kind(s: &Seen) -> String {
    let verb = match (s.method.as_str(), s.watch) {
        ("GET", true) => "WATCH",
        ("GET", false) if s.path.rsplit('/').next().is_some_and(|p| p.ends_with('s')) => "LIST",
        (method, _) => method,
    };
    let resource = s
        .path
        .split('/')
        .rev()
        .find(|p| p.chars().all(|c| c.is_ascii_lowercase()) && p.ends_with('s'))
        .unwrap_or("?");
    format!("{verb} {resource}")
}

/// Requests by kind.
pub(super) fn tally<'a>(seen: impl IntoIterator<Item = &'a Seen>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for s in seen {
        *counts.entry(kind(s)).or_insert(0) += 1;
    }
    counts
}

pub(super) fn is_write(s: &Seen) -> bool {
    matches!(s.method.as_str(), "POST" | "PUT" | "DELETE")
}

/// Writes of ConfigMaps other than the cluster's (which the heartbeat rewrites).
pub(super) fn shard_writes(seen: &[Seen]) -> usize {
    seen.iter()
        .filter(|s| is_write(s) && s.path.contains("/configmaps") && !s.path.ends_with(CLUSTER_MAP))
        .count()
}

/// How long until `done`, polled every 50 ms; `None` past `limit`.
pub(super) fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn config_map<'a>(maps: &'a [Value], name: &str) -> Option<&'a Value> {
    maps.iter().find(|m| m["metadata"]["name"] == name)
}

/// Whether a published shard lists `image`.
pub(super) fn published(api: &FakeApi, image: &str) -> bool {
    api.objects("ConfigMap").iter().any(|m| {
        m["data"]["images"]
            .as_str()
            .is_some_and(|text| text.contains(&format!("\"{image}\"")))
    })
}

pub(super) fn cluster_nodes(api: &FakeApi) -> Option<u64> {
    cluster_document(api)?["nodes"].as_u64()
}

/// The heartbeat in the published cluster document.
pub(super) fn heartbeat(api: &FakeApi) -> Option<(u64, u64)> {
    let document = cluster_document(api)?;
    Some((
        document["syncer"]["at"].as_u64()?,
        document["syncer"]["every"].as_u64()?,
    ))
}

/// The Lease's holder, when one holds it.
pub(super) fn holder(api: &FakeApi) -> Option<String> {
    let lease = api.objects("Lease").into_iter().next()?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

/// The peak resident memory of process `pid`, KiB.
fn peak_memory(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One `os-placement facts sync` process, its requests sent with its own token.
pub(super) struct Replica {
    pub(super) name: &'static str,
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Replica {
    fn spawn(cli: &Path, api: &FakeApi, dir: &Path, name: &'static str) -> Replica {
        Replica::spawn_with(cli, api, dir, name, &[])
    }

    /// A replica with `args` besides the defaults.
    pub(super) fn spawn_with(
        cli: &Path,
        api: &FakeApi,
        dir: &Path,
        name: &'static str,
        args: &[&str],
    ) -> Replica {
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        api.kubeconfig_as(&kubeconfig, name).unwrap();
        let port = os_placement_e2e::registry::free_port().unwrap();
        let log = dir.join(format!("{name}.log"));
        let child = syncer_command(cli, &kubeconfig, &log, "1s")
            .args(["--metrics-address", &format!("127.0.0.1:{port}")])
            .args(args)
            .spawn()
            .unwrap();
        Replica {
            name,
            child,
            log,
            port,
        }
    }

    pub(super) fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The status and body of GET `path` on its metrics port.
    pub(super) fn get(&self, path: &str) -> Option<(u16, String)> {
        let answer = http(self.port, "GET", path, &[], b"").ok()?;
        Some((
            answer.status,
            String::from_utf8_lossy(&answer.body).into_owned(),
        ))
    }

    /// The value of a metric (a line `name value`).
    pub(super) fn metric(&self, name: &str) -> Option<String> {
        let (_, text) = self.get("/metrics")?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_owned))
    }

    pub(super) fn leads(&self) -> bool {
        self.metric("os_placement_sync_leader").as_deref() == Some("1")
    }

    fn holds(&self, api: &FakeApi) -> bool {
        holder(api).is_some_and(|h| h.contains(&format!("_{}_", self.child.id())))
    }

    /// Its requests among `seen`.
    pub(super) fn of<'a>(&self, seen: &'a [Seen]) -> Vec<&'a Seen> {
        seen.iter()
            .filter(|s| s.token.as_deref() == Some(self.name))
            .collect()
    }

    /// Peak resident memory, KiB.
    fn peak_memory(&self) -> Option<u64> {
        peak_memory(self.child.id())
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {signal} {}", self.child.id());
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `facts sync` against the fake API of `kubeconfig`, each registry
/// attempt given `timeout`, 16 at a time, stderr to `log`.
fn syncer_command(cli: &Path, kubeconfig: &Path, log: &Path, timeout: &str) -> Command {
    let mut command = Command::new(cli);
    command
        .args([
            "facts",
            "sync",
            "--namespace",
            "os-placement",
            "--interval",
            "60s",
        ])
        .args([
            "--registry-timeout",
            timeout,
            "--retries",
            "0",
            "--concurrency",
            &CONCURRENCY.to_string(),
        ])
        .args(["--insecure-registry", NO_REGISTRY])
        .env("KUBECONFIG", kubeconfig)
        .env("DOCKER_CONFIG", log.with_extension("docker"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    command
}

fn spawn_syncer(cli: &Path, kubeconfig: &Path, log: &Path) -> Child {
    syncer_command(cli, kubeconfig, log, "1s")
        .args(["--metrics-address", "127.0.0.1:0"])
        .spawn()
        .unwrap()
}

/// Whether `replica` wrote a ConfigMap among `seen` from `from` on.
pub(super) fn writes_since(replica: &Replica, seen: &[Seen], from: usize) -> bool {
    replica
        .of(seen.get(from..).unwrap_or_default())
        .iter()
        .any(|s| is_write(s) && s.path.contains("/configmaps"))
}

/// Two replicas on one fake API, and what each asked.
pub(super) struct Pair {
    pub(super) api: FakeApi,
    pub(super) replicas: [Replica; 2],
}

impl Pair {
    pub(super) fn logged(&self) -> String {
        self.replicas
            .iter()
            .map(|r| format!("{}:\n{}", r.name, r.logged()))
            .collect()
    }

    /// The leader and the standby, once exactly one leads.
    pub(super) fn roles(&self) -> (&Replica, &Replica) {
        let leaders = self.replicas.iter().filter(|r| r.leads()).count();
        assert_eq!(leaders, 1, "{}", self.logged());
        let [a, b] = &self.replicas;
        if a.leads() {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// The first publication, both ready, only the leader written: how
    /// long it took, and each replica's requests until then.
    fn start(&self) -> (Duration, Vec<BTreeMap<String, usize>>) {
        let api = &self.api;
        let first = wait_for(Duration::from_secs(180), || {
            cluster_nodes(api) == Some(NODES as u64)
                && published(api, &format!("{NO_REGISTRY}/mesh/proxy:1.2"))
        })
        .unwrap_or_else(|| panic!("nothing published:\n{}", self.logged()));
        let ready = wait_for(Duration::from_secs(60), || {
            self.replicas
                .iter()
                .all(|r| r.get("/readyz").is_some_and(|(code, _)| code == 200))
        });
        assert!(ready.is_some(), "not ready:\n{}", self.logged());
        let (leader, standby) = self.roles();
        assert!(leader.holds(api), "{:?}", holder(api));
        for replica in &self.replicas {
            assert_eq!(replica.get("/healthz").map(|(code, _)| code), Some(200));
        }
        let failures =
            format!("os_placement_sync_registry_lookup_failures_total{{host=\"{NO_REGISTRY}\"}}");
        for (name, value) in [
            ("os_placement_sync_images_in_use", (IMAGES + 3).to_string()),
            (failures.as_str(), (IMAGES + 3).to_string()),
            ("os_placement_sync_watches_synced", "1".to_string()),
            ("os_placement_sync_publish_errors_total", "0".to_string()),
        ] {
            assert_eq!(leader.metric(name), Some(value), "{name}");
        }
        let standing = standby.metric("os_placement_sync_leader");
        assert_eq!(standing.as_deref(), Some("0"));
        let initial = api.seen();
        assert!(writes_since(leader, &initial, 0));
        assert!(
            !writes_since(standby, &initial, 0),
            "{:?}",
            tally(standby.of(&initial))
        );
        let listed = self
            .replicas
            .iter()
            .map(|r| tally(r.of(&initial)))
            .collect();
        (first, listed)
    }

    /// A new workload's image, then a new node: how long each took to be
    /// published, and with how many shard writes.
    fn react(&self) -> [(Duration, usize); 2] {
        let api = &self.api;
        let before = api.seen().len();
        let image = format!("{NO_REGISTRY}/shop/new:7");
        api.put(deployment("new", &image));
        let reacted_image = wait_for(Duration::from_secs(30), || published(api, &image))
            .unwrap_or_else(|| panic!("{image} not published:\n{}", self.logged()));
        std::thread::sleep(Duration::from_secs(2));
        let after_image = api.seen().len();
        api.put(node(NODES));
        let reacted_node = wait_for(Duration::from_secs(30), || {
            cluster_nodes(api) == Some(NODES as u64 + 1)
        })
        .unwrap_or_else(|| panic!("node-{NODES} not published:\n{}", self.logged()));
        std::thread::sleep(Duration::from_secs(2));
        let seen = api.seen();
        [
            (reacted_image, shard_writes(&seen[before..after_image])),
            (reacted_node, shard_writes(&seen[after_image..])),
        ]
    }

    /// Nothing changes for a heartbeat's interval: the requests made.
    fn idle(&self, quiet_for: Duration) -> Vec<Seen> {
        let (leader, standby) = self.roles();
        let before = self.api.seen().len();
        let beat_before = heartbeat(&self.api).unwrap();
        std::thread::sleep(quiet_for);
        let quiet = self.api.seen()[before..].to_vec();
        let beat_after = heartbeat(&self.api).unwrap();
        // The Lease's renewals (leader) and reads (standby), the heartbeat's
        // writes, and watches started again: nothing else.
        let allowed = |s: &Seen| match kind(s).as_str() {
            "PUT leases" => s.token.as_deref() == Some(leader.name),
            "GET leases" => s.token.as_deref() == Some(standby.name),
            "PUT configmaps" => {
                s.token.as_deref() == Some(leader.name) && s.path.ends_with(CLUSTER_MAP)
            }
            k => k.starts_with("WATCH"),
        };
        assert!(quiet.iter().all(allowed), "while idle: {:?}", tally(&quiet));
        let beats = quiet.iter().filter(|s| kind(s) == "PUT configmaps").count();
        assert!(
            (1..=2).contains(&beats),
            "{beats} heartbeats in {quiet_for:?}"
        );
        assert!(
            beat_after.0 > beat_before.0 && beat_after.1 == HEARTBEAT.as_secs(),
            "{beat_before:?} {beat_after:?}"
        );
        quiet
    }

    /// SIGTERM to the leader: the time until the standby writes.
    fn stop_leader(&self) -> Duration {
        let (leader, standby) = self.roles();
        let before = self.api.seen().len();
        let stopped_at = Instant::now();
        leader.signal("-TERM");
        let takeover = wait_for(Duration::from_secs(30), || {
            writes_since(standby, &self.api.seen(), before)
        })
        .unwrap_or_else(|| panic!("no takeover:\n{}", self.logged()));
        // It exits (a zombie until reaped) once the Lease is released.
        let exited = wait_for(Duration::from_secs(10), || {
            std::fs::read_to_string(format!("/proc/{}/stat", leader.child.id()))
                .map_or(true, |stat| stat.contains(") Z "))
        });
        assert!(exited.is_some(), "{}", self.logged());
        assert!(stopped_at.elapsed() < Duration::from_secs(10));
        assert!(
            standby.holds(&self.api) && standby.leads(),
            "{}",
            self.logged()
        );
        takeover
    }
}

#[test]
fn two_replicas_follow_ten_thousand_pods_and_only_the_leader_writes() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(cluster()).unwrap();
    let replicas = [
        Replica::spawn(&cli, &api, dir.path(), "syncer-a"),
        Replica::spawn(&cli, &api, dir.path(), "syncer-b"),
    ];
    let pair = Pair { api, replicas };
    let (first, listed) = pair.start();
    let [(reacted_image, image_writes), (reacted_node, node_writes)] = pair.react();
    let quiet_for = HEARTBEAT + Duration::from_secs(1);
    let quiet = pair.idle(quiet_for);
    let memory: Vec<Option<u64>> = pair.replicas.iter().map(Replica::peak_memory).collect();
    let (leader, standby) = pair.roles();
    let names = [leader.name, standby.name];
    let takeover = pair.stop_leader();
    report(&Figures {
        first,
        listed: &listed,
        reacted: [(reacted_image, image_writes), (reacted_node, node_writes)],
        quiet: &quiet,
        quiet_for,
        memory: &memory,
        takeover,
        names,
    });
    // Pods listed in pages of 500 by each, every other kind once; one watch each.
    for counts in &listed {
        let count = |what: &str| counts.get(what).copied().unwrap_or(0);
        assert_eq!(count("LIST pods"), PODS.div_ceil(500), "{counts:?}");
        for kind in WATCHED {
            assert_eq!(count(&format!("LIST {kind}")), 1, "{kind}: {counts:?}");
            assert!(count(&format!("WATCH {kind}")) >= 1, "{kind}: {counts:?}");
        }
    }
    // One shard changed for the image; the shard of its name for the node.
    assert_eq!(image_writes, 1, "{image_writes} writes for one image");
    assert!(node_writes <= 1, "{node_writes} writes for one node");
    assert!(
        takeover < Duration::from_secs(6),
        "takeover after {takeover:?}"
    );
    for kib in &memory {
        assert!(kib.is_some_and(|kib| kib < 256 * 1024), "{memory:?} KiB");
    }
    killed_leader_is_replaced_after_its_lease(&cli, &pair.api, dir.path(), standby);
}

/// The kinds besides Pods each replica lists once, then watches.
const WATCHED: [&str; 9] = [
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "jobs",
    "cronjobs",
    "replicationcontrollers",
    "nodes",
    "runtimeclasses",
];

/// A new standby; the leader killed (no release): the standby publishes
/// once the Lease has expired.
fn killed_leader_is_replaced_after_its_lease(
    cli: &Path,
    api: &FakeApi,
    dir: &Path,
    leader: &Replica,
) {
    let standby = Replica::spawn(cli, api, dir, "syncer-c");
    let ready = wait_for(Duration::from_secs(60), || {
        standby.get("/readyz").is_some_and(|(code, _)| code == 200)
    });
    assert!(ready.is_some(), "{}", standby.logged());
    assert!(!standby.leads() && leader.leads());
    let before = api.seen().len();
    leader.signal("-KILL");
    let takeover = wait_for(Duration::from_secs(60), || {
        writes_since(&standby, &api.seen(), before)
    })
    .unwrap_or_else(|| panic!("no takeover:\n{}", standby.logged()));
    eprintln!(
        "  killed (SIGKILL), the leader was replaced after {takeover:.1?} (Lease of {LEASE:?})"
    );
    assert!(
        takeover >= LEASE / 2 && takeover < LEASE + Duration::from_secs(8),
        "{takeover:?}"
    );
    assert!(standby.holds(api));
}

/// What the two-replica run measured.
struct Figures<'a> {
    first: Duration,
    listed: &'a [BTreeMap<String, usize>],
    /// A new image's and a new node's: time to publish, shard writes.
    reacted: [(Duration, usize); 2],
    quiet: &'a [Seen],
    quiet_for: Duration,
    memory: &'a [Option<u64>],
    takeover: Duration,
    names: [&'static str; 2],
}

fn report(f: &Figures<'_>) {
    eprintln!(
        "facts sync, two replicas, {PODS} Pods ({IMAGES} + 3 images), {NODES} Nodes, on the fake API:"
    );
    eprintln!(
        "  first publication after {:.1?}; requests until then, by replica:",
        f.first
    );
    for (name, counts) in ["syncer-a", "syncer-b"].iter().zip(f.listed) {
        eprintln!("    {name}: {counts:?}");
    }
    let [(image, image_writes), (node, node_writes)] = f.reacted;
    eprintln!("  a new workload's image published after {image:.1?} ({image_writes} shard writes)");
    eprintln!("  a new node published after {node:.1?} ({node_writes} shard writes)");
    let per_minute = 60.0 / f.quiet_for.as_secs_f64();
    eprintln!(
        "  {:.0?} without changes: {} requests ({:.0} a minute) {:?}",
        f.quiet_for,
        f.quiet.len(),
        f.quiet.len() as f64 * per_minute,
        tally(f.quiet)
    );
    eprintln!(
        "  stopped (SIGTERM), leader {} was replaced by {} after {:.1?}",
        f.names[0], f.names[1], f.takeover
    );
    eprintln!("  peak resident memory: {:?} KiB", f.memory);
}

/// Images looked up at once (`syncer_command`), and how many the memory test has.
const CONCURRENCY: usize = 16;
const LARGE_IMAGES: usize = 64;

/// An image index of one Windows entry, padded to `bytes`.
fn padded_index(bytes: usize) -> Vec<u8> {
    let text = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{:064x}", 1), "size": 500,
            "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.2700"}}],
        "annotations": {"pad": ""}})
    .to_string();
    let pad = "x".repeat(bytes.saturating_sub(text.len()));
    text.replace("\"pad\":\"\"", &format!("\"pad\":\"{pad}\""))
        .into_bytes()
}

/// 64 images whose registry serves indexes just under the 4 MiB the
/// syncer reads, without a length (read chunk by chunk), 16 at a time:
/// the syncer's peak memory stays within its baseline plus 16 bodies.
#[test]
fn lookups_of_large_indexes_hold_bounded_memory() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let index = std::sync::Arc::new(padded_index((4 << 20) - 1024));
    let registry = Scripted::start(move |request| {
        let mut answer = Answer::ok("application/vnd.oci.image.index.v1+json", index.to_vec());
        answer.chunked = request.path.contains("/manifests/");
        answer
    })
    .unwrap();
    let images: Vec<String> = (0..LARGE_IMAGES)
        .map(|i| format!("{}/big/app-{i}:1", registry.host()))
        .collect();
    let mut objects: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| deployment(&format!("big-{i}"), image))
        .collect();
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(objects).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();
    let log = dir.path().join("syncer.log");
    let mut syncer = syncer_command(&cli, &kubeconfig, &log, "20s")
        .args(["--metrics-address", "127.0.0.1:0"])
        .args(["--insecure-registry", &registry.host()])
        .spawn()
        .unwrap();
    let all = wait_for(Duration::from_secs(120), || {
        images.iter().all(|i| published(&api, i))
    });
    let peak = peak_memory(syncer.id());
    let _ = syncer.kill();
    let _ = syncer.wait();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let all = all.unwrap_or_else(|| panic!("not every image published:\n{logged}"));
    // Every index was read: no lookup failed.
    let failed = api.objects("ConfigMap").iter().any(|m| {
        m["data"]["images"]
            .as_str()
            .is_some_and(|text| text.contains("lookupFailed"))
    });
    assert!(!failed, "{logged}");
    let served = registry.seen().len();
    eprintln!(
        "facts sync: {LARGE_IMAGES} indexes of 4 MiB, {CONCURRENCY} at a time: published after {all:.1?} ({served} requests), peak resident memory {} KiB",
        peak.unwrap_or(0)
    );
    // Each lookup holds one body of at most 4 MiB.
    let bound = (CONCURRENCY as u64 * 4 + 64) * 1024;
    assert!(
        peak.is_some_and(|kib| kib < bound),
        "{peak:?} KiB, bound {bound} KiB"
    );
}

/// The published cluster document, when there is one.
pub(super) fn cluster_document(api: &FakeApi) -> Option<Value> {
    let maps = api.objects("ConfigMap");
    let index = config_map(&maps, "os-placement-facts-cluster")?["data"]["index"].as_str()?;
    serde_json::from_str(index).ok()
}

/// `e2e/clusters/eks-karpenter`'s objects, and the facts namespace.
pub(super) fn karpenter_cluster() -> Vec<Value> {
    let fixture = os_placement_e2e::repo_root().join("e2e/clusters/eks-karpenter");
    let mut objects = os_placement_e2e::capabilities::Cluster::load(&fixture)
        .unwrap()
        .objects()
        .to_vec();
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    objects
}

/// `e2e/clusters/eks-karpenter` on the fake API: the syncer publishes what
/// its NodePools launch beside its two Nodes, follows a class going not
/// ready within seconds, and on a cluster without Karpenter's CRDs (404)
/// publishes the Nodes alone, saying so once.
#[test]
fn the_syncer_publishes_what_nodepools_launch_and_follows_their_conditions() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let objects = karpenter_cluster();
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(objects.clone()).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();
    let log = dir.path().join("syncer.log");
    let mut syncer = spawn_syncer(&cli, &kubeconfig, &log);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    let sources = |api: &FakeApi| -> Vec<String> {
        cluster_document(api)
            .and_then(|d| d["capacity"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|c| match c["blocked"].as_str() {
                Some(why) => format!("{}: {why}", c["source"].as_str().unwrap_or("")),
                None => format!(
                    "{} {}/{}",
                    c["source"].as_str().unwrap_or(""),
                    c["os"].as_str().unwrap_or(""),
                    c["architecture"].as_str().unwrap_or("")
                ),
            })
            .collect()
    };
    wait_for(Duration::from_secs(60), || !sources(&api).is_empty())
        .unwrap_or_else(|| panic!("no capacity published:\n{}", logged()));
    assert_eq!(cluster_nodes(&api), Some(2));
    assert_eq!(
        sources(&api),
        [
            "NodePool amd64 linux/amd64",
            "NodePool arm64 linux/arm64",
            "NodePool windows2022 windows/amd64",
            "NodePool windows2025: its EC2NodeClass windows2025 reports AMIsReady is False (AMINotFound)",
        ],
        "{}",
        logged()
    );
    // The Windows 2022 class loses its AMIs: the NodePool is blocked.
    let mut class = objects
        .iter()
        .find(|o| o["kind"] == "EC2NodeClass" && o["metadata"]["name"] == "windows2022")
        .unwrap()
        .clone();
    class["status"]["conditions"] =
        json!([{"type": "Ready", "status": "False", "reason": "SubnetsNotFound"}]);
    api.put(class);
    let reacted = wait_for(Duration::from_secs(30), || {
        sources(&api).iter().any(|s| s.contains("windows2022: its EC2NodeClass windows2022 reports Ready is False (SubnetsNotFound)"))
    })
    .unwrap_or_else(|| panic!("the class change was not published:\n{}", logged()));
    eprintln!(
        "facts sync, eks-karpenter: a node class going not ready published after {reacted:.1?}"
    );
    let _ = syncer.kill();
    let _ = syncer.wait();

    // Without Karpenter: the Nodes alone, and one line saying why.
    let api = FakeApi::start(objects).unwrap();
    for group in [
        "karpenter.sh/v1",
        "karpenter.k8s.aws/v1",
        "eks.amazonaws.com/v1",
    ] {
        api.unserve(group);
    }
    api.kubeconfig(&kubeconfig).unwrap();
    let log = dir.path().join("no-karpenter.log");
    let mut syncer = spawn_syncer(&cli, &kubeconfig, &log);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for(Duration::from_secs(60), || cluster_nodes(&api).is_some())
        .unwrap_or_else(|| panic!("nothing published:\n{}", logged()));
    let _ = syncer.kill();
    let _ = syncer.wait();
    assert_eq!(cluster_nodes(&api), Some(2));
    assert!(sources(&api).is_empty());
    assert_eq!(
        logged()
            .matches("nodepools.karpenter.sh is not served (no Karpenter)")
            .count(),
        1,
        "{}",
        logged()
    );
}
