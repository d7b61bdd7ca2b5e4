//! `make bench-sync`: the facts syncer across cluster sizes. Two replicas of
//! the release CLI's `os-placement facts sync` (leader and standby, as
//! `deploy/facts-sync.yaml` runs them) against the fault suite's fake
//! Kubernetes API, in process, holding a cluster of each size: Pods of two
//! containers spread over namespaces, EKS-like Nodes (`nodes.py N` from
//! `../shared/tools/scale`), Karpenter NodePools each with its EC2NodeClass.
//! Every image is on a registry that refuses connections (allowed with
//! `--insecure-registry`), so each lookup fails at once and is published
//! as failed: what is measured is the syncer's own work against the API.
//!
//! Per size: the time to the first publication (the cluster ConfigMap
//! counts every Node and every NodePool, the shards hold every image),
//! each replica's API requests and CPU time until then, the fake API's
//! own CPU time (it serves in this process), the peak resident memory of
//! both (VmHWM), the time to publish a new workload's image and a new
//! Node, the requests over one heartbeat interval with nothing changing,
//! and the peak memory through a relist after `410 Expired`. The table
//! sets them beside their targets; the figures go to
//! `target/bench/sync.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use os_placement_bench::nodepools::nodepools_with_classes;
use os_placement_bench::{Error, Result};
use os_placement_core::published::{self, IMAGE_FACTS_KEY};
use os_placement_core::ImageFacts;
use os_placement_e2e::faults::api::{FakeApi, Seen};
use os_placement_e2e::http::http;
use os_placement_e2e::repo_root;
use serde_json::{json, Value};

/// Pods / Nodes / images / NodePools: a mid-sized cluster, and the large
/// cluster Kubernetes documents as its limits (150,000 Pods, 5,000 Nodes).
const SIZES: [Size; 2] = [
    Size {
        pods: 10_000,
        nodes: 200,
        images: 400,
        pools: 10,
    },
    Size {
        pods: 150_000,
        nodes: 5_000,
        images: 2_000,
        pools: 100,
    },
];

/// No registry listens there: every lookup fails at once.
const NO_REGISTRY: &str = "127.0.0.1:9";

/// The versions of the mesh proxy every Pod also runs.
const PROXY_VERSIONS: usize = 3;

/// Pods per namespace.
const PODS_PER_NAMESPACE: usize = 200;

/// The syncer's heartbeat interval (its default): the idle window is one
/// interval and a second, so it holds one heartbeat whatever its phase.
const HEARTBEAT: Duration = Duration::from_secs(20);

const FACTS_NAMESPACE: &str = "os-placement";
const CLUSTER_MAP: &str = "os-placement-facts-cluster";

/// The targets.
const FIRST_PUBLICATION: Duration = Duration::from_secs(60);
const PEAK_MEMORY_KIB: u64 = 256 * 1024;
const CHANGE: Duration = Duration::from_secs(2);

/// The replicas, told apart by the bearer token of their kubeconfig.
const REPLICAS: [&str; 2] = ["syncer-a", "syncer-b"];

/// One cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size {
    pods: usize,
    nodes: usize,
    images: usize,
    pools: usize,
}

struct Options {
    cli: PathBuf,
    scale_tools: PathBuf,
    sizes: Vec<Size>,
    json: PathBuf,
    /// The longest wait for the first publication, and for a relist.
    limit: Duration,
    /// `--pull-secrets on`: every Pod names its namespace's pull Secret
    /// (each namespace its own account), and the replicas read them.
    pull_secrets: bool,
}

const USAGE: &str = "use --cli FILE, --scale-tools DIR, --sizes PODS/NODES/IMAGES/NODEPOOLS,... (e.g. 10000/200/400/10), --json FILE, --limit SECONDS, --pull-secrets on|off";

fn parse_args() -> Result<Options> {
    let root = repo_root();
    let mut o = Options {
        cli: root.join("target/release/os-placement"),
        scale_tools: root.join("../shared/tools/scale"),
        sizes: SIZES.to_vec(),
        json: root.join("target/bench/sync.json"),
        limit: Duration::from_secs(300),
        pull_secrets: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?;
        let number = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| Error::Usage(format!("{flag} takes numbers: {USAGE}")))
        };
        match flag.as_str() {
            "--cli" => o.cli = value.into(),
            "--scale-tools" => o.scale_tools = value.into(),
            "--json" => o.json = value.into(),
            "--pull-secrets" => {
                o.pull_secrets = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(Error::Usage(format!("--pull-secrets is on or off: {USAGE}"))),
                }
            }
            "--limit" => o.limit = Duration::from_secs(number(&value)? as u64),
            "--sizes" => {
                o.sizes = value
                    .split(',')
                    .map(|size| {
                        let parts = size.split('/').map(number).collect::<Result<Vec<_>>>()?;
                        match parts.as_slice() {
                            [pods, nodes, images, pools] if *images > PROXY_VERSIONS => Ok(Size {
                                pods: *pods,
                                nodes: *nodes,
                                images: *images,
                                pools: *pools,
                            }),
                            _ => Err(Error::Usage(format!(
                                "--sizes: {size} is not PODS/NODES/IMAGES/NODEPOOLS with more than {PROXY_VERSIONS} images"
                            ))),
                        }
                    })
                    .collect::<Result<_>>()?
            }
            other => return Err(Error::Usage(format!("unknown flag {other}: {USAGE}"))),
        }
    }
    if !o.cli.is_file() {
        return Err(Error::Usage(format!(
            "{} not found: run `make build`, or give --cli",
            o.cli.display()
        )));
    }
    Ok(o)
}

