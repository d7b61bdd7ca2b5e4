//! Fault injection through the real policy-server (`$KUBEWARDEN_BIN`, else
//! `../shared/kubewarden`, two workers): registries on 127.0.0.1 that hang,
//! answer after 15 s, reset connections, answer 500, serve a malformed or a
//! huge index, and a Kubernetes API that is unreachable, under concurrent
//! load mixing requests that need an image lookup with requests that need
//! none. No real API server runs here: policy-server's kube client and
//! `os-placement facts sync` talk to a small fake one
//! (`os_placement_e2e::faults::api`) through a kubeconfig.
//!
//! Each class runs with the settings of `deploy/eks.yaml` under
//! `imageFacts: registry` (admission-time lookups, the old default) and
//! `imageFacts: cluster` (facts published by the syncer, the new default).
//! The table is printed and written to `target/faults/report.md`. The suite
//! asserts the promise of `cluster`: every request gets its verdict within
//! 2 s whatever the registry does, requests needing no lookup keep their
//! latency, and where facts are missing a warning names the image. It also
//! asserts that `registry` stalls on a hanging registry, so the fault is real.

mod api_faults;
mod cloud_identity;
mod first_pods;
mod pull_secrets;
mod setup;
mod syncer;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use os_placement_e2e::faults::api::{FakeApi, Seen};
use os_placement_e2e::faults::load::{load, send, Need, Outcome, Times};
use os_placement_e2e::faults::registry::{Fault, FaultRegistry};
use os_placement_e2e::faults::{table, Row};
use serde_json::Value;

use setup::{Suite, PLAIN_IMAGE};

/// How long a request may go unanswered before it counts as lost (the API
/// server's default webhook timeout is 10 s).
const DEADLINE: Duration = Duration::from_secs(12);

/// The promise of `imageFacts: cluster`.
const PROMISE: Duration = Duration::from_secs(2);

/// Rounds of concurrent requests per class (fewer when the server stalls).
const ROUNDS: usize = 3;

/// Requests of each kind per round: with two workers, four lookups are
/// enough to occupy both and queue the rest.
const PER_ROUND: usize = 4;

fn faults() -> Vec<Fault> {
    vec![
        Fault::Healthy,
        Fault::Hang,
        Fault::Slow(Duration::from_secs(15)),
        Fault::Reset,
        Fault::ServerError,
        Fault::Malformed,
        Fault::Huge(60_000),
    ]
}

#[test]
fn a_registry_that_misbehaves_never_stalls_admission_with_published_facts() {
    let Some(suite) = Suite::prepare() else {
        return;
    };
    let registries: Vec<FaultRegistry> = faults()
        .into_iter()
        .map(|f| FaultRegistry::start(f).unwrap())
        .collect();
    let faults = faults();
    let api = FakeApi::start(suite.cluster_objects(&registries)).unwrap();
    let kubeconfig = suite.dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();

    // The syncer, once, against every registry.
    let synced = suite.sync(&kubeconfig, &registries);
    eprintln!("facts sync --once: {synced:.1?}");
    let mut rows = cluster_rows(&suite, &api, &kubeconfig, &registries, &faults);
    rows.extend(registry_rows(&suite, &kubeconfig, &registries, &faults));
    rows.extend(unreachable_api_rows(&suite, &registries));
    rows.extend(api_hangs_when_warm_rows(
        &suite,
        &api,
        &kubeconfig,
        &registries,
    ));

    let report = table(&rows, DEADLINE);
    eprintln!("\n{report}");
    suite.save_report(&report, synced);
    check_promise(&rows, &registries, &faults);
}

/// `imageFacts: cluster`: one policy-server for every class, since nothing
/// it does waits on a registry.
fn cluster_rows(
    suite: &Suite,
    api: &FakeApi,
    kubeconfig: &std::path::Path,
    registries: &[FaultRegistry],
    faults: &[Fault],
) -> Vec<Row> {
    let server = suite.policy_server("cluster", kubeconfig, registries);
    let before = api.seen().len();
    let mut rows = measure_each(suite, &server, "cluster", registries, faults);
    // Served from policy-server's informer cache: a LIST (and WATCH) of the
    // ConfigMaps per label selector (the cluster's, and one per shard the
    // requests need, at most 129), not one call per request. Two requests
    // that find no reflector yet may each start one (policy-evaluator
    // `Client::get_reflector_reader` checks and inserts under two locks).
    let seen = api.seen();
    let lists: Vec<&Seen> = seen[before..]
        .iter()
        .filter(|s| s.method == "GET" && s.path.ends_with("/configmaps") && !s.watch)
        .collect();
    let selectors: BTreeSet<&Option<String>> = lists.iter().map(|s| &s.label_selector).collect();
    let requests: usize = rows.iter().map(|r| r.probes.len()).sum();
    eprintln!(
        "policy-server listed the ConfigMaps {} times, {} selectors, for {requests} requests",
        lists.len(),
        selectors.len()
    );
    assert!(
        lists.len() <= 2 * selectors.len() && selectors.len() <= 129,
        "{} LISTs of ConfigMaps, {} selectors, for {requests} requests",
        lists.len(),
        selectors.len()
    );
    rows.push(unpublished_row(suite, api, &server, kubeconfig, registries));
    rows
}

