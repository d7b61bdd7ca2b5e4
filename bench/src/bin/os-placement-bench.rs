//! `make bench`: os-placement against a floor (a minimal SDK guest that
//! parses the request and accepts) and other Kubewarden policies, on the same
//! requests, in one interleaved run, so that ratios to the floor hold on a
//! noisy machine. Prints a table and writes the figures as JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use os_placement_bench::measured_host::MeasuredHost;
use os_placement_bench::stats::{stats, Stats};
use os_placement_bench::stderr::StderrTo;
use os_placement_bench::{Error, Result};
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, corpus_dir, read_yaml, repo_root, wasm_path};
use os_placement_e2e::{PolicyHost, PolicyModule};
use serde_json::{json, Value};

const FLOOR_WASM: &str = "target/wasm32-wasip1/release/os_placement_bench_floor.wasm";
const PEERS: &str = "../shared/bench/peers";
const CONTAINER_COUNTS: [usize; 4] = [1, 10, 100, 1000];

struct Options {
    wasm: PathBuf,
    floor: PathBuf,
    peers: PathBuf,
    corpus: PathBuf,
    cases: PathBuf,
    settings: PathBuf,
    rounds: usize,
    json: PathBuf,
    write_reviews: Option<PathBuf>,
    /// An earlier build of os-placement, run with the same settings.
    baseline: Option<PathBuf>,
}

fn parse_args() -> Result<Options> {
    let root = repo_root();
    let mut o = Options {
        wasm: wasm_path(),
        floor: root.join(FLOOR_WASM),
        peers: root.join(PEERS),
        corpus: corpus_dir(),
        cases: root.join("bench/cases"),
        settings: root.join("examples/settings/eks.yaml"),
        rounds: 100,
        json: root.join("target/bench/bench.json"),
        write_reviews: None,
        baseline: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--wasm" => o.wasm = value.into(),
            "--floor" => o.floor = value.into(),
            "--peers" => o.peers = value.into(),
            "--corpus" => o.corpus = value.into(),
            "--cases" => o.cases = value.into(),
            "--settings" => o.settings = value.into(),
            "--rounds" => {
                o.rounds = value
                    .parse()
                    .map_err(|_| Error::Usage("--rounds takes a number".to_owned()))?
            }
            "--json" => o.json = value.into(),
            "--write-reviews" => o.write_reviews = Some(value.into()),
            "--baseline" => o.baseline = Some(value.into()),
            other => {
                return Err(Error::Usage(format!(
                    "unknown flag {other}: use --wasm, --floor, --peers DIR, --corpus DIR, --cases DIR, \
                     --settings FILE, --rounds N, --json FILE, --write-reviews DIR, --baseline FILE"
                )))
            }
        }
    }
    Ok(o)
}

/// A policy under test: its compiled module, a warm instance, its settings
/// and, for os-placement, the host answering its calls.
struct Policy {
    name: String,
    module: PolicyModule,
    warm: PolicyHost,
    settings: Value,
    host: Option<Arc<MeasuredHost>>,
}

impl Policy {
    fn load(name: &str, path: &Path, settings: Value) -> Result<Self> {
        Self::load_with(name, path, settings, None)
    }

    /// A policy whose host calls `host` answers, as policy-server answers
    /// the calls a policy's `contextAwareResources` grant.
    fn load_with(
        name: &str,
        path: &Path,
        settings: Value,
        host: Option<Arc<MeasuredHost>>,
    ) -> Result<Self> {
        let mut module = PolicyModule::compile(path)?;
        if let Some(host) = &host {
            module = module.with_host_calls(host.clone());
        }
        let warm = module.instantiate()?;
        Ok(Self {
            name: name.to_owned(),
            module,
            warm,
            settings,
            host,
        })
    }

    /// Host calls per request of a case, on the warm instance.
    fn host_calls(&self, case: &Case) -> Result<f64> {
        let Some(host) = &self.host else {
            return Ok(0.0);
        };
        host.take();
        for request in &case.requests {
            self.warm.validate(request, &self.settings)?;
        }
        Ok(host.take().calls as f64 / case.requests.len().max(1) as f64)
    }

