//! Evaluates manifests through the built policy `.wasm`, as policy-server would,
//! and prints the facts: verdict, message, warnings and JSON Patch.
//!
//! ```text
//! os-placement-eval [--wasm PATH] [--root DIR] [--cases FILE]
//! os-placement-eval [--wasm PATH] --review FILE [--settings FILE]
//! os-placement-eval [--wasm PATH] --protocol-version
//! ```
//!
//! `--protocol-version` prints the waPC protocol version the module answers
//! (what `cargo xtask annotate --protocol-version` embeds, as kwctl asks it).
//!
//! `--review` takes an `admission.k8s.io/v1` AdmissionReview (JSON or YAML)
//! and prints the AdmissionReview response policy-server would send, from a
//! fresh instance with settings validated at load. To check your own
//! manifests, use the `os-placement` CLI (`cli/`).
//!
//! Exit code: 0 when every case ran and matched its `expect`, 1 when a case
//! did not match, could not be read, or the policy failed (waPC error / trap),
//! 2 on a usage error.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use os_placement_e2e::{
    load_cases, read_yaml, repo_root, run_case, Case, CaseOutcome, Evaluation, LoadedPolicy,
    PolicyHost, PolicyModule, ValidationResponse, DEFAULT_CASES, DEFAULT_WASM,
};

const USAGE: &str = "\
usage: os-placement-eval [--wasm PATH] [--root DIR] [--cases FILE]
       os-placement-eval [--wasm PATH] --review FILE [--settings FILE]
       os-placement-eval [--wasm PATH] --protocol-version

  --wasm PATH          policy module (default: <root>/target/wasm32-wasip1/release/os_placement_policy.opt.wasm)
  --root DIR           repository root; case paths are relative to it
                       (default: the repository this program was built from)
  --cases FILE         case list (default: <root>/examples/cases.yaml)
  --review FILE        an AdmissionReview (JSON or YAML); prints the AdmissionReview response
  --settings FILE      settings for --review (default: {})
  --protocol-version   print the module's protocol version (asked through waPC)

To check your own manifests: os-placement check FILE|DIR|- (cargo install --path cli)";

#[derive(Debug, Default)]
struct Args {
    wasm: Option<PathBuf>,
    root: Option<PathBuf>,
    cases: Option<PathBuf>,
    settings: Option<PathBuf>,
    review: Option<PathBuf>,
    protocol_version: bool,
}

