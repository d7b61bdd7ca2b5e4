//! `fix`: the manifests with what the policy would add. Documents that need
//! nothing are copied byte for byte; a changed document gets the added
//! entries inserted into its text, and is re-serialised (comments lost)
//! only when that is not possible, e.g. for flow-style or JSON documents.

use std::io::{self, Write};
use std::path::Path;

use os_placement_core::Settings;
use serde_json::Value;

use crate::args::{FixArgs, OperationArg};
use crate::documents::{chunk_text, content_start, parse_document, parse_stream, Document, Parsed};
use crate::inputs::{discover, Source};
use crate::results::{check_document, Entry, Status, Summary};
use crate::{settings_or_exit, yaml_edit, EXIT_INPUT_ERROR};

/// Counts for the closing line and the exit code.
#[derive(Debug, Default)]
struct Tally {
    entries: Vec<Entry>,
    /// Documents that had to be re-serialised.
    reserialised: usize,
}

pub fn run(args: &FixArgs) -> io::Result<u8> {
    let (mut settings, _) = match settings_or_exit(&args.policy) {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    // Fix exists to add what is missing, whatever the cluster's mode.
    settings.mutate = true;
    if args.in_place && args.paths.iter().any(|p| p == "-") {
        eprintln!("os-placement: --in-place cannot rewrite stdin");
        return Ok(EXIT_INPUT_ERROR);
    }
    let inputs = discover(&args.paths);
    let mut tally = Tally::default();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut written_any = false;
    for input in &inputs {
        let name = input.source.name();
        let text = match &input.text {
            Ok(text) => text,
            Err(e) => {
                tally.entries.push(error_entry(&name, e));
                continue;
            }
        };
        let fixed = fix_text(text, &name, &settings, args.policy.operation, &mut tally);
        match (&input.source, args.in_place) {
            (Source::File(path), true) => {
                if fixed != *text {
                    write_file(path, &fixed)?;
                    eprintln!("fixed {}", path.display());
                }
            }
            _ => {
                if written_any && !starts_with_marker(&fixed) {
                    out.write_all(b"---\n")?;
                }
                out.write_all(fixed.as_bytes())?;
                if !fixed.is_empty() && !fixed.ends_with('\n') {
                    out.write_all(b"\n")?;
                }
                written_any = true;
            }
        }
    }
    out.flush()?;
    report(&tally, inputs.len());
    Ok(Summary::of(&tally.entries, inputs.len()).exit_code())
}

fn write_file(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

fn starts_with_marker(text: &str) -> bool {
    text.starts_with("---")
}

fn error_entry(file: &str, message: &str) -> Entry {
    Entry {
        file: file.to_owned(),
        line: None,
        column: None,
        document: None,
        item: None,
        object: None,
        status: Status::Error(message.to_owned()),
    }
}

/// Rejections, errors and the totals go to stderr: stdout is the manifests.
fn report(tally: &Tally, files: usize) {
    for entry in &tally.entries {
        match &entry.status {
            Status::Error(message) => eprintln!("{}: error: {message}", entry.location()),
            Status::Evaluated(outcome) if !outcome.accepted => {
                eprintln!(
                    "{}  {}  rejected, left unchanged",
                    entry.location(),
                    entry.name()
                );
                for finding in &outcome.violations {
                    eprintln!("  violation  {}", finding);
                }
            }
            _ => {}
        }
    }
    if tally.reserialised > 0 {
        eprintln!(
            "{} document(s) re-serialised (flow style or JSON): their comments are not kept",
            tally.reserialised
        );
    }
    eprintln!("{}", Summary::of(&tally.entries, files).line());
}

/// The input with every patch applied; unchanged documents byte for byte.
fn fix_text(
    text: &str,
    file: &str,
    settings: &Settings,
    operation: OperationArg,
    tally: &mut Tally,
) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut cursor = 0;
    for parsed in parse_stream(text) {
        let document = match parsed {
            Parsed::Document(document) => document,
            Parsed::Error(e) => {
                let mut entry = error_entry(file, &format!("not valid YAML: {}", e.message));
                entry.line = Some(e.line);
                entry.column = e.column;
                entry.document = Some(e.number);
                tally.entries.push(entry);
                continue;
            }
        };
        let entries = check_document(file, &document, settings, operation);
        if let Some(fixed) = fix_document(text, &document, &entries, tally) {
            out.push_str(text.get(cursor..document.chunk.start).unwrap_or(""));
            out.push_str(&fixed);
            cursor = document.chunk.end;
        }
        tally.entries.extend(entries);
    }
    out.push_str(text.get(cursor..).unwrap_or(""));
    out
}

/// The patched text of one document, or None when nothing changes.
fn fix_document(
    text: &str,
    document: &Document,
    entries: &[Entry],
    tally: &mut Tally,
) -> Option<String> {
    let objects = document.objects.as_ref().ok()?;
    let mut ops: Vec<(String, Value)> = Vec::new();
    // Only `add` can be inserted into the text; `replace` and `remove` (of
    // entries the policy recorded as its own) go through re-serialising.
    let mut only_adds = true;
    let mut expected = document.value.clone();
    for (object, entry) in objects.iter().zip(entries) {
        let Status::Evaluated(outcome) = &entry.status else {
            continue;
        };
        let Some(mutated) = outcome.mutated.as_ref().filter(|_| outcome.patched()) else {
            continue;
        };
        for op in &outcome.patch {
            let path = op.get("path").and_then(Value::as_str).unwrap_or("");
            let value = op.get("value").cloned().unwrap_or(Value::Null);
            only_adds &= op.get("op").and_then(Value::as_str) == Some("add");
            ops.push((format!("{}{path}", object.pointer()), value));
        }
        match expected.pointer_mut(&object.pointer()) {
            Some(slot) => *slot = mutated.clone(),
            None => expected = mutated.clone(),
        }
    }
    if ops.is_empty() {
        return None;
    }
    let original = chunk_text(text, &document.chunk);
    if only_adds {
        let edited = ops
            .iter()
            .try_fold(original.to_owned(), |t, (pointer, value)| {
                yaml_edit::add(&t, pointer, value)
            });
        // The edit must give exactly the object the policy returned.
        if let Ok(edited) = edited {
            if parse_document(&edited).ok().as_ref() == Some(&expected) {
                return Some(edited);
            }
        }
    }
    tally.reserialised += 1;
    Some(reserialise(original, &expected))
}

/// The document written anew from `expected`, after its leading markers
/// and comments; JSON stays JSON.
fn reserialise(original: &str, expected: &Value) -> String {
    let offset = content_start(original, 1).map_or(0, |(offset, _)| offset);
    let (prefix, body) = original.split_at(offset.min(original.len()));
    let ordered = ordered_like(body, expected);
    let text = if body.trim_start().starts_with(['{', '[']) {
        serde_json::to_string_pretty(&ordered)
            .map(|s| s + "\n")
            .unwrap_or_default()
    } else {
        serde_yaml_ng::to_string(&ordered).unwrap_or_default()
    };
    format!("{prefix}{text}")
}

/// `expected` with the keys in the order of the original document (new
/// keys last), so re-serialising does not reorder what the user wrote.
fn ordered_like(original: &str, expected: &Value) -> serde_yaml_ng::Value {
    let template: serde_yaml_ng::Value = serde_yaml_ng::from_str(original).unwrap_or_default();
    order(&template, expected)
}

fn order(template: &serde_yaml_ng::Value, value: &Value) -> serde_yaml_ng::Value {
    use serde_yaml_ng::Value as Yaml;
    match value {
        Value::Object(map) => {
            let mut out = serde_yaml_ng::Mapping::new();
            if let Yaml::Mapping(original) = template {
                for (key, sub) in original {
                    if let Some(v) = key.as_str().and_then(|k| map.get(k)) {
                        out.insert(key.clone(), order(sub, v));
                    }
                }
            }
            for (key, v) in map {
                let key = Yaml::String(key.clone());
                if !out.contains_key(&key) {
                    out.insert(key, order(&Yaml::Null, v));
                }
            }
            Yaml::Mapping(out)
        }
        Value::Array(items) => {
            let none = Vec::new();
            let originals = match template {
                Yaml::Sequence(s) => s,
                _ => &none,
            };
            Yaml::Sequence(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| order(originals.get(i).unwrap_or(&Yaml::Null), v))
                    .collect(),
            )
        }
        other => serde_yaml_ng::to_value(other).unwrap_or(Yaml::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reserialising_keeps_the_original_key_order_and_comments_before_the_document() {
        let original = "---\n# Source: x\n{\"kind\": \"Pod\", \"apiVersion\": \"v1\", \"spec\": {\"b\": 1, \"a\": 2}}\n";
        let expected = json!({"kind": "Pod", "apiVersion": "v1", "spec": {"b": 1, "a": 2, "c": 3}});
        let out = reserialise(original, &expected);
        assert!(out.starts_with("---\n# Source: x\n{"), "{out}");
        let kind = out.find("\"kind\"").unwrap();
        let api = out.find("\"apiVersion\"").unwrap();
        let b = out.find("\"b\"").unwrap();
        let a = out.find("\"a\"").unwrap();
        assert!(kind < api && b < a, "{out}");
        assert_eq!(
            serde_json::from_str::<Value>(&out[out.find('{').unwrap()..]).unwrap(),
            expected
        );
    }
}
