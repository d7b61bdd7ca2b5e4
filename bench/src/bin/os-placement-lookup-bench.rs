//! Per-request time of context-aware evaluation through the `.wasm`, on a
//! fresh instance per request as policy-server runs it: a pod whose images
//! need no lookup (with no host capabilities, and with the registry and a
//! cluster behind the host calls), and a pod with one private image looked
//! up in a real registry on 127.0.0.1. `--baseline` times an earlier module
//! on the no-lookup pod for comparison.
//!
//! ```console
//! cargo run --release -p os-placement-bench --bin os-placement-lookup-bench -- \
//!   --wasm target/wasm32-wasip1/release/os_placement_policy.opt.wasm [--baseline OLD.wasm] [--requests 300]
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use os_placement_bench::stats::median_and_mean;
use os_placement_bench::{Error, Result};
use os_placement_e2e::capabilities::{Cluster, ContextHost, Registries};
use os_placement_e2e::host::{HostCalls, NoCapabilities};
use os_placement_e2e::images::push_standard_images;
use os_placement_e2e::{admission_request, repo_root, PolicyModule};
use serde_json::{json, Value};
use xtask::local::registry::LocalRegistry;

const USAGE: &str =
    "usage: os-placement-lookup-bench [--wasm PATH] [--baseline PATH] [--requests N]";

struct Options {
    wasm: PathBuf,
    baseline: Option<PathBuf>,
    requests: usize,
}

fn options() -> Result<Options> {
    let mut options = Options {
        wasm: repo_root().join(os_placement_e2e::DEFAULT_WASM),
        baseline: None,
        requests: 300,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| Error::Usage(format!("{arg} needs a value\n{USAGE}")))
        };
        match arg.as_str() {
            "--wasm" => options.wasm = PathBuf::from(value()?),
            "--baseline" => options.baseline = Some(PathBuf::from(value()?)),
            "--requests" => {
                options.requests = value()?
                    .parse()
                    .map_err(|e| Error::Usage(format!("--requests: {e}")))?
            }
            _ => return Err(Error::Usage(USAGE.to_owned())),
        }
    }
    Ok(options)
}

fn pod(image: &str) -> Value {
    admission_request(
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": image}]}}),
        "CREATE",
        None,
        None,
    )
}

/// Median and mean time of `requests` evaluations, each on a fresh instance.
fn time(
    module: &PolicyModule,
    calls: &Arc<dyn HostCalls>,
    request: &Value,
    settings: &Value,
    requests: usize,
) -> Result<(Duration, Duration)> {
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests.max(1) {
        let started = Instant::now();
        let evaluation = module
            .instantiate_with(Arc::clone(calls))?
            .validate(request, settings)?;
        times.push(started.elapsed());
        if !evaluation.response.accepted {
            return Err(Error::Unexpected(format!(
                "rejected: {}",
                evaluation.response.message()
            )));
        }
    }
    Ok(median_and_mean(&mut times))
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-lookup-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let options = options()?;
    let registry = LocalRegistry::start()?
        .ok_or_else(|| Error::Usage("docker-registry is needed for the lookup case".to_owned()))?;
    let images = push_standard_images(&registry.host())?;
    let context: Arc<dyn HostCalls> = Arc::new(
        ContextHost::new()
            .with_registries(Registries::new(&[registry.host()])?)
            .with_cluster(Cluster::load(&repo_root().join("e2e/clusters/eks-mixed"))?),
    );
    let none: Arc<dyn HostCalls> = Arc::new(NoCapabilities);
    let settings =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let known = pod("mcr.microsoft.com/windows/nanoserver:ltsc2022");
    let private = pod(&images.windows_single.reference);
    let module = PolicyModule::compile(&options.wasm)?;
    println!(
        "{} requests per case, fresh instance each, median / mean:",
        options.requests
    );
    let mut cases = vec![
        ("no lookup, no host capabilities", &none, &known),
        ("no lookup, registry + cluster host", &context, &known),
        (
            "one lookup (private image, 2 OCI calls)",
            &context,
            &private,
        ),
    ];
    if let Some(baseline) = &options.baseline {
        let old = PolicyModule::compile(baseline)?;
        let (median, mean) = time(&old, &none, &known, &settings, options.requests)?;
        println!(
            "  {:<44} {median:>10.1?} {mean:>10.1?}",
            "baseline module, no lookup"
        );
    }
    for (name, calls, request) in cases.drain(..) {
        let (median, mean) = time(&module, calls, request, &settings, options.requests)?;
        println!("  {name:<44} {median:>10.1?} {mean:>10.1?}");
    }
    Ok(())
}