/// `count` EKS-like Nodes from `nodes.py`.
fn eks_nodes(tools: &Path, count: usize) -> Result<Vec<Value>> {
    let path = tools.join("nodes.py");
    let output = Command::new("python3")
        .arg(&path)
        .arg(count.to_string())
        .output()
        .map_err(Error::io(&path))?;
    if !output.status.success() {
        return Err(Error::Usage(format!(
            "{} {count} failed (give --scale-tools): {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Unexpected(format!("{}: not JSON: {e}", path.display())))
}

/// The cluster of one size, and what it should publish.
struct Cluster {
    objects: Vec<Value>,
    images: BTreeSet<String>,
    pools: usize,
    /// One Node more, added once the syncer has published.
    new_node: Value,
}

fn cluster(tools: &Path, size: Size, pull_secrets: bool) -> Result<Cluster> {
    let mut nodes = eks_nodes(tools, size.nodes + 1)?;
    let new_node = nodes
        .pop()
        .ok_or_else(|| Error::Unexpected("nodes.py printed no Node".into()))?;
    let names: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let namespaces = size.pods.div_ceil(PODS_PER_NAMESPACE).max(1);
    let apps = size.images.saturating_sub(PROXY_VERSIONS).max(1);
    let app = |j: usize| format!("{NO_REGISTRY}/team-{}/app:{j}", j % 50);
    let proxy = |v: usize| format!("{NO_REGISTRY}/mesh/proxy:1.{v}");
    let mut objects = Vec::with_capacity(size.pods + nodes.len() + 2 * size.pools + 1);
    for i in 0..size.pods {
        let node = names
            .get(i % names.len().max(1))
            .cloned()
            .unwrap_or_default();
        let secrets = if pull_secrets {
            json!([{"name": "regcred"}])
        } else {
            json!([])
        };
        objects.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("app-{i}"), "namespace": format!("team-{}", i % namespaces)},
            "spec": {"nodeName": node, "imagePullSecrets": secrets, "containers": [
                {"name": "app", "image": app(i % apps)},
                {"name": "proxy", "image": proxy(i % PROXY_VERSIONS)}]}}));
    }
    if pull_secrets {
        use base64::Engine as _;
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        for n in 0..namespaces {
            let auth = b64(&format!("robot-{n}:password-{n}"));
            let config = json!({"auths": {NO_REGISTRY: {"auth": auth}}}).to_string();
            objects.push(json!({"apiVersion": "v1", "kind": "Secret",
                "type": "kubernetes.io/dockerconfigjson",
                "metadata": {"name": "regcred", "namespace": format!("team-{n}")},
                "data": {".dockerconfigjson": b64(&config)}}));
        }
    }
    let mut images: BTreeSet<String> = (0..size.pods.min(apps)).map(app).collect();
    images.extend((0..size.pods.min(PROXY_VERSIONS)).map(proxy));
    objects.extend(nodes);
    let karpenter = nodepools_with_classes(size.pools);
    objects.extend(karpenter);
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FACTS_NAMESPACE}}),
    );
    Ok(Cluster {
        objects,
        images,
        pools: size.pools,
        new_node,
    })
}

/// What is published now: the cluster document, and the images of the
/// shards, each with whether it is published as a failed lookup.
struct Published {
    document: Option<Value>,
    images: BTreeMap<String, bool>,
}

impl Published {
    fn read(api: &FakeApi) -> Published {
        let mut published = Published {
            document: None,
            images: BTreeMap::new(),
        };
        for map in api.objects("ConfigMap") {
            let name = map.pointer("/metadata/name").and_then(Value::as_str);
            if name == Some(CLUSTER_MAP) {
                published.document = map
                    .pointer("/data/index")
                    .and_then(Value::as_str)
                    .and_then(|text| serde_json::from_str(text).ok());
            } else if let Some(text) = map.pointer("/data/images").and_then(Value::as_str) {
                // Read as the syncer reads its shards back.
                let readable = json!({"metadata": {"name": name}, "data": {IMAGE_FACTS_KEY: text}});
                for (image, facts) in published::config_map_images(&readable).unwrap_or_default() {
                    let failed = matches!(facts, ImageFacts::LookupFailed(_));
                    published.images.insert(image, failed);
                }
            }
        }
        published
    }

