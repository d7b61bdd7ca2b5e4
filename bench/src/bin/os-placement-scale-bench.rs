//! `make bench`, cluster-size axis: the cost of one request as the cluster
//! grows, with a host that answers the calls the EKS settings make, as
//! policy-server answers them (its reflector's objects cloned, masked and
//! serialised for every call). The clusters are EKS-like (`nodes.py N`: 19-20
//! labels a node, 15 % Windows) with the image facts of `images.py M`, both
//! from `../shared/tools/scale`; the host holds them as the Node list and the
//! earlier image facts ConfigMaps (what a module before the published facts
//! reads) and as the published facts `os-placement facts render` writes for
//! them (what this module reads). Each request is timed on a warm instance;
//! the time the host spends building its answers is measured apart, so the
//! policy's own time is the rest.
//!
//! The NodePool axis: the cluster of 1,000 nodes with 0, 10, 100 and 1,000
//! Karpenter NodePools (`os_placement_bench::nodepools`) published with
//! its node facts, as the syncer publishes what they launch.
//!
//! With `--server`, the same clusters are served by the fake Kubernetes API
//! of the fault suite to the real policy-server (one worker), which serves
//! the modules; wrk loads each case: throughput, p50 and p99 latency, and
//! the policy-server's memory (`make bench-server`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Instant;

use os_placement_bench::measured_host::MeasuredHost;
use os_placement_bench::stats::{stats, Stats};
use os_placement_bench::{Error, Result};
use os_placement_door::HostFacts;
use os_placement_e2e::capabilities::Cluster;
use os_placement_e2e::{admission_request, read_yaml, repo_root, wasm_path};
use os_placement_e2e::{PolicyHost, PolicyModule};
use serde_json::{json, Value};

/// (nodes, published images) per cluster size.
const SIZES: [(usize, usize); 3] = [(10, 100), (1_000, 10_000), (10_000, 50_000)];

/// NodePools per cluster on the NodePool axis, at 1,000 nodes.
const NODEPOOLS: [usize; 4] = [0, 10, 100, 1_000];

/// The private Windows image `images.py` publishes first.
const PRIVATE_IMAGE: &str = "registry.corp.example/billing/api:4.2";

struct Options {
    wasm: PathBuf,
    baseline: Option<PathBuf>,
    scale_tools: PathBuf,
    rounds: usize,
    json: PathBuf,
    sizes: Vec<(usize, usize)>,
    /// NodePool counts of the NodePool axis.
    nodepools: Vec<usize>,
    /// Through the real policy-server, from this folder (kwctl, policy-server).
    server: Option<PathBuf>,
    /// wrk's run per case and policy.
    duration: String,
}

fn parse_args() -> Result<Options> {
    let root = repo_root();
    let mut o = Options {
        wasm: wasm_path(),
        baseline: None,
        scale_tools: root.join("../shared/tools/scale"),
        rounds: 30,
        json: root.join("target/bench/scale.json"),
        sizes: SIZES.to_vec(),
        nodepools: NODEPOOLS.to_vec(),
        server: None,
        duration: "5s".to_owned(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?;
        let number = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| Error::Usage(format!("{flag} takes a number")))
        };
        match flag.as_str() {
            "--wasm" => o.wasm = value.into(),
            "--baseline" => o.baseline = Some(value.into()),
            "--scale-tools" => o.scale_tools = value.into(),
            "--rounds" => o.rounds = number(&value)?,
            "--json" => o.json = value.into(),
            "--server" => o.server = Some(value.into()),
            "--duration" => o.duration = value,
            "--nodepools" => {
                o.nodepools = value.split(',').map(number).collect::<Result<_>>()?
            }
            "--sizes" => {
                o.sizes = value
                    .split(',')
                    .map(|pair| {
                        let (n, m) = pair.split_once('/').ok_or_else(|| {
                            Error::Usage("--sizes takes NODES/IMAGES,... e.g. 10/100,1000/10000".into())
                        })?;
                        Ok((number(n)?, number(m)?))
                    })
                    .collect::<Result<_>>()?
            }
            other => {
                return Err(Error::Usage(format!(
                    "unknown flag {other}: use --wasm FILE, --baseline FILE, --scale-tools DIR, --rounds N, --json FILE, --sizes N/M,..., --nodepools N,..., --server KUBEWARDEN_DIR, --duration 5s"
                )))
            }
        }
    }
    Ok(o)
}