/// `imageFacts: registry`: a fresh policy-server per class, since a hung
/// lookup never ends and would stall the next class.
fn registry_rows(
    suite: &Suite,
    kubeconfig: &std::path::Path,
    registries: &[FaultRegistry],
    faults: &[Fault],
) -> Vec<Row> {
    // A fresh server per fault: a hung lookup holds policy-server's OCI cache lock.
    with_baseline(registries, faults, |registry, fault| {
        let server = suite.policy_server("registry", kubeconfig, registries);
        measure(suite, &server, "registry", registry, fault)
    })
}

fn measure_each(
    suite: &Suite,
    server: &setup::Server,
    mode: &'static str,
    registries: &[FaultRegistry],
    faults: &[Fault],
) -> Vec<Row> {
    with_baseline(registries, faults, |registry, fault| {
        measure(suite, server, mode, registry, fault)
    })
}

/// One row per fault, each compared with the healthy registry's times.
fn with_baseline(
    registries: &[FaultRegistry],
    faults: &[Fault],
    mut row_for: impl FnMut(&FaultRegistry, &Fault) -> Row,
) -> Vec<Row> {
    let mut baseline = None;
    registries
        .iter()
        .zip(faults)
        .map(|(registry, fault)| {
            let mut row = row_for(registry, fault);
            if *fault == Fault::Healthy {
                baseline = Some(row.times(Need::Plain));
            }
            row.baseline = baseline;
            row
        })
        .collect()
}

fn measure(
    suite: &Suite,
    server: &setup::Server,
    mode: &'static str,
    registry: &FaultRegistry,
    fault: &Fault,
) -> Row {
    let lookups = vec![suite.review("lookup", &registry.image()); PER_ROUND];
    let plains = vec![suite.review("plain", PLAIN_IMAGE); PER_ROUND];
    let started = Instant::now();
    let probes = load(
        server.port(),
        "os-placement",
        &lookups,
        &plains,
        ROUNDS,
        DEADLINE,
    );
    eprintln!(
        "{mode} / registry {}: {:.1?}",
        fault.name(),
        started.elapsed()
    );
    Row {
        class: format!("registry {}", fault.name()),
        mode,
        probes,
        baseline: None,
    }
}

/// An image no workload uses yet: the reference rules and a warning naming
/// it; after the syncer has seen a workload with it, its platforms.
fn unpublished_row(
    suite: &Suite,
    api: &FakeApi,
    server: &setup::Server,
    kubeconfig: &std::path::Path,
    registries: &[FaultRegistry],
) -> Row {
    let healthy = &registries[0];
    let image = format!("{}/corp/new:1", healthy.host());
    let review = suite.review("new", &image);
    let probes = load(
        server.port(),
        "os-placement",
        &vec![review.clone(); PER_ROUND],
        &vec![suite.review("plain", PLAIN_IMAGE); PER_ROUND],
        1,
        DEADLINE,
    );
    // The syncer sees a workload with it; the informer follows the WATCH.
    api.put(setup::deployment("new", &image));
    suite.sync(kubeconfig, registries);
    let resolved = wait_for_facts(server.port(), &review);
    let Outcome::Answered {
        allowed, warnings, ..
    } = &resolved
    else {
        panic!("{resolved:?}")
    };
    assert!(*allowed, "{resolved:?}");
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("read from the reference")),
        "published now: {warnings:?}"
    );
    Row {
        class: "image not yet published".into(),
        mode: "cluster",
        probes,
        baseline: None,
    }
}

