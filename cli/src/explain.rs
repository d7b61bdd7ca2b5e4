//! `explain`: the resolved OS and build signals of each pod spec, for
//! "why did it decide Windows?".

use std::io::{self, Write};

use os_placement_core::SignalReport;
use os_placement_door::Located;
use serde::Serialize;

use crate::args::{ExplainArgs, Format};
use crate::engine::Policy;
use crate::error::CliError;
use crate::inputs::discover;
use crate::results::{check_inputs, Entry, Status, Summary};
use crate::EXIT_INPUT_ERROR;

pub fn run(args: &ExplainArgs) -> Result<u8, CliError> {
    if args.output == Format::Junit {
        return Err(CliError::Usage(
            "explain writes human or json output, not junit",
        ));
    }
    let mut policy = Policy::load(&args.policy)?;
    let inputs = discover(&args.paths);
    policy.look_up(&inputs, &args.policy)?;
    let entries = check_inputs(&inputs, &policy.options());
    let summary = Summary::of(&entries, inputs.len());
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match args.output {
        Format::Json => json(&mut out, &entries)?,
        _ => human(&mut out, &entries)?,
    }
    out.flush()?;
    // Explaining is not judging: only input errors fail.
    Ok(if summary.errors > 0 {
        EXIT_INPUT_ERROR
    } else {
        0
    })
}

/// One line per signal: `path = value -> placement [source, container]`, then the reason.
fn human(out: &mut dyn Write, entries: &[Entry]) -> io::Result<()> {
    for entry in entries {
        match &entry.status {
            Status::Skipped(reason) => {
                writeln!(
                    out,
                    "{}  {}  skipped: {reason}",
                    entry.location(),
                    entry.name()
                )?;
            }
            Status::Error(message) => writeln!(out, "{}: error: {message}", entry.location())?,
            Status::Evaluated(outcome) => {
                writeln!(
                    out,
                    "{}  {}  {}",
                    entry.location(),
                    entry.name(),
                    entry.verdict().as_str()
                )?;
                if outcome.signals.is_empty() && !outcome.accepted() {
                    // Rejected before any signal was read, e.g. a malformed pod spec.
                    for violation in &outcome.violations {
                        writeln!(out, "  not resolved: {}", violation.item)?;
                    }
                } else if outcome.signals.is_empty() {
                    writeln!(
                        out,
                        "  no field restricts the OS or build: defaultOS decides"
                    )?;
                }
                for signal in &outcome.signals {
                    write_signal(out, &signal.item)?;
                }
            }
        }
    }
    Ok(())
}

fn write_signal(out: &mut dyn Write, signal: &SignalReport) -> io::Result<()> {
    let container = signal
        .container
        .as_deref()
        .map(|c| format!(", container {c}"))
        .unwrap_or_default();
    writeln!(
        out,
        "  {} = {}  ->  {}  [{}{container}]",
        signal.path, signal.value, signal.placement, signal.source
    )?;
    if let Some(reason) = &signal.reason {
        writeln!(out, "      because {reason}")?;
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Explained<'a> {
    file: &'a str,
    line: Option<usize>,
    item: Option<usize>,
    kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    verdict: &'static str,
    /// Each with `line` and `column` of its field in the input.
    signals: &'a [Located<SignalReport>],
}

fn json(out: &mut dyn Write, entries: &[Entry]) -> io::Result<()> {
    let results: Vec<Explained<'_>> = entries
        .iter()
        .map(|entry| {
            let object = entry.object.as_ref();
            Explained {
                file: &entry.file,
                line: entry.line,
                item: entry.item,
                kind: object.map(|o| o.kind.as_str()),
                namespace: object.and_then(|o| o.namespace.as_deref()),
                name: object.and_then(|o| o.name.as_deref()),
                verdict: entry.verdict().as_str(),
                signals: match &entry.status {
                    Status::Evaluated(outcome) => &outcome.signals,
                    _ => &[],
                },
            }
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &results)?;
    writeln!(out)
}