/// The JSON a `../shared/tools/scale` script prints.
fn generated(tools: &Path, script: &str, count: usize) -> Result<Vec<Value>> {
    let path = tools.join(script);
    let output = Command::new("python3")
        .arg(&path)
        .arg(count.to_string())
        .output()
        .map_err(Error::io(&path))?;
    if !output.status.success() {
        return Err(Error::Usage(format!(
            "{} {count} failed: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Unexpected(format!("{}: not JSON: {e}", path.display())))
}

/// The cluster of one size: its Nodes, the RuntimeClasses of the EKS
/// fixture, the earlier image facts ConfigMaps, and the published facts
/// rendered from all of them.
struct Scale {
    nodes: usize,
    cluster: Cluster,
    published_bytes: usize,
}

fn scale(tools: &Path, nodes: usize, images: usize) -> Result<Scale> {
    scale_published(tools, nodes, images, true, 0)
}

/// As [`scale`]; without `publish`, the cluster has no published facts (no
/// syncer), only its Nodes and the earlier image facts; with `pools`
/// NodePools, published with the nodes.
fn scale_published(
    tools: &Path,
    nodes: usize,
    images: usize,
    publish: bool,
    pools: usize,
) -> Result<Scale> {
    let mut node_objects = generated(tools, "nodes.py", nodes)?;
    node_objects.extend(os_placement_bench::nodepools::nodepools(pools));
    let legacy = generated(tools, "images.py", images)?;
    let runtime_classes =
        std::fs::read_to_string(repo_root().join("e2e/clusters/eks-mixed/runtimeclasses.yaml"))
            .map_err(Error::io("e2e/clusters/eks-mixed/runtimeclasses.yaml"))?;
    let mut facts = HostFacts::read(&runtime_classes).map_err(|e| Error::Unexpected(e.message))?;
    let listing = json!({"apiVersion": "v1", "kind": "List", "items": node_objects}).to_string();
    facts
        .add_text(&listing)
        .map_err(|e| Error::Unexpected(e.message))?;
    let legacy_list = json!({"apiVersion": "v1", "kind": "List", "items": legacy}).to_string();
    facts
        .add_text(&legacy_list)
        .map_err(|e| Error::Unexpected(e.message))?;
    let maps = facts.published(os_placement_core::DEFAULT_FACTS_NAMESPACE);
    let published_bytes = maps.iter().map(|m| m.to_string().len()).sum();
    let mut objects = os_placement_e2e::capabilities::objects_of(&runtime_classes)?;
    objects.extend(node_objects);
    objects.extend(legacy);
    if publish {
        objects.extend(maps);
    }
    Ok(Scale {
        nodes,
        cluster: Cluster::from_objects(objects),
        published_bytes,
    })
}

const WINDOWS: &str = "Windows Pod (ltsc2022 IIS)";
const WINDOWS_OFF: &str = "Windows Pod, no host call";
const PRIVATE: &str = "private-image Pod";
const PRIVATE_OFF: &str = "private-image Pod, no host call";

/// One request to time: its name, the AdmissionRequest and the settings
/// (the EKS settings; or with nodeInventory and imageLookup off, so the
/// same request makes no host call).
struct Case {
    name: &'static str,
    request: Value,
    settings: Value,
}

fn cases() -> Result<Vec<Case>> {
    let root = repo_root();
    let settings = read_yaml(&root.join("examples/settings/eks.yaml"))?;
    // Placed by the policy (its image names the build, no selector does), so
    // it reads the node facts: a Pod its own selectors place reads none.
    let mut windows = read_yaml(&root.join("bench/cases/a-windows-pod-placed.yaml"))?;
    if let Some(spec) = windows.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("nodeSelector");
    }
    let private = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "billing", "namespace": "shop"},
        "spec": {"containers": [{"name": "api", "image": PRIVATE_IMAGE}]}});
    let mut off = settings.clone();
    if let Some(map) = off.as_object_mut() {
        map.insert("nodeInventory".into(), json!("off"));
        map.insert("imageLookup".into(), json!("off"));
    }
    let mut cases = Vec::new();
    for (name, object) in [(WINDOWS, &windows), (PRIVATE, &private)] {
        cases.push(Case {
            name,
            request: admission_request(object, "CREATE", None, None),
            settings: settings.clone(),
        });
        cases.push(Case {
            name: if name == WINDOWS {
                WINDOWS_OFF
            } else {
                PRIVATE_OFF
            },
            request: admission_request(object, "CREATE", None, None),
            settings: off.clone(),
        });
    }
    Ok(cases)
}

