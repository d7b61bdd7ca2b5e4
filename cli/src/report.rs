//! The three output formats of `check`: human, json, junit.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use os_placement_door::{Answer, Finding};

use crate::results::{Entry, Status, Summary, Verdict};

/// What every format needs besides the entries.
pub struct Context<'a> {
    pub settings: &'a str,
    pub operation: &'a str,
}

/// ANSI styles, or nothing when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn verdict(self, verdict: Verdict) -> String {
        let code = match verdict {
            Verdict::Accepted => "32",
            Verdict::Patched => "33",
            Verdict::Rejected | Verdict::Error => "1;31",
            Verdict::Skipped => "2",
        };
        self.paint(code, verdict.as_str())
    }
}

/// Per object: `file:line  Kind/namespace/name  verdict`, then one line per
/// violation, warning and patch operation. Skipped objects only count in the summary.
pub fn human(
    out: &mut dyn Write,
    entries: &[Entry],
    summary: &Summary,
    style: Style,
) -> io::Result<()> {
    for entry in entries {
        let verdict = entry.verdict();
        match &entry.status {
            Status::Skipped(_) => continue,
            Status::Error(message) => {
                writeln!(
                    out,
                    "{}: {}: {message}",
                    entry.location(),
                    style.verdict(verdict)
                )?;
            }
            Status::Evaluated(outcome) => {
                writeln!(
                    out,
                    "{}  {}  {}",
                    entry.location(),
                    entry.name(),
                    style.verdict(verdict)
                )?;
                human_outcome(out, outcome, style)?;
            }
        }
    }
    writeln!(out, "{}", summary.line())
}

fn human_outcome(out: &mut dyn Write, outcome: &Answer, style: Style) -> io::Result<()> {
    let findings = [
        ("31", "violation", &outcome.violations),
        ("33", "warning  ", &outcome.warnings),
    ];
    for (colour, label, list) in findings {
        for finding in list {
            let code = style.paint("2", &format!("[{}]", finding.item.code));
            let text = &finding.item;
            writeln!(out, "  {}  {text}  {code}", style.paint(colour, label))?;
        }
    }
    for op in &outcome.patch {
        writeln!(out, "  {}      {}", style.paint("36", "patch"), compact(op))?;
    }
    Ok(())
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The `--output json` document; the schema is documented in the README.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    schema_version: u32,
    settings: &'a str,
    operation: &'a str,
    results: Vec<JsonResult<'a>>,
    summary: JsonSummary,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonResult<'a> {
    file: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    document: Option<usize>,
    item: Option<usize>,
    api_version: Option<&'a str>,
    kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    verdict: &'static str,
    /// Each with `line` and `column` of its field in the input.
    violations: &'a [Finding],
    warnings: &'a [Finding],
    patch: &'a [Value],
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonSummary {
    files: usize,
    objects: usize,
    accepted: usize,
    patched: usize,
    rejected: usize,
    skipped: usize,
    errors: usize,
}

pub fn json(
    out: &mut dyn Write,
    entries: &[Entry],
    summary: &Summary,
    context: &Context<'_>,
) -> io::Result<()> {
    let results = entries.iter().map(json_result).collect();
    let report = JsonReport {
        schema_version: 1,
        settings: context.settings,
        operation: context.operation,
        results,
        summary: JsonSummary {
            files: summary.files,
            objects: summary.objects,
            accepted: summary.accepted,
            patched: summary.patched,
            rejected: summary.rejected,
            skipped: summary.skipped,
            errors: summary.errors,
        },
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}

fn json_result(entry: &Entry) -> JsonResult<'_> {
    let object = entry.object.as_ref();
    let (violations, warnings, patch, reason): (&[Finding], &[Finding], &[Value], Option<&str>) =
        match &entry.status {
            Status::Evaluated(o) => (&o.violations, &o.warnings, &o.patch, None),
            Status::Skipped(reason) | Status::Error(reason) => (&[], &[], &[], Some(reason)),
        };
    JsonResult {
        file: &entry.file,
        line: entry.line,
        column: entry.column,
        document: entry.document,
        item: entry.item,
        api_version: object.map(|o| o.api_version.as_str()),
        kind: object.map(|o| o.kind.as_str()),
        namespace: object.and_then(|o| o.namespace.as_deref()),
        name: object.and_then(|o| o.name.as_deref()),
        verdict: entry.verdict().as_str(),
        violations,
        warnings,
        patch,
        reason,
    }
}

/// JUnit XML: a test suite per file, a test case per object; a rejection
/// is a failure, an input error an error, an unsupported kind a skip.
pub fn junit(out: &mut dyn Write, entries: &[Entry], summary: &Summary) -> io::Result<()> {
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="os-placement" tests="{}" failures="{}" errors="{}" skipped="{}">"#,
        entries.len(),
        summary.rejected,
        summary.errors,
        summary.skipped
    )?;
    let mut start = 0;
    while let Some(first) = entries.get(start) {
        let end = entries
            .iter()
            .skip(start)
            .position(|e| e.file != first.file)
            .map_or(entries.len(), |n| start + n);
        junit_suite(out, entries.get(start..end).unwrap_or(&[]))?;
        start = end;
    }
    writeln!(out, "</testsuites>")
}

