//! `make bench`: size of the policy module and the time to evaluate the
//! real-manifest corpus, the same payload bytes in and response bytes out,
//! through the .wasm in wasmtime (as policy-server runs it) and natively,
//! in one run so the ratio holds on a noisy machine.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use os_placement_e2e::{admission_request, corpus_dir, read_yaml, wasm_path, PolicyModule};
use serde_json::{json, Value};

struct Options {
    wasm: PathBuf,
    corpus: PathBuf,
    rounds: u32,
}

fn parse_args() -> Result<Options> {
    let mut options = Options {
        wasm: wasm_path(),
        corpus: corpus_dir(),
        rounds: 30,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--wasm" => options.wasm = value.into(),
            "--corpus" => options.corpus = value.into(),
            "--rounds" => options.rounds = value.parse().context("--rounds takes a number")?,
            other => bail!("unknown flag {other}: use --wasm PATH, --corpus DIR, --rounds N"),
        }
    }
    Ok(options)
}

fn corpus_requests(dir: &PathBuf) -> Result<Vec<Value>> {
    // Sorted so every run evaluates the same sequence.
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| {
            format!(
                "cannot read the corpus {}: set OS_PLACEMENT_CORPUS (or --corpus) to the directory of the corpus manifests",
                dir.display()
            )
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| Ok(admission_request(&read_yaml(f)?, "CREATE", None, None)))
        .collect()
}

/// The fastest of `rounds` passes over all requests, per request.
fn fastest_round(
    rounds: u32,
    requests: usize,
    mut pass: impl FnMut() -> Result<()>,
) -> Result<Duration> {
    pass()?; // warm-up
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        pass()?;
        best = best.min(start.elapsed());
    }
    Ok(best / u32::try_from(requests.max(1)).unwrap_or(u32::MAX))
}

fn run(options: &Options) -> Result<()> {
    let settings =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let requests = corpus_requests(&options.corpus)?;
    let module = PolicyModule::compile(&options.wasm)?;
    let host = module.instantiate()?;

    let payloads: Vec<Vec<u8>> = requests
        .iter()
        .map(|request| serde_json::to_vec(&json!({"request": request, "settings": settings})))
        .collect::<Result<_, _>>()?;
    let wasm = fastest_round(options.rounds, payloads.len(), || {
        for payload in &payloads {
            std::hint::black_box(host.call("validate", payload)?);
        }
        Ok(())
    })?;
    // As policy-server runs it: a fresh instance (rehydrated InstancePre) per request.
    let fresh = fastest_round(options.rounds, payloads.len(), || {
        for payload in &payloads {
            std::hint::black_box(module.instantiate()?.call("validate", payload)?);
        }
        Ok(())
    })?;
    let native = fastest_round(options.rounds, payloads.len(), || {
        for payload in &payloads {
            std::hint::black_box(
                os_placement_policy::validate(payload).map_err(|e| anyhow::anyhow!("{e}"))?,
            );
        }
        Ok(())
    })?;

    println!("module            {}", options.wasm.display());
    println!("module size       {} bytes", module.size());
    println!(
        "module compile    {:.1} ms (wasmtime, this host's build profile)",
        module.compile_time().as_secs_f64() * 1e3
    );
    println!(
        "corpus            {} requests (CREATE, EKS settings), fastest of {} rounds",
        requests.len(),
        options.rounds
    );
    println!(
        "wasm, warm        {:.1} µs/request: one instance, payload bytes in, response bytes out",
        wasm.as_secs_f64() * 1e6
    );
    println!(
        "wasm, fresh       {:.1} µs/request: a new instance per request, as policy-server",
        fresh.as_secs_f64() * 1e6
    );
    println!(
        "native            {:.1} µs/request: the same validate() built for this host",
        native.as_secs_f64() * 1e6
    );
    println!(
        "wasm / native     {:.1}x",
        wasm.as_secs_f64() / native.as_secs_f64().max(f64::MIN_POSITIVE)
    );
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(|o| run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