/// The figures of one (size, module, case).
#[derive(Debug, Clone, Copy)]
struct Figures {
    total: Stats,
    host: Stats,
    policy: Stats,
    answer_bytes: usize,
    accepted: bool,
}

fn time_case(
    instance: &PolicyHost,
    host: &MeasuredHost,
    case: &Case,
    rounds: usize,
) -> Result<Figures> {
    let payload = serde_json::to_vec(&json!({"request": case.request, "settings": case.settings}))
        .map_err(|e| Error::Unexpected(e.to_string()))?;
    let evaluation = instance.validate(&case.request, &case.settings)?;
    let answer_bytes = host.take().bytes;
    let (mut totals, mut hosts, mut policies) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let _ = std::hint::black_box(instance.call("validate", &payload));
        let total = started.elapsed();
        let spent = host.take().time;
        totals.push(total);
        hosts.push(spent);
        policies.push(total.saturating_sub(spent));
    }
    Ok(Figures {
        total: stats(&mut totals),
        host: stats(&mut hosts),
        policy: stats(&mut policies),
        answer_bytes,
        accepted: evaluation.response.accepted,
    })
}

/// Peak linear memory of one evaluation on a fresh instance whose host
/// answers from the cluster, in KiB: the smallest cap that lets it answer.
fn peak_memory(module: &PolicyModule, host: Arc<MeasuredHost>, case: &Case) -> Result<usize> {
    const PAGE: usize = 64 * 1024;
    let (mut low, mut high) = (1usize, 65_536usize);
    while low < high {
        let pages = low + (high - low) / 2;
        let capped = module.with_memory_limit(pages * PAGE)?;
        let fits = capped
            .instantiate_with(host.clone())
            .and_then(|instance| instance.validate(&case.request, &case.settings))
            .is_ok();
        if fits {
            high = pages;
        } else {
            low = pages + 1;
        }
    }
    host.take();
    Ok(low * PAGE / 1024)
}

fn run() -> Result<()> {
    let options = parse_args()?;
    if let Some(kubewarden) = &options.server {
        return server::run(&options, kubewarden);
    }
    let mut modules = vec![("os-placement", PolicyModule::compile(&options.wasm)?)];
    if let Some(baseline) = &options.baseline {
        modules.push(("before", PolicyModule::compile(baseline)?));
    }
    let cases = cases()?;
    let mut rows = Vec::new();
    println!(
        "cluster size axis: warm instance, median of {} requests; µs (host: building the host's answers; policy: the rest)",
        options.rounds
    );
    println!(
        "\n| nodes | images | module | case | total µs | host µs | policy µs | answer bytes | peak memory KiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (nodes, images) in &options.sizes {
        rows.extend(time_size(&options, *nodes, *images, &modules, &cases)?);
    }
    unpublished(&options, &modules, &cases, &mut rows)?;
    nodepool_axis(&options, &modules, &cases, &mut rows)?;
    summary(&rows);
    if let Some(dir) = options.json.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    }
    let text = serde_json::to_string_pretty(&json!({"rows": rows}))
        .map_err(|e| Error::Unexpected(e.to_string()))?;
    std::fs::write(&options.json, text).map_err(Error::io(&options.json))?;
    println!("\nJSON: {}", options.json.display());
    Ok(())
}

/// Every case on every module in the cluster of one size, a row each.
fn time_size(
    options: &Options,
    nodes: usize,
    images: usize,
    modules: &[(&str, PolicyModule)],
    cases: &[Case],
) -> Result<Vec<Value>> {
    let started = Instant::now();
    let scale = scale(&options.scale_tools, nodes, images)?;
    eprintln!(
        "cluster of {nodes} nodes and {images} images ready in {:.1?} ({} bytes published)",
        started.elapsed(),
        scale.published_bytes
    );
    let host = Arc::new(MeasuredHost::new(scale.cluster.clone()));
    let mut rows = Vec::new();
    for (name, module) in modules {
        let instance = module.instantiate_with(host.clone())?;
        for case in cases {
            let figures = time_case(&instance, &host, case, options.rounds)?;
            let memory = peak_memory(module, host.clone(), case)?;
            println!(
                "| {nodes} | {images} | {name} | {} | {:.1} | {:.1} | {:.1} | {} | {memory} |",
                case.name,
                figures.total.median,
                figures.host.median,
                figures.policy.median,
                figures.answer_bytes
            );
            rows.push(json!({"nodes": nodes, "images": images, "module": name,
                "case": case.name, "total_us": figures.total.median, "total_p99_us": figures.total.p99,
                "host_us": figures.host.median, "policy_us": figures.policy.median,
                "answer_bytes": figures.answer_bytes, "peak_memory_kib": memory,
                "accepted": figures.accepted}));
        }
    }
    Ok(rows)
}