    fn payload(&self, request: &Value) -> Result<Vec<u8>> {
        serde_json::to_vec(&json!({"request": request, "settings": self.settings}))
            .map_err(|e| Error::Unexpected(e.to_string()))
    }
}

/// One benchmark case: a title and its AdmissionRequests.
struct Case {
    id: String,
    title: String,
    requests: Vec<Value>,
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(Error::io(dir))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    // Sorted so every run evaluates the same sequence.
    files.sort();
    Ok(files)
}

fn create_request(file: &Path) -> Result<Value> {
    Ok(admission_request(&read_yaml(file)?, "CREATE", None, None))
}

fn load_cases(options: &Options) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for file in yaml_files(&options.cases)? {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (id, title) = stem.split_once('-').unwrap_or(("?", &stem));
        cases.push(Case {
            id: id.to_owned(),
            title: title.replace('-', " "),
            requests: vec![create_request(&file)?],
        });
    }
    let corpus = yaml_files(&options.corpus).map_err(|e| {
        Error::Usage(format!(
            "{e}: the corpus is missing: set OS_PLACEMENT_CORPUS (or --corpus) to the directory of the corpus manifests"
        ))
    })?;
    cases.push(Case {
        id: "e".to_owned(),
        title: format!("corpus, {} manifests, per request", corpus.len()),
        requests: corpus
            .iter()
            .map(|f| create_request(f))
            .collect::<Result<_>>()?,
    });
    Ok(cases)
}

/// What os-placement must answer on the fixed cases, so the figures are of
/// the work the README describes: (accepted, patched).
fn expected(case_id: &str) -> Option<(bool, bool)> {
    match case_id {
        "a" | "b" | "f" => Some((true, false)),
        "c" | "d" | "g" => Some((true, true)),
        _ => None,
    }
}

fn check_outcomes(policy: &Policy, cases: &[Case]) -> Result<()> {
    for case in cases {
        let Some((accepted, patched)) = expected(&case.id) else {
            continue;
        };
        for request in &case.requests {
            let evaluation = policy.warm.validate(request, &policy.settings)?;
            let got = (evaluation.response.accepted, evaluation.patched());
            if got != (accepted, patched) {
                return Err(Error::Unexpected(format!(
                    "case ({}) {}: {} answered accepted={} patched={}, the bench expects accepted={accepted} patched={patched}: {}",
                    case.id, case.title, policy.name, got.0, got.1, evaluation.response.message()
                )));
            }
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Warm,
    Fresh,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Warm => "warm",
            Mode::Fresh => "fresh",
        }
    }
}

/// One evaluation in `mode`; fresh is what policy-server does per request:
/// rehydrate the `InstancePre`, waPC initialisation, then the call. A guest
/// error (a peer refusing a kind it does not parse) is an answer too, timed
/// like any other; failing to instantiate is an error.
fn evaluate_once(policy: &Policy, mode: Mode, payload: &[u8]) -> Result<Duration> {
    let start = Instant::now();
    match mode {
        Mode::Warm => {
            let _ = std::hint::black_box(policy.warm.call("validate", payload));
        }
        Mode::Fresh => {
            let host = policy.module.instantiate()?;
            let _ = std::hint::black_box(host.call("validate", payload));
        }
    }
    Ok(start.elapsed())
}

/// The answer of a fresh instance, or its error text.
fn answer(module: &PolicyModule, payload: &[u8]) -> std::result::Result<Vec<u8>, String> {
    module
        .instantiate()
        .and_then(|host| host.call("validate", payload))
        .map_err(|e| format!("{e:#}"))
}