    fn nodes(&self) -> Option<u64> {
        self.document.as_ref()?.get("nodes")?.as_u64()
    }

    /// The NodePools the capacity entries stand for: an entry names its
    /// first NodePool and how many more are like it.
    fn pools(&self) -> usize {
        self.document
            .as_ref()
            .and_then(|d| d.get("capacity"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("source").and_then(Value::as_str))
            .map(|source| {
                let more = source
                    .strip_suffix(" more like it")
                    .and_then(|s| s.rsplit_once(" and "))
                    .and_then(|(_, n)| n.parse::<usize>().ok());
                1 + more.unwrap_or(0)
            })
            .sum()
    }

    fn heartbeat(&self) -> Option<u64> {
        self.document.as_ref()?.pointer("/syncer/at")?.as_u64()
    }

    /// Every Node, NodePool and image of `cluster` published.
    fn complete(&self, cluster: &Cluster, nodes: usize) -> bool {
        self.nodes() == Some(nodes as u64)
            && self.pools() == cluster.pools
            && cluster.images.iter().all(|i| self.images.contains_key(i))
    }
}

/// What a request was: `LIST pods`, `WATCH nodes`, `PUT configmaps`,
/// `discovery`...
fn kind(seen: &Seen) -> String {
    let segments: Vec<&str> = seen.path.trim_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["api", "v1", rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => &[],
    };
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (resource, item) = match rest {
        [plural] => (*plural, false),
        [plural, _] => (*plural, true),
        _ => return "discovery".to_owned(),
    };
    let verb = match (seen.method.as_str(), seen.watch, item) {
        ("GET", true, _) => "WATCH",
        ("GET", false, false) => "LIST",
        (method, _, _) => method,
    };
    format!("{verb} {resource}")
}

/// Requests by kind.
fn tally<'a>(seen: impl IntoIterator<Item = &'a Seen>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for s in seen {
        *counts.entry(kind(s)).or_insert(0) += 1;
    }
    counts
}

/// The requests `replica` sent.
fn by(seen: &[Seen], replica: &str) -> Vec<Seen> {
    seen.iter()
        .filter(|s| s.token.as_deref() == Some(replica))
        .cloned()
        .collect()
}

/// Writes of ConfigMaps other than the cluster's.
fn shard_writes(seen: &[Seen]) -> usize {
    seen.iter()
        .filter(|s| {
            matches!(s.method.as_str(), "POST" | "PUT" | "DELETE")
                && s.path.contains("/configmaps")
                && !s.path.ends_with(CLUSTER_MAP)
        })
        .count()
}

/// A field of /proc/PID/status, in KiB.
fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// User and system CPU time of process `pid` (`self` for this one).
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command, which may hold spaces: state is the first,
    // utime the 12th, stime the 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
    Some(Duration::from_millis(ticks * 1000 / per_second.max(1)))
}

/// Decides when to read what is published: a read scans the fake API's
/// whole store under its lock, which would slow the lists it serves, so
/// it is read only within half a second of a ConfigMap write.
#[derive(Default)]
struct Reads {
    writes: usize,
    until: Option<Instant>,
}

impl Reads {
    fn due(&mut self, api: &FakeApi) -> bool {
        let writes = api
            .seen()
            .iter()
            .filter(|s| matches!(s.method.as_str(), "POST" | "PUT" | "DELETE"))
            .filter(|s| s.path.contains("/configmaps"))
            .count();
        if writes != self.writes {
            self.writes = writes;
            self.until = Some(Instant::now() + Duration::from_millis(500));
        }
        self.until.is_some_and(|until| Instant::now() <= until)
    }
}

/// The time the fake API takes to answer the first page of 500 Pods,
/// median of three: every page costs about as much (it filters the
/// whole store for each).
fn page_time(api: &FakeApi) -> Option<Duration> {
    let port: u16 = api.url().rsplit_once(':')?.1.parse().ok()?;
    let mut times: Vec<Duration> = (0..3)
        .filter_map(|_| {
            let started = Instant::now();
            let answer = http(port, "GET", "/api/v1/pods?limit=500", &[], b"").ok()?;
            (answer.status == 200).then(|| started.elapsed())
        })
        .collect();
    times.sort();
    times.get(times.len() / 2).copied()
}