/// The module in a cluster of 1,000 nodes with no published facts (no
/// syncer): one list with an empty answer, the node check skipped.
fn unpublished(
    options: &Options,
    modules: &[(&str, PolicyModule)],
    cases: &[Case],
    rows: &mut Vec<Value>,
) -> Result<()> {
    let scale = scale_published(&options.scale_tools, 1_000, 100, false, 0)?;
    let axis = Axis {
        column: "no facts published".to_owned(),
        fields: json!({"images": 0, "published": false}),
        last_column: " |",
    };
    time_module(options, &scale, modules, cases, &axis, rows)
}

/// The module at 1,000 nodes and 10,000 images with each count of
/// NodePools published beside the nodes.
fn nodepool_axis(
    options: &Options,
    modules: &[(&str, PolicyModule)],
    cases: &[Case],
    rows: &mut Vec<Value>,
) -> Result<()> {
    println!(
        "\n| nodes | NodePools | module | case | total µs | host µs | policy µs | answer bytes |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for pools in &options.nodepools {
        let scale = scale_published(&options.scale_tools, 1_000, 10_000, true, *pools)?;
        let axis = Axis {
            column: pools.to_string(),
            fields: json!({"nodepools": pools}),
            last_column: "",
        };
        time_module(options, &scale, modules, cases, &axis, rows)?;
    }
    Ok(())
}

/// A row's second column and the fields its JSON row carries.
struct Axis {
    column: String,
    fields: Value,
    last_column: &'static str,
}

/// This module's cases that make host calls, in `scale`: a table row and a
/// JSON row each.
fn time_module(
    options: &Options,
    scale: &Scale,
    modules: &[(&str, PolicyModule)],
    cases: &[Case],
    axis: &Axis,
    rows: &mut Vec<Value>,
) -> Result<()> {
    let host = Arc::new(MeasuredHost::new(scale.cluster.clone()));
    for (name, module) in modules.iter().filter(|(name, _)| *name == "os-placement") {
        let instance = module.instantiate_with(host.clone())?;
        for case in cases.iter().filter(|c| !c.name.contains("no host call")) {
            let figures = time_case(&instance, &host, case, options.rounds)?;
            println!(
                "| {} | {} | {name} | {} | {:.1} | {:.1} | {:.1} | {} |{}",
                scale.nodes,
                axis.column,
                case.name,
                figures.total.median,
                figures.host.median,
                figures.policy.median,
                figures.answer_bytes,
                axis.last_column
            );
            let mut row = json!({"nodes": scale.nodes, "module": name,
                "case": case.name, "total_us": figures.total.median, "host_us": figures.host.median,
                "policy_us": figures.policy.median, "answer_bytes": figures.answer_bytes});
            if let (Some(row), Some(fields)) = (row.as_object_mut(), axis.fields.as_object()) {
                row.extend(fields.clone());
            }
            rows.push(row);
        }
    }
    Ok(())
}

/// The targets' ratios: the policy's time at the largest cluster to the
/// smallest's, and to a request that makes no host call.
fn summary(rows: &[Value]) {
    let policy = |nodes: u64, case: &str| {
        rows.iter()
            .filter(|r| r.get("published").is_none() && r.get("nodepools").is_none())
            .find(|r| r["module"] == "os-placement" && r["nodes"] == nodes && r["case"] == case)
            .and_then(|r| r["policy_us"].as_f64())
    };
    let sizes: Vec<u64> = rows
        .iter()
        .filter(|r| r.get("published").is_none() && r.get("nodepools").is_none())
        .filter_map(|r| r["nodes"].as_u64())
        .collect();
    let (Some(small), Some(large)) = (sizes.iter().min(), sizes.iter().max()) else {
        return;
    };
    println!();
    for (case, off) in [(WINDOWS, WINDOWS_OFF), (PRIVATE, PRIVATE_OFF)] {
        let (Some(at_small), Some(at_large), Some(no_call)) = (
            policy(*small, case),
            policy(*large, case),
            policy(*large, off),
        ) else {
            continue;
        };
        println!(
            "{case}: policy at {large} nodes / at {small} nodes = {:.2}x; / the same request with no host call = {:.2}x",
            at_large / at_small,
            at_large / no_call
        );
    }
    nodepool_summary(rows);
}

