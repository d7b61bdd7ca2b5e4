//! The facts syncer against a cluster of 10,000 Pods on the fake API: it
//! lists each kind once (in pages), then follows the cluster by watches; a
//! new workload's image and a new node are published within seconds,
//! rewriting only the ConfigMaps whose content changed; with nothing
//! changing it makes no request but its open watches. The figures (requests
//! by kind, reaction times, memory) are printed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use os_placement_e2e::faults::api::{FakeApi, Seen};
use serde_json::{json, Value};

use super::setup::{cli_binary, deployment};

/// Pods in the cluster, spread over this many images and namespaces.
const PODS: usize = 10_000;
const IMAGES: usize = 400;
const NODES: usize = 200;

/// No registry listens there: every lookup fails at once, and is published
/// as a failed lookup.
const NO_REGISTRY: &str = "127.0.0.1:9";

fn pod(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("app-{i}"), "namespace": format!("team-{}", i % 50)},
        "spec": {"nodeName": format!("node-{}", i % NODES), "containers": [
            {"name": "app", "image": format!("{NO_REGISTRY}/team-{}/app:{}", i % 50, i % IMAGES)},
            {"name": "proxy", "image": format!("{NO_REGISTRY}/mesh/proxy:1.{}", i % 3)}]}})
}

fn node(i: usize) -> Value {
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

/// Requests by what they were: `LIST pods`, `WATCH nodes`, `PUT configmaps`...
fn tally(seen: &[Seen]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for s in seen {
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
        *counts.entry(format!("{verb} {resource}")).or_insert(0) += 1;
    }
    counts
}

fn writes(seen: &[Seen]) -> usize {
    seen.iter()
        .filter(|s| matches!(s.method.as_str(), "POST" | "PUT" | "DELETE"))
        .count()
}

fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
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
fn published(api: &FakeApi, image: &str) -> bool {
    api.objects("ConfigMap").iter().any(|m| {
        m["data"]["images"]
            .as_str()
            .is_some_and(|text| text.contains(&format!("\"{image}\"")))
    })
}

fn cluster_nodes(api: &FakeApi) -> Option<u64> {
    let maps = api.objects("ConfigMap");
    let index = config_map(&maps, "os-placement-facts-cluster")?["data"]["index"].as_str()?;
    serde_json::from_str::<Value>(index).ok()?["nodes"].as_u64()
}

/// The syncer's peak resident memory, KiB.
fn peak_memory(child: &Child) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn spawn_syncer(cli: &Path, kubeconfig: &Path, log: &Path) -> Child {
    Command::new(cli)
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
            "1s",
            "--retries",
            "0",
            "--concurrency",
            "16",
        ])
        .args(["--insecure-registry", NO_REGISTRY])
        .env("KUBECONFIG", kubeconfig)
        .env("DOCKER_CONFIG", log.with_extension("docker"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn the_syncer_follows_ten_thousand_pods_by_watches_and_writes_only_what_changed() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(cluster()).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();
    let log = dir.path().join("syncer.log");
    let mut syncer = spawn_syncer(&cli, &kubeconfig, &log);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();

    // The first publication: every kind listed, every image looked up once;
    // the syncer says so when its last ConfigMap is written.
    let rounds = || logged().matches("ConfigMaps in namespace").count();
    let first = wait_for(Duration::from_secs(180), || rounds() >= 1)
        .unwrap_or_else(|| panic!("nothing published:\n{}", logged()));
    assert_eq!(cluster_nodes(&api), Some(NODES as u64));
    assert!(
        published(&api, &format!("{NO_REGISTRY}/mesh/proxy:1.2")),
        "{}",
        logged()
    );
    let initial = api.seen();
    let listed = tally(&initial);

    // A new workload's image, then a new node: published within seconds,
    // each by rewriting the ConfigMaps whose content changed.
    let image = format!("{NO_REGISTRY}/shop/new:7");
    api.put(deployment("new", &image));
    let reacted_image = wait_for(Duration::from_secs(30), || published(&api, &image))
        .unwrap_or_else(|| panic!("{image} not published:\n{}", logged()));
    wait_for(Duration::from_secs(30), || rounds() >= 2);
    let after_image = api.seen().len();
    api.put(node(NODES));
    let reacted_node = wait_for(Duration::from_secs(30), || {
        cluster_nodes(&api) == Some(NODES as u64 + 1)
    })
    .unwrap_or_else(|| panic!("node-{NODES} not published:\n{}", logged()));
    wait_for(Duration::from_secs(30), || rounds() >= 3);
    let seen = api.seen();
    let image_writes = writes(&seen[initial.len()..after_image]);
    let node_writes = writes(&seen[after_image..]);

    // Nothing changes: no list, no write, only the open watches.
    let before_quiet = api.seen().len();
    std::thread::sleep(Duration::from_secs(5));
    let quiet = api.seen()[before_quiet..].to_vec();
    let memory = peak_memory(&syncer);
    let _ = syncer.kill();
    let _ = syncer.wait();

    eprintln!("facts sync, {PODS} Pods ({IMAGES} + 3 images), {NODES} Nodes, on the fake API:");
    eprintln!("  first publication after {first:.1?}; requests until then:");
    for (what, count) in &listed {
        eprintln!("    {what}: {count}");
    }
    eprintln!(
        "  a new workload's image published after {reacted_image:.1?} ({image_writes} writes)"
    );
    eprintln!("  a new node published after {reacted_node:.1?} ({node_writes} writes)");
    eprintln!(
        "  5 s without changes: {} requests {:?}",
        quiet.len(),
        tally(&quiet)
    );
    eprintln!("  peak resident memory: {} KiB", memory.unwrap_or(0));

    // Pods listed in pages of 500, every other kind once; one watch each.
    let count = |what: &str| listed.get(what).copied().unwrap_or(0);
    assert_eq!(count("LIST pods"), PODS.div_ceil(500), "{listed:?}");
    for kind in [
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
        "jobs",
        "cronjobs",
        "replicationcontrollers",
        "nodes",
        "runtimeclasses",
    ] {
        assert_eq!(count(&format!("LIST {kind}")), 1, "{kind}: {listed:?}");
        assert!(count(&format!("WATCH {kind}")) >= 1, "{kind}: {listed:?}");
    }
    // One shard changed for the image; the cluster ConfigMap and the shard
    // of its name for the node.
    assert_eq!(image_writes, 1, "{image_writes} writes for one image");
    assert!(
        (1..=2).contains(&node_writes),
        "{node_writes} writes for one node"
    );
    assert!(
        quiet.iter().all(|s| s.watch),
        "requests without a change: {:?}",
        tally(&quiet)
    );
    assert!(memory.is_some_and(|kib| kib < 256 * 1024), "{memory:?} KiB");
}

/// The published cluster document, when there is one.
fn cluster_document(api: &FakeApi) -> Option<Value> {
    let maps = api.objects("ConfigMap");
    let index = config_map(&maps, "os-placement-facts-cluster")?["data"]["index"].as_str()?;
    serde_json::from_str(index).ok()
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
    let fixture = os_placement_e2e::repo_root().join("e2e/clusters/eks-karpenter");
    let mut objects = os_placement_e2e::capabilities::Cluster::load(&fixture)
        .unwrap()
        .objects()
        .to_vec();
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
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
