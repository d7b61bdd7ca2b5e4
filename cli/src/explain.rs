//! `explain`: the resolved OS and build signals of each pod spec, for
//! "why did it decide Windows?".

use std::io::{self, Write};

use os_placement_core::SignalReport;
use serde::Serialize;

use crate::args::{ExplainArgs, Format};
use crate::inputs::discover;
use crate::results::{check_inputs, Entry, Status, Summary};
use crate::{settings_or_exit, EXIT_INPUT_ERROR};

pub fn run(args: &ExplainArgs) -> io::Result<u8> {
    if args.output == Format::Junit {
        eprintln!("os-placement: explain writes human or json output, not junit");
        return Ok(EXIT_INPUT_ERROR);
    }
    let (settings, _) = match settings_or_exit(&args.policy) {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    let inputs = discover(&args.paths);
    let entries = check_inputs(&inputs, &settings, args.policy.operation);
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
                if outcome.signals.is_empty() && !outcome.accepted {
                    // Rejected before any signal was read, e.g. a malformed pod spec.
                    for violation in &outcome.violations {
                        writeln!(out, "  not resolved: {violation}")?;
                    }
                } else if outcome.signals.is_empty() {
                    writeln!(
                        out,
                        "  no field restricts the OS or build: defaultOS decides"
                    )?;
                }
                for signal in &outcome.signals {
                    write_signal(out, signal)?;
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
    signals: &'a [SignalReport],
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