/// One `os-placement facts sync` process.
struct Replica {
    name: &'static str,
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Replica {
    /// Flags as the fault suite runs it (e2e/tests/faults/syncer.rs):
    /// each registry attempt 1 s, no retries, 16 lookups at once.
    fn spawn(
        cli: &Path,
        api: &FakeApi,
        dir: &Path,
        name: &'static str,
        pull_secrets: bool,
    ) -> Result<Replica> {
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        api.kubeconfig_as(&kubeconfig, name)?;
        let port = os_placement_e2e::registry::free_port()?;
        let log = dir.join(format!("{name}.log"));
        let stderr = std::fs::File::create(&log).map_err(Error::io(&log))?;
        let child = Command::new(cli)
            .args(["facts", "sync", "--namespace", FACTS_NAMESPACE])
            .args(pull_secrets.then_some("--pull-secrets"))
            .args(["--interval", "60s", "--registry-timeout", "1s"])
            .args(["--retries", "0", "--concurrency", "16"])
            .args(["--insecure-registry", NO_REGISTRY])
            .args(["--metrics-address", &format!("127.0.0.1:{port}")])
            .env("KUBECONFIG", &kubeconfig)
            .env("DOCKER_CONFIG", dir.join(format!("{name}.docker")))
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(Error::io(cli))?;
        Ok(Replica {
            name,
            child,
            log,
            port,
        })
    }

    fn logged(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines
            .get(lines.len().saturating_sub(20)..)
            .unwrap_or_default();
        format!(
            "{} ({}):\n{}",
            self.name,
            self.log.display(),
            tail.join("\n")
        )
    }

    fn get(&self, path: &str) -> Option<(u16, String)> {
        let answer = http(self.port, "GET", path, &[], b"").ok()?;
        Some((
            answer.status,
            String::from_utf8_lossy(&answer.body).into_owned(),
        ))
    }

    fn ready(&self) -> bool {
        self.get("/readyz").is_some_and(|(code, _)| code == 200)
    }

    fn leads(&self) -> bool {
        self.get("/metrics").is_some_and(|(_, text)| {
            text.lines()
                .any(|l| l.trim() == "os_placement_sync_leader 1")
        })
    }

    fn kib(&self, field: &str) -> Option<u64> {
        proc_status_kib(self.child.id(), field)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long until `done`, polled every `every`; `None` past `limit`.
fn wait_for(limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return Some(started.elapsed());
        }
        std::thread::sleep(every);
    }
    None
}

/// What one size measured; `[leader, standby]` where there are two.
struct Row {
    size: Size,
    first: Duration,
    requests: [BTreeMap<String, usize>; 2],
    /// Peak resident memory at the first publication, and at the end.
    peak_at_first: [Option<u64>; 2],
    peak: [Option<u64>; 2],
    /// Resident memory after the idle window.
    resident: [Option<u64>; 2],
    /// A relist of every kind after a 410 Expired: the time until both
    /// replicas have listed the Pods again, and the peak memory meanwhile.
    relisted: (Duration, [Option<u64>; 2]),
    /// When each had listed every kind (`/readyz` answered 200).
    listed: [Option<Duration>; 2],
    /// CPU time of each until the first publication.
    cpu: [Option<Duration>; 2],
    /// CPU time of this process (the fake API, and the bench's reads)
    /// until the first publication.
    api_cpu: Option<Duration>,
    /// The fake API's time for one page of 500 Pods.
    page: Option<Duration>,
    /// (seconds, leader KiB, standby KiB) until the first publication.
    trace: Vec<(f64, Option<u64>, Option<u64>)>,
    new_image: (Duration, usize),
    new_node: (Duration, usize),
    idle_window: Duration,
    idle: BTreeMap<String, usize>,
    /// Idle requests that are neither the Lease's, the heartbeat's nor a
    /// watch started again.
    idle_unexpected: usize,
    heartbeat_advanced: bool,
    failed_lookups: usize,
}

impl Row {
    /// Lease and heartbeat requests while idle, a minute.
    fn idle_per_minute(&self) -> f64 {
        let counted: usize = self
            .idle
            .iter()
            .filter(|(k, _)| !k.starts_with("WATCH"))
            .map(|(_, n)| n)
            .sum();
        counted as f64 * 60.0 / self.idle_window.as_secs_f64()
    }