/// Times every case on every policy in both modes, interleaved: each round
/// visits every (case, policy, mode) once, the policy order rotating, so slow
/// phases of a shared machine fall on all of them alike. The corpus (many
/// requests) is visited every fifth round.
fn time_cases(
    policies: &[Policy],
    cases: &[Case],
    payloads: &[Vec<Vec<Vec<u8>>>],
    rounds: usize,
) -> Result<Vec<Vec<[Stats; 2]>>> {
    let modes = [Mode::Warm, Mode::Fresh];
    let mut samples: Vec<Vec<[Vec<Duration>; 2]>> = policies
        .iter()
        .map(|_| cases.iter().map(|_| [Vec::new(), Vec::new()]).collect())
        .collect();
    for round in 0..=rounds {
        for (ci, case) in cases.iter().enumerate() {
            if case.requests.len() > 1 && round % 5 != 0 {
                continue;
            }
            for k in 0..policies.len() {
                let pi = (k + round) % policies.len();
                let (Some(policy), Some(per_case)) = (policies.get(pi), payloads.get(pi)) else {
                    continue;
                };
                for (mi, mode) in modes.iter().enumerate() {
                    for payload in per_case.get(ci).into_iter().flatten() {
                        let took = evaluate_once(policy, *mode, payload)?;
                        // Round 0 warms caches and the allocator up.
                        if round > 0 {
                            if let Some(s) = samples
                                .get_mut(pi)
                                .and_then(|p| p.get_mut(ci))
                                .and_then(|c| c.get_mut(mi))
                            {
                                s.push(took);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(samples
        .into_iter()
        .map(|per_case| {
            per_case
                .into_iter()
                .map(|[mut warm, mut fresh]| [stats(&mut warm), stats(&mut fresh)])
                .collect()
        })
        .collect())
}

/// Median compile time of each module (three compiles each, interleaved).
fn compile_times(paths: &[PathBuf]) -> Result<Vec<f64>> {
    let mut samples: Vec<Vec<Duration>> = paths.iter().map(|_| Vec::new()).collect();
    for _ in 0..3 {
        for (path, s) in paths.iter().zip(samples.iter_mut()) {
            s.push(PolicyModule::compile(path)?.compile_time());
        }
    }
    Ok(samples.iter_mut().map(|s| stats(s).median / 1e3).collect())
}

/// Median time to make a fresh instance ready for a request (rehydrate the
/// `InstancePre`, waPC initialisation, one `protocol_version` call), µs:
/// the part of a fresh request that does not depend on the request.
fn instantiate_times(policies: &[Policy], rounds: usize) -> Result<Vec<f64>> {
    let mut samples: Vec<Vec<Duration>> = policies.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds.max(20) {
        for (policy, s) in policies.iter().zip(samples.iter_mut()) {
            let start = Instant::now();
            let host = policy.module.instantiate()?;
            std::hint::black_box(host.call("protocol_version", b"")?);
            s.push(start.elapsed());
        }
    }
    Ok(samples.iter_mut().map(|s| stats(s).median).collect())
}

const PAGE: usize = 65_536;

/// Peak linear memory of one evaluation on a fresh instance: the smallest
/// memory cap (in 64 KiB pages) under which instantiation and the call succeed.
fn peak_memory(module: &PolicyModule, payload: &[u8]) -> Result<usize> {
    // The unlimited answer (an error for a request a peer refuses) is what
    // enough memory gives; running out traps with another error.
    let expected = answer(module, payload);
    let fits = |pages: usize| -> Result<bool> {
        let capped = module.with_memory_limit(pages * PAGE)?;
        Ok(answer(&capped, payload) == expected)
    };
    let mut high = 64;
    while !fits(high)? {
        high *= 2;
        if high > 65_536 {
            return Err(Error::Unexpected(
                "no evaluation within 4 GiB of linear memory".to_owned(),
            ));
        }
    }
    let mut low = 0; // does not fit
    while high - low > 1 {
        let mid = (low + high) / 2;
        if fits(mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(high * PAGE)
}

/// A placed Windows Pod with `n` containers, each with the same image.
fn pod_with_containers(n: usize) -> Value {
    let containers: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("c{i}"),
                "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
            })
        })
        .collect();
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "many", "namespace": "bench"},
        "spec": {
            "nodeSelector": {
                "kubernetes.io/os": "windows",
                "node.kubernetes.io/windows-build": "10.0.20348",
            },
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}],
            "containers": containers,
        },
    });
    admission_request(&pod, "CREATE", None, None)
}