/// Asks until the answer no longer says the image is unpublished (the
/// WATCH event reaches policy-server's informer), at most 10 s.
fn wait_for_facts(port: u16, review: &Value) -> Outcome {
    let started = Instant::now();
    loop {
        let (_, outcome) = send(port, "os-placement", review, DEADLINE);
        let pending = matches!(&outcome, Outcome::Answered { warnings, .. }
            if warnings.iter().any(|w| w.contains("read from the reference")));
        if !pending || started.elapsed() > Duration::from_secs(10) {
            return outcome;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A Kubernetes API that refuses connections (the kubeconfig names a port
/// nothing listens on), and one that accepts and never answers, for both
/// settings. The hanging API is measured, not promised: policy-server's
/// kube client waits on it (see docs/registry-faults.md).
fn unreachable_api_rows(suite: &Suite, registries: &[FaultRegistry]) -> Vec<Row> {
    let refused = format!(
        "http://127.0.0.1:{}",
        os_placement_e2e::registry::free_port().unwrap()
    );
    let hanging = FaultRegistry::start(Fault::Hang).unwrap();
    let apis = [
        ("Kubernetes API unreachable", refused),
        (HANGING_API, format!("http://{}", hanging.host())),
    ];
    let mut rows = Vec::new();
    for (i, (class, url)) in apis.iter().enumerate() {
        let kubeconfig = suite.dir.path().join(format!("kubeconfig-api-{i}"));
        os_placement_e2e::faults::api::write_kubeconfig(&kubeconfig, url).unwrap();
        for mode in ["cluster", "registry"] {
            let server = suite.policy_server(mode, &kubeconfig, registries);
            let mut row = measure(suite, &server, mode, &registries[0], &Fault::Healthy);
            row.class = (*class).to_string();
            rows.push(row);
        }
    }
    rows
}

/// The API server hangs after the policy servers have read it once: their
/// informer caches keep answering.
fn api_hangs_when_warm_rows(
    suite: &Suite,
    api: &FakeApi,
    kubeconfig: &std::path::Path,
    registries: &[FaultRegistry],
) -> Vec<Row> {
    let servers: Vec<_> = ["cluster", "registry"]
        .into_iter()
        .map(|mode| (mode, suite.policy_server(mode, kubeconfig, registries)))
        .collect();
    for (mode, server) in &servers {
        let warm = measure(suite, server, mode, &registries[0], &Fault::Healthy);
        assert!(
            !warm.others_delayed(),
            "{mode}: not warm: {:?}",
            warm.probes
        );
    }
    api.stall();
    servers
        .iter()
        .map(|(mode, server)| {
            let mut row = measure(suite, server, mode, &registries[0], &Fault::Healthy);
            row.class = "Kubernetes API hangs after start".into();
            row
        })
        .collect()
}

/// The class the promise does not cover.
const HANGING_API: &str = "Kubernetes API hangs from the start";

/// What `imageFacts: cluster` promises, and that the faults are real.
fn check_promise(rows: &[Row], registries: &[FaultRegistry], faults: &[Fault]) {
    for row in rows
        .iter()
        .filter(|r| r.mode == "cluster" && r.class != HANGING_API)
    {
        for probe in &row.probes {
            assert!(
                matches!(probe.outcome, Outcome::Answered { .. }),
                "{} ({}): {:?}",
                row.class,
                row.mode,
                probe.outcome
            );
            assert!(
                probe.elapsed <= PROMISE,
                "{}: an answer took {:?}",
                row.class,
                probe.elapsed
            );
        }
        assert!(
            !row.others_delayed(),
            "{}: requests needing no lookup were delayed",
            row.class
        );
    }
    // Where facts are missing, a warning names the image. A huge index
    // (over 4 MiB, more than a distribution registry accepts on push) is
    // not read by the syncer: a failed lookup naming the image.
    let failing = |fault: &&Fault| !matches!(fault, Fault::Healthy);
    for (registry, fault) in registries.iter().zip(faults).filter(|(_, f)| failing(f)) {
        let row = rows
            .iter()
            .find(|r| r.mode == "cluster" && r.class == format!("registry {}", fault.name()))
            .unwrap();
        let image = registry.image();
        for probe in row.probes.iter().filter(|p| p.need == Need::Lookup) {
            let Outcome::Answered { warnings, .. } = &probe.outcome else {
                unreachable!()
            };
            assert!(
                warnings.iter().any(|w| w.contains(&image)),
                "{}: no warning names {image}: {warnings:?}",
                row.class
            );
        }
    }
    for fault in faults.iter().filter(|f| !failing(f)) {
        let class = format!("registry {}", fault.name());
        let row = rows
            .iter()
            .find(|r| r.mode == "cluster" && r.class == class)
            .unwrap();
        assert!(
            row.probes.iter().all(|p| matches!(&p.outcome,
                Outcome::Answered { allowed: true, warnings, .. } if warnings.is_empty())),
            "{class}: the published platforms give a clean answer: {:?}",
            row.probes
        );
    }
    // The old default stalls on a registry that hangs.
    let hang = rows
        .iter()
        .find(|r| r.mode == "registry" && r.class == "registry hangs")
        .unwrap();
    let lookups: Times = hang.times(Need::Lookup);
    assert!(
        lookups.unanswered > 0,
        "imageFacts: registry did not stall: {lookups:?}"
    );
}