    fn watches_restarted(&self) -> usize {
        self.idle
            .iter()
            .filter(|(k, _)| k.starts_with("WATCH"))
            .map(|(_, n)| n)
            .sum()
    }
}

/// The cluster of `size` behind the fake API, two replicas, every figure.
fn measure(options: &Options, size: Size) -> Result<Row> {
    let started = Instant::now();
    let mut cluster = cluster(&options.scale_tools, size, options.pull_secrets)?;
    let api = FakeApi::start(std::mem::take(&mut cluster.objects))?;
    let page = page_time(&api);
    eprintln!(
        "{} Pods, {} Nodes, {} images, {} NodePools: served after {:.1?}",
        size.pods,
        size.nodes,
        cluster.images.len(),
        size.pools,
        started.elapsed()
    );
    let dir = std::env::temp_dir().join(format!(
        "os-placement-sync-bench-{}-{}",
        std::process::id(),
        size.pods
    ));
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let replicas = [
        Replica::spawn(&options.cli, &api, &dir, REPLICAS[0], options.pull_secrets)?,
        Replica::spawn(&options.cli, &api, &dir, REPLICAS[1], options.pull_secrets)?,
    ];
    let logs = || {
        replicas
            .iter()
            .map(Replica::logged)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let spawned = Instant::now();
    let api_cpu_before = cpu_time("self");
    let mut trace = Vec::new();
    let mut sampled = Instant::now();
    let mut listed = [None, None];
    let mut reads = Reads::default();
    let first = wait_for(options.limit, Duration::from_millis(50), || {
        if trace.is_empty() || sampled.elapsed() >= Duration::from_millis(500) {
            sampled = Instant::now();
            let [a, b] = &replicas;
            trace.push((
                spawned.elapsed().as_secs_f64(),
                a.kib("VmRSS:"),
                b.kib("VmRSS:"),
            ));
        }
        for (at, replica) in listed.iter_mut().zip(&replicas) {
            if at.is_none() && replica.ready() {
                *at = Some(spawned.elapsed());
            }
        }
        reads.due(&api) && Published::read(&api).complete(&cluster, size.nodes)
    })
    .ok_or_else(|| {
        let now = Published::read(&api);
        Error::Unexpected(format!(
            "not everything published within {:?}: {:?} of {} Nodes, {} of {} NodePools, {} of {} images\n{}",
            options.limit,
            now.nodes(),
            size.nodes,
            now.pools(),
            cluster.pools,
            cluster.images.iter().filter(|i| now.images.contains_key(*i)).count(),
            cluster.images.len(),
            logs()
        ))
    })?;
    let until_first = api.seen();
    let [a, b] = &replicas;
    let peak_at_first = [a.kib("VmHWM:"), b.kib("VmHWM:")];
    let cpu = [
        cpu_time(&a.child.id().to_string()),
        cpu_time(&b.child.id().to_string()),
    ];
    let api_cpu = cpu_time("self")
        .zip(api_cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let published = Published::read(&api);
    let failed_lookups = published.images.values().filter(|f| **f).count();
    eprintln!("  first publication after {first:.1?}");

    let ready = wait_for(Duration::from_secs(60), Duration::from_millis(100), || {
        replicas.iter().all(Replica::ready) && replicas.iter().filter(|r| r.leads()).count() == 1
    });
    if ready.is_none() {
        return Err(Error::Unexpected(format!(
            "not both ready with one leader:\n{}",
            logs()
        )));
    }
    let (leader, standby) = if a.leads() { (a, b) } else { (b, a) };
    // Pairs are written the leader's first.
    let swapped = leader.name != a.name;
    if swapped {
        for sample in &mut trace {
            std::mem::swap(&mut sample.1, &mut sample.2);
        }
    }
    let requests = [
        tally(&by(&until_first, leader.name)),
        tally(&by(&until_first, standby.name)),
    ];

    let (new_image, new_node) = react(&api, &cluster, size, &logs)?;
    let idle_window = HEARTBEAT + Duration::from_secs(1);
    let before = api.seen().len();
    let beat_before = Published::read(&api).heartbeat();
    std::thread::sleep(idle_window);
    let quiet: Vec<Seen> = api.seen().get(before..).unwrap_or_default().to_vec();
    let beat_after = Published::read(&api).heartbeat();
    let expected = |s: &Seen| match kind(s).as_str() {
        "PUT leases" => s.token.as_deref() == Some(leader.name),
        "GET leases" => s.token.as_deref() == Some(standby.name),
        "PUT configmaps" => {
            s.token.as_deref() == Some(leader.name) && s.path.ends_with(CLUSTER_MAP)
        }
        k => k.starts_with("WATCH"),
    };
    let idle_unexpected = quiet.iter().filter(|s| !expected(s)).count();
    let peak = [leader.kib("VmHWM:"), standby.kib("VmHWM:")];
    let resident = [leader.kib("VmRSS:"), standby.kib("VmRSS:")];
    let relisted = relist(&api, [leader, standby], size, options.limit, &logs)?;
    let row = Row {
        size,
        first,
        requests,
        peak_at_first: leader_first(peak_at_first, swapped),
        listed: leader_first(listed, swapped),
        cpu: leader_first(cpu, swapped),
        api_cpu,
        page,
        peak,
        resident,
        relisted,
        trace,
        new_image,
        new_node,
        idle_window,
        idle: tally(&quiet),
        idle_unexpected,
        heartbeat_advanced: matches!((beat_before, beat_after), (Some(x), Some(y)) if y > x),
        failed_lookups,
    };
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(row)
}

/// The event history compacted and every watch broken, as after an API
/// server's restart past etcd's compaction: each replica resumes its
/// watches from a version gone, is answered 410 Expired and lists every
/// kind again, keeping what it listed before until each list is complete.
/// The time until both have listed the Pods again, and the peak resident
/// memory of each meanwhile (the peak is reset first).
fn relist(
    api: &FakeApi,
    replicas: [&Replica; 2],
    size: Size,
    limit: Duration,
    logs: &dyn Fn() -> String,
) -> Result<(Duration, [Option<u64>; 2])> {
    let pages = |name: &str| {
        api.seen()
            .iter()
            .filter(|s| s.token.as_deref() == Some(name) && kind(s) == "LIST pods")
            .count()
    };
    let before = replicas.map(|r| pages(r.name));
    for replica in replicas {
        // Linux: 5 resets the peak resident memory (VmHWM) to the current.
        let path = format!("/proc/{}/clear_refs", replica.child.id());
        std::fs::write(&path, "5").map_err(Error::io(&path))?;
    }
    // A write of a kind no replica watches makes the version they hold
    // older than the compaction.
    api.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "relist"}}));
    api.compact();
    api.reset_watches();
    let wanted = size.pods.div_ceil(500).max(1);
    let relisted = wait_for(limit, Duration::from_millis(100), || {
        replicas
            .iter()
            .zip(before)
            .all(|(r, before)| pages(r.name) >= before + wanted)
    })
    .ok_or_else(|| Error::Unexpected(format!("the Pods not listed again:\n{}", logs())))?;
    // The last page is read, then the list replaces what was kept.
    std::thread::sleep(Duration::from_secs(2));
    Ok((relisted, replicas.map(|r| r.kib("VmHWM:"))))
}