/// Warm median per request for each container count and policy, interleaved.
fn time_containers(policies: &[Policy], rounds: usize) -> Result<Vec<Vec<f64>>> {
    let payloads: Vec<Vec<Vec<u8>>> = policies
        .iter()
        .map(|p| {
            CONTAINER_COUNTS
                .iter()
                .map(|n| p.payload(&pod_with_containers(*n)))
                .collect()
        })
        .collect::<Result<_>>()?;
    let mut samples: Vec<Vec<Vec<Duration>>> = policies
        .iter()
        .map(|_| CONTAINER_COUNTS.iter().map(|_| Vec::new()).collect())
        .collect();
    for round in 0..=rounds {
        for (pi, policy) in policies.iter().enumerate() {
            for ni in 0..CONTAINER_COUNTS.len() {
                let Some(payload) = payloads.get(pi).and_then(|p| p.get(ni)) else {
                    continue;
                };
                let took = evaluate_once(policy, Mode::Warm, payload)?;
                if let Some(s) = samples.get_mut(pi).and_then(|p| p.get_mut(ni)) {
                    if round > 0 {
                        s.push(took);
                    }
                }
            }
        }
    }
    Ok(samples
        .iter_mut()
        .map(|per_n| per_n.iter_mut().map(|s| stats(s).median).collect())
        .collect())
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cpus} CPUs")
}

fn write_reviews(dir: &Path, cases: &[Case]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    for case in cases.iter().filter(|c| c.requests.len() == 1) {
        for request in &case.requests {
            let path = dir.join(format!("{}.json", case.id));
            let review = serde_json::to_vec(&review_of(request)).unwrap_or_default();
            std::fs::write(&path, review).map_err(Error::io(&path))?;
        }
    }
    println!("AdmissionReviews written to {}", dir.display());
    Ok(())
}

/// The host os-placement's calls reach: an empty cluster, one per policy so
/// their call counts stay apart.
fn host() -> Option<Arc<MeasuredHost>> {
    Some(Arc::new(MeasuredHost::empty_cluster()))
}

fn load_policies(options: &Options) -> Result<(Vec<Policy>, Vec<PathBuf>)> {
    let settings = read_yaml(&options.settings)?;
    let mut paths = vec![options.floor.clone(), options.wasm.clone()];
    let mut policies = vec![
        Policy::load("floor", &options.floor, json!({})).map_err(|e| {
            Error::Usage(format!(
                "the floor module {} (make bench builds it): {e}",
                options.floor.display()
            ))
        })?,
        Policy::load_with("os-placement", &options.wasm, settings.clone(), host())?,
    ];
    // The same module with no host call: what the request alone costs.
    let mut no_call = settings.clone();
    if let Some(map) = no_call.as_object_mut() {
        map.insert("imageLookup".into(), json!("off"));
        map.insert("nodeInventory".into(), json!("off"));
    }
    policies.push(Policy::load_with(
        "no host call",
        &options.wasm,
        no_call,
        host(),
    )?);
    paths.push(options.wasm.clone());
    if let Some(baseline) = &options.baseline {
        policies.push(Policy::load_with("baseline", baseline, settings, host())?);
        paths.push(baseline.clone());
    }
    let peers = std::fs::read_dir(&options.peers)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_else(|_| {
            eprintln!(
                "SKIPPED: peers not found ({}; pass --peers DIR)",
                options.peers.display()
            );
            Vec::new()
        });
    let mut peers: Vec<PathBuf> = peers
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    peers.sort();
    for path in peers {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().trim_end_matches("-policy").to_owned())
            .unwrap_or_default();
        // Both peers run on their default settings (their README).
        policies.push(Policy::load(&name, &path, json!({}))?);
        paths.push(path);
    }
    Ok((policies, paths))
}

fn cell(s: Stats, floor: Stats) -> String {
    format!(
        "{:>7.1} {:>7.1} {:>5.2}x",
        s.median,
        s.p99,
        s.median / floor.median
    )
}