enum Parsed {
    Run(Box<Args>),
    Help,
}

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Parsed> {
    let mut args = Args::default();
    while let Some(flag) = argv.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(Parsed::Help);
        }
        if flag == "--protocol-version" {
            args.protocol_version = true;
            continue;
        }
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (flag.clone(), None),
        };
        let mut value = || -> Result<String> {
            inline
                .clone()
                .or_else(|| argv.next())
                .ok_or_else(|| anyhow!("{name} needs a value"))
        };
        match name.as_str() {
            "--wasm" => args.wasm = Some(value()?.into()),
            "--root" => args.root = Some(value()?.into()),
            "--cases" => args.cases = Some(value()?.into()),
            "--manifest" => bail!(
                "--manifest is gone: check manifests with `os-placement check FILE` (cargo install --path cli)"
            ),
            "--settings" => args.settings = Some(value()?.into()),
            "--review" => args.review = Some(value()?.into()),
            other => bail!("unknown argument {other:?}"),
        }
    }
    if args.review.is_some() && args.cases.is_some() {
        bail!("--review excludes --cases");
    }
    if args.review.is_none() && args.settings.is_some() {
        bail!("--settings goes with --review");
    }
    Ok(Parsed::Run(Box::new(args)))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Help) => {
            // Nothing useful to do when stdout is gone.
            let _ = writeln!(io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("os-placement-eval: {e:#}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let result = run(&args, &mut out).and_then(|ok| Ok(out.flush().map(|()| ok)?));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        // The reader went away (`| head`): stop quietly.
        Err(e) if is_broken_pipe(&e) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("os-placement-eval: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Runs everything; `Ok(false)` when a case failed or mismatched.
fn run(args: &Args, out: &mut dyn Write) -> Result<bool> {
    // Not the working directory: run from elsewhere, "." would blame a missing build.
    let root = args.root.clone().unwrap_or_else(repo_root);
    let wasm = args.wasm.clone().unwrap_or_else(|| root.join(DEFAULT_WASM));
    if !wasm.is_file() {
        bail!(
            "policy module {} not found: run `make build` first",
            wasm.display()
        );
    }

    if args.protocol_version {
        let version = PolicyModule::compile(&wasm)?
            .instantiate()?
            .protocol_version()?;
        writeln!(out, "{version}")?;
        return Ok(true);
    }
    if let Some(review) = &args.review {
        return review_once(&wasm, review, args.settings.as_deref(), out);
    }

    let cases_path = args
        .cases
        .clone()
        .unwrap_or_else(|| root.join(DEFAULT_CASES));
    let cases = load_cases(&cases_path)?;
    let case_root = root.clone();

    let module = PolicyModule::compile(&wasm)?;
    let started = Instant::now();
    let mut host = module.instantiate()?;
    let instantiate_time = started.elapsed();
    let protocol = host
        .protocol_version()
        .unwrap_or_else(|e| format!("unknown ({e:#})"));
    writeln!(
        out,
        "policy: {} ({} bytes, protocol {protocol}; compiled in {} ms, instantiated in {} ms)",
        wasm.display(),
        module.size(),
        module.compile_time().as_millis(),
        instantiate_time.as_millis(),
    )?;

    let mut totals = Totals::default();
    for case in &cases {
        writeln!(out)?;
        if evaluate_and_print(out, &module, &host, case, &case_root, &mut totals)? {
            // A trapped instance may be left inconsistent: start the next case afresh.
            host = module.instantiate()?;
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", totals.summary())?;
    Ok(totals.errors == 0 && totals.mismatched == 0)
}

/// `--review`: the AdmissionReview response, as policy-server would answer.
fn review_once(
    wasm: &Path,
    review: &Path,
    settings: Option<&Path>,
    out: &mut dyn Write,
) -> Result<bool> {
    let settings = match settings {
        Some(path) => match read_yaml(path)? {
            serde_json::Value::Null => serde_json::json!({}),
            other => other,
        },
        None => serde_json::json!({}),
    };
    let policy = LoadedPolicy::load(PolicyModule::compile(wasm)?, settings)?;
    let response = policy.review(&read_yaml(review)?)?;
    writeln!(out, "{}", serde_json::to_string_pretty(&response)?)?;
    Ok(true)
}

#[derive(Debug, Default)]
struct Totals {
    cases: usize,
    accepted: usize,
    rejected: usize,
    patched: usize,
    errors: usize,
    mismatched: usize,
}

impl Totals {
    fn summary(&self) -> String {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}: {} accepted ({} patched), {} rejected, {}, {}",
            plural(self.cases, "case"),
            self.accepted,
            self.patched,
            self.rejected,
            plural(self.errors, "error"),
            plural(self.mismatched, "mismatch").replace("mismatchs", "mismatches"),
        )
    }
}

/// Prints one case; true when the policy failed (waPC error / trap).
fn evaluate_and_print(
    out: &mut dyn Write,
    module: &PolicyModule,
    host: &PolicyHost,
    case: &Case,
    root: &Path,
    totals: &mut Totals,
) -> io::Result<bool> {
    totals.cases += 1;
    writeln!(out, "== {}", case.name)?;
    let resolved = match case.resolve(root) {
        Ok(resolved) => resolved,
        Err(e) => {
            totals.errors += 1;
            writeln!(out, "   ERROR     {e:#}")?;
            return Ok(false);
        }
    };
    writeln!(
        out,
        "   object    {} ({}{})",
        resolved.object_ref(),
        case.operation,
        case.sub_resource
            .as_deref()
            .map(|s| format!(", subresource {s}"))
            .unwrap_or_default()
    )?;
    writeln!(out, "   manifest  {}", case.manifest.display())?;
    writeln!(
        out,
        "   settings  {}",
        case.settings
            .as_ref()
            .map_or_else(|| "{} (defaults)".to_owned(), |p| p.display().to_string())
    )?;

    // A case with a cluster gets an instance answering from it.
    let with_cluster = match &case.cluster {
        Some(cluster) => {
            writeln!(out, "   cluster   {}", cluster.display())?;
            match resolved.host(module) {
                Ok(host) => Some(host),
                Err(e) => {
                    totals.errors += 1;
                    writeln!(out, "   ERROR     {e:#}")?;
                    return Ok(false);
                }
            }
        }
        None => None,
    };
    let outcome = run_case(with_cluster.as_ref().unwrap_or(host), resolved);
    print_outcome(out, &outcome, totals)?;

    Ok(outcome.evaluation.is_err() && with_cluster.is_none())
}

fn print_outcome(
    out: &mut dyn Write,
    outcome: &CaseOutcome,
    totals: &mut Totals,
) -> io::Result<()> {
    if let Some(message) = &outcome.settings_error {
        writeln!(out, "   SETTINGS REJECTED by validate_settings:")?;
        print_indented(out, message)?;
    }
    match &outcome.evaluation {
        Err(e) => {
            totals.errors += 1;
            writeln!(out, "   verdict   ERROR (waPC error / trap)")?;
            print_indented(out, &format!("{e:#}"))?;
        }
        Ok(evaluation) => {
            count(evaluation, totals);
            print_response(out, &evaluation.response)?;
            print_patch(out, evaluation.patch.as_ref())?;
        }
    }
    print_expectation(out, outcome, totals)
}

fn count(evaluation: &Evaluation, totals: &mut Totals) {
    if evaluation.response.accepted {
        totals.accepted += 1;
    } else {
        totals.rejected += 1;
    }
    if evaluation.patched() {
        totals.patched += 1;
    }
}

/// The verdict, message, warnings and audit annotations.
fn print_response(out: &mut dyn Write, response: &ValidationResponse) -> io::Result<()> {
    let verdict = if response.accepted {
        "ACCEPTED"
    } else {
        "REJECTED"
    };
    let code = response
        .code
        .map(|c| format!(" (code {c})"))
        .unwrap_or_default();
    writeln!(out, "   verdict   {verdict}{code}")?;
    if response.message().is_empty() {
        writeln!(out, "   message   -")?;
    } else {
        writeln!(out, "   message")?;
        print_indented(out, response.message())?;
    }
    if response.warnings().is_empty() {
        writeln!(out, "   warnings  -")?;
    } else {
        writeln!(out, "   warnings")?;
        for warning in response.warnings() {
            writeln!(out, "     - {warning}")?;
        }
    }
    if let Some(annotations) = response
        .audit_annotations
        .as_ref()
        .filter(|a| !a.is_empty())
    {
        writeln!(out, "   audit annotations")?;
        for (key, value) in annotations {
            writeln!(out, "     {key}: {value}")?;
        }
    }
    Ok(())
}

/// The JSON Patch, one operation a line.
fn print_patch(out: &mut dyn Write, patch: Option<&json_patch::Patch>) -> io::Result<()> {
    match patch {
        None => writeln!(out, "   patch     -"),
        Some(patch) if patch.0.is_empty() => writeln!(
            out,
            "   patch     [] (mutated_object equals the request object)"
        ),
        Some(patch) => {
            writeln!(out, "   patch")?;
            writeln!(out, "     [")?;
            let count = patch.0.len();
            for (i, op) in patch.0.iter().enumerate() {
                let line = serde_json::to_string(op)
                    .unwrap_or_else(|e| format!("<unprintable operation: {e}>"));
                writeln!(out, "       {line}{}", if i + 1 < count { "," } else { "" })?;
            }
            writeln!(out, "     ]")
        }
    }
}

fn print_expectation(
    out: &mut dyn Write,
    outcome: &CaseOutcome,
    totals: &mut Totals,
) -> io::Result<()> {
    if outcome.mismatches.is_empty() {
        if outcome.resolved.case.expect.is_some() {
            writeln!(out, "   expect    ok")?;
        }
    } else {
        totals.mismatched += 1;
        writeln!(out, "   expect    MISMATCH")?;
        for mismatch in &outcome.mismatches {
            writeln!(out, "     - {mismatch}")?;
        }
    }
    Ok(())
}

fn print_indented(out: &mut dyn Write, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(out, "     {line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Parsed> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_flags() {
        let Ok(Parsed::Run(args)) = parse(&["--wasm=x.wasm", "--cases", "c.yaml"]) else {
            unreachable!()
        };
        assert_eq!(args.wasm, Some(PathBuf::from("x.wasm")));
        assert_eq!(args.cases, Some(PathBuf::from("c.yaml")));
        let gone = parse(&["--manifest", "m.yaml"])
            .err()
            .map(|e| e.to_string());
        assert!(gone.is_some_and(|e| e.contains("os-placement check")));
        assert!(parse(&["--settings", "s.yaml"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--cases"]).is_err());
        assert!(matches!(parse(&["-h"]), Ok(Parsed::Help)));
        let Ok(Parsed::Run(args)) = parse(&["--review", "r.json", "--settings", "s.yaml"]) else {
            unreachable!()
        };
        assert_eq!(args.review, Some(PathBuf::from("r.json")));
        assert!(parse(&["--review", "r.json", "--manifest", "m.yaml"]).is_err());
        assert!(parse(&["--review", "r.json", "--operation", "UPDATE"]).is_err());
    }
}