/// A pair in replica order, the leader's first.
fn leader_first<T>([a, b]: [T; 2], swapped: bool) -> [T; 2] {
    if swapped {
        [b, a]
    } else {
        [a, b]
    }
}

/// A new Deployment with a new image, then a new Node: the time until each
/// is published, and the shard ConfigMaps written for it.
fn react(
    api: &FakeApi,
    cluster: &Cluster,
    size: Size,
    logs: &dyn Fn() -> String,
) -> Result<((Duration, usize), (Duration, usize))> {
    let image = format!("{NO_REGISTRY}/shop/new:7");
    let before = api.seen().len();
    api.put(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "new", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "new"}},
            "template": {"metadata": {"labels": {"app": "new"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}}));
    let mut reads = Reads::default();
    reads.due(api);
    let image_after = wait_for(Duration::from_secs(60), Duration::from_millis(20), || {
        reads.due(api) && Published::read(api).images.contains_key(&image)
    })
    .ok_or_else(|| Error::Unexpected(format!("{image} not published:\n{}", logs())))?;
    std::thread::sleep(Duration::from_secs(2));
    let between = api.seen().len();
    api.put(cluster.new_node.clone());
    reads.due(api);
    let node_after = wait_for(Duration::from_secs(60), Duration::from_millis(20), || {
        reads.due(api) && Published::read(api).nodes() == Some(size.nodes as u64 + 1)
    })
    .ok_or_else(|| Error::Unexpected(format!("the new Node not published:\n{}", logs())))?;
    std::thread::sleep(Duration::from_secs(2));
    let seen = api.seen();
    let writes = |range: std::ops::Range<usize>| shard_writes(seen.get(range).unwrap_or_default());
    Ok((
        (image_after, writes(before..between)),
        (node_after, writes(between..seen.len())),
    ))
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "✓"
    } else {
        "✗"
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("?".to_owned(), |k| format!("{:.0} MiB", k as f64 / 1024.0))
}

fn memory_ok(kib: Option<u64>) -> bool {
    kib.is_some_and(|k| k < PEAK_MEMORY_KIB)
}

fn total(counts: &BTreeMap<String, usize>) -> usize {
    counts.values().sum()
}