fn run(options: &Options) -> Result<()> {
    let cases = load_cases(options)?;
    if let Some(dir) = &options.write_reviews {
        return write_reviews(dir, &cases);
    }
    let (policies, paths) = load_policies(options)?;
    if let Some(ours) = policies.get(1) {
        check_outcomes(ours, &cases)?;
    }
    let payloads: Vec<Vec<Vec<Vec<u8>>>> = policies
        .iter()
        .map(|p| {
            cases
                .iter()
                .map(|c| c.requests.iter().map(|r| p.payload(r)).collect())
                .collect()
        })
        .collect::<Result<_>>()?;

    note_guest_errors(&policies, &cases, &payloads);
    let compile = compile_times(&paths)?;
    let instantiate = instantiate_times(&policies, options.rounds)?;
    let timings = time_cases(&policies, &cases, &payloads, options.rounds)?;
    let containers = time_containers(&policies, (options.rounds / 10).max(5))?;
    let memory = {
        let log = options.json.with_file_name("peak-memory-probe.log");
        let _quiet = StderrTo::file(&log).map_err(|source| Error::Io { path: log, source })?;
        peak_memories(&policies, &payloads)?
    };

    let calls = policies
        .iter()
        .map(|p| cases.iter().map(|c| p.host_calls(c)).collect())
        .collect::<Result<_>>()?;
    let measured = Measured {
        compile,
        instantiate,
        timings,
        containers,
        memory,
        calls,
    };
    print_report(options, &policies, &cases, &measured);
    let report = json_report(options, &policies, &cases, &measured);
    if let Some(dir) = options.json.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    }
    let text = serde_json::to_vec_pretty(&report).unwrap_or_default();
    std::fs::write(&options.json, text).map_err(Error::io(&options.json))?;
    println!("\nJSON: {}", options.json.display());
    Ok(())
}

/// Says which policies answer some requests with a waPC error (a peer
/// refusing a kind it does not parse); those answers are timed too.
fn note_guest_errors(policies: &[Policy], cases: &[Case], payloads: &[Vec<Vec<Vec<u8>>>]) {
    for (policy, per_case) in policies.iter().zip(payloads) {
        for (case, payloads) in cases.iter().zip(per_case) {
            let errors = payloads
                .iter()
                .filter(|p| policy.warm.call("validate", p).is_err())
                .count();
            if errors > 0 {
                println!(
                    "note: {} answers ({}) with a waPC error on {errors} of {} requests (timed all the same)",
                    policy.name,
                    case.id,
                    payloads.len()
                );
            }
        }
    }
}

/// Peak linear memory per policy and case: the largest over the case's requests.
fn peak_memories(policies: &[Policy], payloads: &[Vec<Vec<Vec<u8>>>]) -> Result<Vec<Vec<usize>>> {
    let mut memory = Vec::new();
    for (policy, per_case) in policies.iter().zip(payloads) {
        let mut row = Vec::new();
        for payloads in per_case {
            let mut peak = 0;
            for payload in payloads {
                peak = peak.max(peak_memory(&policy.module, payload)?);
            }
            row.push(peak);
        }
        memory.push(row);
    }
    Ok(memory)
}

fn print_report(options: &Options, policies: &[Policy], cases: &[Case], measured: &Measured) {
    println!("machine: {}", machine());
    println!(
        "os-placement: {} with {}",
        options.wasm.display(),
        options.settings.display()
    );
    println!(
        "{} rounds, interleaved; times in µs per request: median, p99, median / floor's\n",
        options.rounds
    );
    print_timings(policies, cases, &measured.timings);
    print_targets(policies, cases, &measured.timings);
    println!();
    print_sizes(policies, cases, measured);
    print_containers(&measured.containers);
}

/// The timing table: one line per case and mode, one column per policy.
fn print_timings(policies: &[Policy], cases: &[Case], timings: &[Vec<[Stats; 2]>]) {
    let mut header = format!("{:<44} {:<5}", "case", "mode");
    for p in policies {
        header.push_str(&format!(" | {:>21}", p.name));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.chars().count()));
    for (ci, case) in cases.iter().enumerate() {
        for (mi, mode) in [Mode::Warm, Mode::Fresh].iter().enumerate() {
            let floor = timings
                .first()
                .and_then(|p| p.get(ci))
                .and_then(|m| m.get(mi));
            let mut line = format!(
                "{:<44} {:<5}",
                format!("({}) {}", case.id, case.title),
                mode.name()
            );
            for per_case in timings {
                if let (Some(s), Some(f)) = (per_case.get(ci).and_then(|m| m.get(mi)), floor) {
                    line.push_str(&format!(" | {}", cell(*s, *f)));
                }
            }
            println!("{line}");
        }
    }
}