/// The policy's time with the most NodePools to its time with none.
fn nodepool_summary(rows: &[Value]) {
    let pooled: Vec<&Value> = rows
        .iter()
        .filter(|r| r.get("nodepools").is_some())
        .collect();
    let most = pooled.iter().filter_map(|r| r["nodepools"].as_u64()).max();
    let policy = |pools: u64, case: &str| {
        pooled
            .iter()
            .find(|r| r["nodepools"] == pools && r["case"] == case)
            .and_then(|r| r["policy_us"].as_f64())
    };
    let Some(most) = most else {
        return;
    };
    for case in [WINDOWS, PRIVATE] {
        if let (Some(none), Some(many)) = (policy(0, case), policy(most, case)) {
            println!(
                "{case}: policy with {most} NodePools / with none = {:.2}x",
                many / none
            );
        }
    }
}

/// The clusters served to the real policy-server.
mod server {
    use std::path::Path;
    use std::process::Command;

    use os_placement_bench::{Error, Result};
    use os_placement_e2e::faults::api::FakeApi;
    use os_placement_e2e::review::review_of;
    use os_placement_e2e::{read_yaml, repo_root};
    use serde_json::{json, Value};
    use xtask::annotate::{annotate_file, AnnotateFiles};
    use xtask::local::http::post_json;
    use xtask::local::policy_server::PolicyServer;

    use super::{cases, scale, Case, Options};

    /// What wrk measured: requests per second, p50 and p99 in µs.
    fn wrk(url: &str, review: &Path, script: &Path, duration: &str) -> Result<(f64, f64, f64)> {
        let output = Command::new("wrk")
            .args(["-t1", "-c4", "-d", duration, "--latency", "-s"])
            .arg(script)
            .arg(url)
            .env("REVIEW", review)
            .output()
            .map_err(Error::io("wrk"))?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if text.contains("Non-2xx") || !output.status.success() {
            return Err(Error::Unexpected(format!("wrk against {url}: {text}")));
        }
        let field = |prefix: &str| {
            text.lines()
                .find_map(|l| l.trim_start().strip_prefix(prefix))
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        let micros = |v: String| {
            let number: f64 = v
                .trim_end_matches(|c: char| c.is_alphabetic())
                .parse()
                .unwrap_or(f64::NAN);
            match v.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.') {
                "us" => number,
                "ms" => number * 1e3,
                "s" => number * 1e6,
                _ => f64::NAN,
            }
        };
        let rps = field("Requests/sec:").parse().unwrap_or(f64::NAN);
        Ok((rps, micros(field("50%")), micros(field("99%"))))
    }