/// Idle requests are independent of the cluster's size when no size
/// makes any but the Lease's, the heartbeat's and watches started again,
/// and their count a minute differs between sizes by at most the phase of
/// the Lease's reads and the heartbeat (two requests in the window).
fn idle_independent(rows: &[Row]) -> bool {
    let counts: Vec<f64> = rows.iter().map(Row::idle_per_minute).collect();
    let window = rows.first().map_or(1.0, |r| r.idle_window.as_secs_f64());
    let spread = counts.iter().cloned().fold(f64::NAN, f64::max)
        - counts.iter().cloned().fold(f64::NAN, f64::min);
    rows.iter().all(|r| r.idle_unexpected == 0) && spread <= 2.0 * 60.0 / window + 1e-9
}

/// The table: a column per size, each figure beside its target.
fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let head: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} Pods, {} Nodes, {} images, {} NodePools",
                thousands(r.size.pods as u64),
                thousands(r.size.nodes as u64),
                thousands(r.size.images as u64),
                r.size.pools
            )
        })
        .collect();
    let _ = writeln!(out, "| | {} | target |", head.join(" | "));
    let _ = writeln!(out, "|---|{}---|", "---|".repeat(rows.len()));
    let seconds =
        |d: &Option<Duration>| d.map_or("?".to_owned(), |d| format!("{:.1} s", d.as_secs_f64()));
    let mut line = |what: &str, cell: &dyn Fn(&Row) -> String, target: &str| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        let _ = writeln!(out, "| {what} | {} | {target} |", cells.join(" | "));
    };
    line(
        "first publication",
        &|r| {
            format!(
                "{:.1} s {}",
                r.first.as_secs_f64(),
                mark(r.first < FIRST_PUBLICATION)
            )
        },
        "< 60 s",
    );
    line(
        "every kind listed (ready), leader / standby",
        &|r| format!("{} / {}", seconds(&r.listed[0]), seconds(&r.listed[1])),
        "",
    );
    line(
        "CPU time until the first publication, leader / standby",
        &|r| format!("{} / {}", seconds(&r.cpu[0]), seconds(&r.cpu[1])),
        "",
    );
    line(
        "the fake API: CPU time until then; one page of 500 Pods",
        &|r| {
            format!(
                "{}; {}",
                seconds(&r.api_cpu),
                r.page.map_or("?".to_owned(), |p| format!(
                    "{:.0} ms",
                    p.as_secs_f64() * 1e3
                ))
            )
        },
        "",
    );
    line(
        "requests until then, leader / standby",
        &|r| format!("{} / {}", total(&r.requests[0]), total(&r.requests[1])),
        "",
    );
    line(
        "of which LIST pods (pages of 500), each",
        &|r| {
            let pages = |c: &BTreeMap<String, usize>| c.get("LIST pods").copied().unwrap_or(0);
            format!("{} / {}", pages(&r.requests[0]), pages(&r.requests[1]))
        },
        "",
    );
    line(
        "peak resident memory, leader",
        &|r| format!("{} {}", mib(r.peak[0]), mark(memory_ok(r.peak[0]))),
        "< 256 MiB",
    );
    line(
        "peak resident memory, standby",
        &|r| format!("{} {}", mib(r.peak[1]), mark(memory_ok(r.peak[1]))),
        "< 256 MiB",
    );
    line(
        "resident memory once idle, leader / standby",
        &|r| format!("{} / {}", mib(r.resident[0]), mib(r.resident[1])),
        "",
    );
    line(
        "a new Deployment's image published",
        &|r| {
            format!(
                "{:.2} s {} ({} shard written)",
                r.new_image.0.as_secs_f64(),
                mark(r.new_image.0 < CHANGE),
                r.new_image.1
            )
        },
        "< 2 s",
    );
    line(
        "a new Node published",
        &|r| {
            format!(
                "{:.2} s {} ({} shard written)",
                r.new_node.0.as_secs_f64(),
                mark(r.new_node.0 < CHANGE),
                r.new_node.1
            )
        },
        "< 2 s",
    );
    let independent = idle_independent(rows);
    line(
        "idle: Lease and heartbeat requests a minute",
        &|r| {
            format!(
                "{:.0} {}",
                r.idle_per_minute(),
                mark(independent && r.idle_unexpected == 0)
            )
        },
        "the same at every size",
    );
    line(
        "idle: watches started again (the fake API ends them after 60 s)",
        &|r| r.watches_restarted().to_string(),
        "",
    );
    line(
        "every kind listed again after 410 Expired (compaction): Pods listed after",
        &|r| seconds(&Some(r.relisted.0)),
        "",
    );
    line(
        "peak resident memory through that relist, leader",
        &|r| {
            format!(
                "{} {}",
                mib(r.relisted.1[0]),
                mark(memory_ok(r.relisted.1[0]))
            )
        },
        "< 256 MiB",
    );
    line(
        "peak resident memory through that relist, standby",
        &|r| {
            format!(
                "{} {}",
                mib(r.relisted.1[1]),
                mark(memory_ok(r.relisted.1[1]))
            )
        },
        "< 256 MiB",
    );
    out
}