/// Module size, compile time and peak memory per case, each with its ratio to the floor's.
fn print_sizes(policies: &[Policy], cases: &[Case], measured: &Measured) {
    let floor_size = policies.first().map_or(1, |p| p.module.size()) as f64;
    let floor_compile = measured.compile.first().copied().unwrap_or(f64::NAN);
    let mut line = format!("{:<50}", "module size, bytes (x floor)");
    for p in policies {
        let size = p.module.size();
        line.push_str(&format!(
            " | {:>12} {:>6.2}x",
            size,
            size as f64 / floor_size
        ));
    }
    println!("{line}");
    let mut line = format!("{:<50}", "wasmtime compile, ms, median of 3 (x floor)");
    for ms in &measured.compile {
        line.push_str(&format!(" | {:>12.1} {:>6.2}x", ms, ms / floor_compile));
    }
    println!("{line}");
    let floor_instantiate = measured.instantiate.first().copied().unwrap_or(f64::NAN);
    let mut line = format!("{:<50}", "fresh instance ready (no request), µs (x floor)");
    for us in &measured.instantiate {
        line.push_str(&format!(" | {:>12.1} {:>6.2}x", us, us / floor_instantiate));
    }
    println!("{line}");
    for (ci, case) in cases.iter().enumerate() {
        let mut line = format!(
            "{:<50}",
            format!("peak memory, KiB, fresh instance ({})", case.id)
        );
        let memory = &measured.memory;
        let floor = memory.first().and_then(|m| m.get(ci)).copied().unwrap_or(1) as f64;
        for row in memory {
            let bytes = row.get(ci).copied().unwrap_or_default();
            line.push_str(&format!(
                " | {:>12} {:>6.2}x",
                bytes / 1024,
                bytes as f64 / floor
            ));
        }
        println!("{line}");
    }
    for (ci, case) in cases.iter().enumerate() {
        let mut line = format!("{:<50}", format!("host calls per request ({})", case.id));
        for row in &measured.calls {
            let calls = row.get(ci).copied().unwrap_or_default();
            line.push_str(&format!(" | {calls:>20.2}"));
        }
        println!("{line}");
    }
}

/// Warm time per request and per container for each container count.
fn print_containers(containers: &[Vec<f64>]) {
    println!("\ncontainers in a placed Windows Pod, warm: µs per request, µs per container");
    for (ni, n) in CONTAINER_COUNTS.iter().enumerate() {
        let mut line = format!("{:<50}", format!("{n} containers"));
        for per_n in containers {
            let t = per_n.get(ni).copied().unwrap_or(f64::NAN);
            line.push_str(&format!(" | {:>9.1} {:>9.2}", t, t / *n as f64));
        }
        println!("{line}");
    }
    let mut line = format!("{:<50}", "marginal µs/container: 10→100, 100→1000");
    for per_n in containers {
        let (a, b) = marginal(per_n);
        line.push_str(&format!(" | {a:>9.2} {b:>9.2}"));
    }
    println!("{line}");
}

/// Every figure of one run, per policy (in `load_policies` order).
struct Measured {
    /// wasmtime compile time, ms.
    compile: Vec<f64>,
    /// Time to make a fresh instance ready, before any request, µs.
    instantiate: Vec<f64>,
    /// Per case, warm and fresh.
    timings: Vec<Vec<[Stats; 2]>>,
    /// µs per request for each of `CONTAINER_COUNTS`.
    containers: Vec<Vec<f64>>,
    /// Peak linear memory per case, bytes.
    memory: Vec<Vec<usize>>,
    /// Host calls per request of each case.
    calls: Vec<Vec<f64>>,
}

/// Cost of one more container between 10 and 100, and between 100 and 1000.
fn marginal(per_n: &[f64]) -> (f64, f64) {
    let t = |i: usize| per_n.get(i).copied().unwrap_or(f64::NAN);
    ((t(2) - t(1)) / 90.0, (t(3) - t(2)) / 900.0)
}