fn junit_suite(out: &mut dyn Write, entries: &[Entry]) -> io::Result<()> {
    let Some(first) = entries.first() else {
        return Ok(());
    };
    let count = |v: Verdict| entries.iter().filter(|e| e.verdict() == v).count();
    writeln!(
        out,
        r#"  <testsuite name="{}" tests="{}" failures="{}" errors="{}" skipped="{}">"#,
        xml(&first.file),
        entries.len(),
        count(Verdict::Rejected),
        count(Verdict::Error),
        count(Verdict::Skipped)
    )?;
    for entry in entries {
        junit_case(out, entry)?;
    }
    writeln!(out, "  </testsuite>")
}

/// One test case: a rejection is a failure, an input error an error, a
/// skipped object skipped; warnings and the patch go to its output.
fn junit_case(out: &mut dyn Write, entry: &Entry) -> io::Result<()> {
    let name = format!("{} {}", entry.name(), entry.location());
    write!(
        out,
        r#"    <testcase classname="{}" name="{}""#,
        xml(&entry.file),
        xml(&name)
    )?;
    match &entry.status {
        Status::Skipped(reason) => writeln!(
            out,
            ">\n      <skipped message=\"{}\"/>\n    </testcase>",
            xml(reason)
        ),
        Status::Error(message) => writeln!(
            out,
            ">\n      <error message=\"{}\" type=\"input\"/>\n    </testcase>",
            xml(message)
        ),
        Status::Evaluated(outcome) if !outcome.accepted() => {
            let lines: Vec<String> = outcome
                .violations
                .iter()
                .map(|f| f.item.to_string())
                .collect();
            let first_line = lines.first().map_or("rejected", String::as_str);
            writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"rejected\">{}</failure>",
                xml(first_line),
                xml(&lines.join("\n"))
            )?;
            junit_system_out(out, outcome)?;
            writeln!(out, "    </testcase>")
        }
        Status::Evaluated(outcome) if outcome.warnings.is_empty() && outcome.patch.is_empty() => {
            writeln!(out, "/>")
        }
        Status::Evaluated(outcome) => {
            writeln!(out, ">")?;
            junit_system_out(out, outcome)?;
            writeln!(out, "    </testcase>")
        }
    }
}

/// Warnings and the patch of an object, as the test case's output.
fn junit_system_out(out: &mut dyn Write, outcome: &Answer) -> io::Result<()> {
    let mut lines: Vec<String> = outcome
        .warnings
        .iter()
        .map(|f| format!("warning: {}", f.item))
        .collect();
    lines.extend(
        outcome
            .patch
            .iter()
            .map(|op| format!("patch: {}", compact(op))),
    );
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "      <system-out>{}</system-out>",
        xml(&lines.join("\n"))
    )
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 forbids.
fn xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\n' => escaped.push_str("&#10;"),
            c if c < ' ' && c != '\t' && c != '\r' => {}
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_control_characters() {
        assert_eq!(xml("a<b & \"c\"\u{1}\n"), "a&lt;b &amp; &quot;c&quot;&#10;");
    }
}