fn counts_line(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn row_json(r: &Row) -> Value {
    let pair = |p: &[Option<u64>; 2]| json!({"leader": p[0], "standby": p[1]});
    json!({
        "pods": r.size.pods, "nodes": r.size.nodes, "images": r.size.images,
        "nodepools": r.size.pools,
        "first_publication_s": r.first.as_secs_f64(),
        "listed_s": {"leader": r.listed[0].map(|d| d.as_secs_f64()),
            "standby": r.listed[1].map(|d| d.as_secs_f64())},
        "cpu_until_first_publication_s": {"leader": r.cpu[0].map(|d| d.as_secs_f64()),
            "standby": r.cpu[1].map(|d| d.as_secs_f64())},
        "fake_api_cpu_until_first_publication_s": r.api_cpu.map(|d| d.as_secs_f64()),
        "fake_api_page_of_500_pods_ms": r.page.map(|d| d.as_secs_f64() * 1e3),
        "requests_until_first_publication": {"leader": r.requests[0], "standby": r.requests[1]},
        "failed_lookups_published": r.failed_lookups,
        "peak_rss_kib_at_first_publication": pair(&r.peak_at_first),
        "peak_rss_kib": pair(&r.peak),
        "rss_kib_once_idle": pair(&r.resident),
        "relist_after_expired_s": r.relisted.0.as_secs_f64(),
        "peak_rss_kib_through_relist": pair(&r.relisted.1),
        "rss_kib_until_first_publication": r.trace.iter()
            .map(|(t, l, s)| json!([(t * 10.0).round() / 10.0, l, s])).collect::<Vec<_>>(),
        "new_image_published_s": r.new_image.0.as_secs_f64(),
        "new_image_shard_writes": r.new_image.1,
        "new_node_published_s": r.new_node.0.as_secs_f64(),
        "new_node_shard_writes": r.new_node.1,
        "idle_window_s": r.idle_window.as_secs_f64(),
        "idle_requests": r.idle,
        "idle_requests_per_minute": r.idle_per_minute(),
        "idle_unexpected_requests": r.idle_unexpected,
        "idle_heartbeat_advanced": r.heartbeat_advanced,
        "pass": {
            "first_publication": r.first < FIRST_PUBLICATION,
            "peak_memory": r.peak.iter().chain(&r.relisted.1).all(|p| memory_ok(*p)),
            "change": r.new_image.0 < CHANGE && r.new_node.0 < CHANGE,
            "idle": r.idle_unexpected == 0,
        },
    })
}

fn run() -> Result<()> {
    let options = parse_args()?;
    let mut rows = Vec::new();
    for size in &options.sizes {
        rows.push(measure(&options, *size)?);
    }
    println!(
        "facts sync, two replicas ({}{}), against the fake API; every image on a registry that refuses connections\n",
        options.cli.display(),
        if options.pull_secrets {
            " --pull-secrets; each namespace's Pods name its own pull Secret"
        } else {
            ""
        }
    );
    print!("{}", table(&rows));
    println!("\nrequests until the first publication, by kind:");
    for r in &rows {
        for (role, counts) in ["leader", "standby"].iter().zip(&r.requests) {
            println!(
                "  {} Pods, {role}: {}",
                thousands(r.size.pods as u64),
                counts_line(counts)
            );
        }
    }
    println!(
        "\nidle, {:.0?} without changes:",
        HEARTBEAT + Duration::from_secs(1)
    );
    for r in &rows {
        println!(
            "  {} Pods: {}{}{}",
            thousands(r.size.pods as u64),
            counts_line(&r.idle),
            if r.heartbeat_advanced {
                ""
            } else {
                "; the heartbeat did not advance"
            },
            if r.idle_unexpected == 0 {
                String::new()
            } else {
                format!(
                    "; {} requests neither the Lease's, the heartbeat's nor a watch's",
                    r.idle_unexpected
                )
            }
        );
    }
    if let Some(dir) = options.json.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    }
    let document = json!({
        "cli": options.cli,
        "pull_secrets": options.pull_secrets,
        "targets": {"first_publication_s": FIRST_PUBLICATION.as_secs(),
            "peak_rss_kib": PEAK_MEMORY_KIB, "change_s": CHANGE.as_secs(),
            "idle": "the same requests a minute at every size"},
        "idle_independent_of_size": idle_independent(&rows),
        "sizes": rows.iter().map(row_json).collect::<Vec<_>>(),
    });
    let text =
        serde_json::to_string_pretty(&document).map_err(|e| Error::Unexpected(e.to_string()))?;
    std::fs::write(&options.json, text).map_err(Error::io(&options.json))?;
    println!("\nJSON: {}", options.json.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-sync-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