/// The performance targets: os-placement's ratio to the floor at most 1.3x
/// fresh and 1.5x warm (for (a) and (b)), and below every peer's.
fn print_targets(policies: &[Policy], cases: &[Case], timings: &[Vec<[Stats; 2]>]) {
    const OURS: usize = 1;
    let peers: Vec<usize> = policies
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            !matches!(
                p.name.as_str(),
                "floor" | "os-placement" | "no host call" | "baseline"
            )
        })
        .map(|(i, _)| i)
        .collect();
    println!("\ntargets: ratio to the floor (fresh <= 1.30x; warm (a), (b) <= 1.50x), ahead of every peer");
    for (ci, case) in cases.iter().enumerate() {
        for (mi, mode) in [Mode::Warm, Mode::Fresh].iter().enumerate() {
            let ratio = |p: usize| -> Option<f64> {
                let median = |p: usize| timings.get(p)?.get(ci)?.get(mi).map(|s| s.median);
                Some(median(p)? / median(0)?)
            };
            let Some(ours) = ratio(OURS) else { continue };
            let limit = match (mode, case.id.as_str()) {
                (Mode::Fresh, _) => Some(1.3),
                (Mode::Warm, "a" | "b") => Some(1.5),
                (Mode::Warm, _) => None,
            };
            let mut line = format!("({}) {:<5} {ours:>5.2}x", case.id, mode.name());
            if let Some(limit) = limit {
                let met = if ours <= limit { "met" } else { "NOT met" };
                line.push_str(&format!(" (<= {limit:.2}x: {met})"));
            }
            for &peer in &peers {
                let (Some(theirs), Some(p)) = (ratio(peer), policies.get(peer)) else {
                    continue;
                };
                let ahead = if ours < theirs { "ahead of" } else { "BEHIND" };
                line.push_str(&format!("; {ahead} {} {theirs:.2}x", p.name));
            }
            println!("{line}");
        }
    }
}

fn json_report(
    options: &Options,
    policies: &[Policy],
    cases: &[Case],
    measured: &Measured,
) -> Value {
    let Measured {
        compile,
        instantiate,
        timings,
        containers,
        memory,
        calls,
    } = measured;
    let mut rows = Vec::new();
    for (pi, policy) in policies.iter().enumerate() {
        for (ci, case) in cases.iter().enumerate() {
            for (mi, mode) in [Mode::Warm, Mode::Fresh].iter().enumerate() {
                let get = |p: usize| {
                    timings
                        .get(p)
                        .and_then(|t| t.get(ci))
                        .and_then(|m| m.get(mi))
                };
                if let (Some(s), Some(f)) = (get(pi), get(0)) {
                    rows.push(json!({
                        "policy": policy.name, "case": case.id, "title": case.title,
                        "mode": mode.name(), "requests": case.requests.len(),
                        "median_us": s.median, "p99_us": s.p99,
                        "ratio_to_floor": s.median / f.median,
                    }));
                }
            }
        }
    }
    let modules: Vec<Value> = policies
        .iter()
        .zip(compile)
        .zip(instantiate)
        .zip(memory)
        .zip(containers)
        .zip(calls)
        .map(|(((((p, ms), ready), mem), per_n), calls)| {
            let (m10, m100) = marginal(per_n);
            json!({
                "policy": p.name, "size_bytes": p.module.size(), "compile_ms": ms,
                "instance_ready_us": ready,
                "peak_memory_bytes": cases.iter().zip(mem).map(|(c, b)| (c.id.clone(), json!(b))).collect::<serde_json::Map<_, _>>(),
                "containers_warm_us": CONTAINER_COUNTS.iter().zip(per_n).map(|(n, t)| (n.to_string(), json!(t))).collect::<serde_json::Map<_, _>>(),
                "marginal_us_per_container": {"10-100": m10, "100-1000": m100},
                "host_calls_per_request": cases.iter().zip(calls).map(|(c, n)| (c.id.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    json!({
        "machine": machine(),
        "rounds": options.rounds,
        "settings": options.settings.display().to_string(),
        "modules": modules,
        "timings": rows,
    })
}

fn main() -> ExitCode {
    match parse_args().and_then(|o| run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