    /// policy-server's resident and peak memory, KiB.
    fn memory(pid: u32) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (kib("VmRSS:"), kib("VmHWM:"))
    }

    fn policy(module: &Path, settings: &Value, reads_nodes: bool) -> Value {
        let mut resources = vec![
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"}),
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        ];
        if reads_nodes {
            resources.push(json!({"apiVersion": "v1", "kind": "Node"}));
        }
        json!({"module": format!("file://{}", module.display()), "settings": settings,
               "allowedToMutate": true, "contextAwareResources": resources,
               "hostCapabilities": ["*"]})
    }

    /// The modules annotated in `dir`, and their entries of policy-server's
    /// policies file: the earlier build may also read Nodes.
    fn annotate(options: &Options, dir: &Path) -> Result<(Value, Vec<&'static str>)> {
        let root = repo_root();
        let settings = read_yaml(&root.join("examples/settings/eks.yaml"))?;
        let mut modules = vec![("os-placement", options.wasm.clone(), false)];
        if let Some(baseline) = &options.baseline {
            modules.push(("before", baseline.clone(), true));
        }
        let mut policies = serde_json::Map::new();
        for (name, wasm, reads_nodes) in &modules {
            let output = dir.join(format!("{name}.wasm"));
            let files = AnnotateFiles {
                wasm,
                metadata: &root.join("metadata.yml"),
                usage: None,
                output: &output,
            };
            annotate_file(&files, "v1")?;
            policies.insert((*name).to_owned(), policy(&output, &settings, *reads_nodes));
        }
        let names = modules.iter().map(|(name, _, _)| *name).collect();
        Ok((Value::Object(policies), names))
    }

    /// What every size is served with.
    struct Served<'a> {
        kubewarden: &'a Path,
        policies: &'a Value,
        modules: &'a [&'static str],
        script: &'a Path,
        dir: &'a Path,
    }

    /// The cluster of one size behind the fake API, policy-server in front,
    /// every case loaded on every module; a row each.
    fn serve_size(
        options: &Options,
        served: &Served<'_>,
        cases: &[Case],
        nodes: usize,
        images: usize,
    ) -> Result<Vec<Value>> {
        let scale = scale(&options.scale_tools, nodes, images)?;
        let api = FakeApi::start(scale.cluster.objects().to_vec())?;
        let kubeconfig = served.dir.join("kubeconfig");
        api.kubeconfig(&kubeconfig)?;
        let work = served.dir.join(format!("server-{nodes}"));
        std::fs::create_dir_all(&work).map_err(Error::io(&work))?;
        let binary = served.kubewarden.join("policy-server");
        let mut server =
            PolicyServer::spawn_workers(&binary, &work, served.policies, &kubeconfig, 1)?;
        server.wait_ready(std::time::Duration::from_secs(180))?;
        let mut rows = Vec::new();
        for case in cases {
            let review = review_of(&case.request);
            let path = work.join(format!("{}.json", case.name.replace(' ', "-")));
            std::fs::write(&path, review.to_string()).map_err(Error::io(&path))?;
            for name in served.modules {
                // The first request starts the reflectors it needs.
                post_json(server.port(), &format!("/validate/{name}"), &review)?;
                let url = format!("http://127.0.0.1:{}/validate/{name}", server.port());
                let (rps, p50, p99) = wrk(&url, &path, served.script, &options.duration)?;
                let (rss, peak) = memory(server.pid());
                println!(
                    "| {nodes} | {images} | {name} | {} | {rps:.0} | {p50:.0} | {p99:.0} | {rss} / {peak} |",
                    case.name
                );
                rows.push(json!({"nodes": nodes, "images": images, "module": name, "case": case.name,
                    "requests_per_s": rps, "p50_us": p50, "p99_us": p99, "rss_kib": rss, "peak_kib": peak}));
            }
        }
        Ok(rows)
    }

    /// wrk's script: POST the AdmissionReview file `$REVIEW`.
    const POST_SCRIPT: &str = "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nlocal f = assert(io.open(os.getenv(\"REVIEW\"), \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n";

    /// Every size served in turn; the table printed, the rows written as JSON.
    pub fn run(options: &Options, kubewarden: &Path) -> Result<()> {
        let dir =
            std::env::temp_dir().join(format!("os-placement-server-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        let (policies, modules) = annotate(options, &dir)?;
        let script = dir.join("post.lua");
        std::fs::write(&script, POST_SCRIPT).map_err(Error::io(&script))?;
        let cases: Vec<_> = cases()?
            .into_iter()
            .filter(|c| !c.name.contains("no host call"))
            .collect();
        println!(
            "through policy-server ({}), 1 worker, wrk -t1 -c4 -d{}",
            kubewarden.join("policy-server").display(),
            options.duration
        );
        println!("\n| nodes | images | module | case | req/s | p50 µs | p99 µs | policy-server RSS / peak KiB |");
        println!("|---|---|---|---|---|---|---|---|");
        let served = Served {
            kubewarden,
            policies: &policies,
            modules: &modules,
            script: &script,
            dir: &dir,
        };
        let mut rows = Vec::new();
        for (nodes, images) in &options.sizes {
            rows.extend(serve_size(options, &served, &cases, *nodes, *images)?);
        }
        let json_path = options.json.with_file_name("server-scale.json");
        if let Some(parent) = json_path.parent() {
            std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
        }
        std::fs::write(&json_path, json!({"rows": rows}).to_string())
            .map_err(Error::io(&json_path))?;
        println!("\nJSON: {}", json_path.display());
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-scale-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
