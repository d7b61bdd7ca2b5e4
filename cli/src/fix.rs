//! `fix`: the manifests with what the policy would add. Documents that need
//! nothing are copied byte for byte; a changed document gets the added
//! entries inserted into its text, and is rewritten (comments lost) only
//! when that is not possible, e.g. for flow-style or JSON documents.

use std::io::{self, Write};
use std::path::Path;

use os_placement_door::emit::{ordered_like, to_json_text, to_yaml};
use os_placement_door::objects::{objects, Found};
use os_placement_door::stream::content_start;
use os_placement_door::{edit, evaluate, read_stream, Answer, Document, Node, Options};
use serde_json::Value;

use crate::args::FixArgs;
use crate::engine::Policy;
use crate::error::CliError;
use crate::inputs::{discover, Source};
use crate::results::{Entry, Status, Summary};

/// Counts for the closing line and the exit code.
#[derive(Debug, Default)]
struct Tally {
    entries: Vec<Entry>,
    /// Documents that had to be rewritten.
    reserialised: usize,
}

pub fn run(args: &FixArgs) -> Result<u8, CliError> {
    let mut policy = Policy::load(&args.policy)?;
    // Fix exists to add what is missing, whatever the cluster's mode.
    policy.settings.mutate = true;
    if args.policy.audit {
        return Err(CliError::Usage(
            "--audit judges objects without changing them: use `os-placement check --audit`",
        ));
    }
    if args.in_place && args.paths.iter().any(|p| p == "-") {
        return Err(CliError::Usage("--in-place cannot rewrite stdin"));
    }
    let inputs = discover(&args.paths);
    policy.look_up(&inputs, &args.policy)?;
    let mut tally = Tally::default();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut written_any = false;
    for input in &inputs {
        let name = input.source.name();
        let text = match &input.text {
            Ok(text) => text,
            Err(e) => {
                tally.entries.push(Entry::unreadable(&name, e.to_string()));
                continue;
            }
        };
        let fixed = fix_text(text, &name, &policy.options(), &mut tally);
        match (&input.source, args.in_place) {
            (Source::File(path), true) => {
                if fixed != *text {
                    write_file(path, &fixed)?;
                    eprintln!("fixed {}", path.display());
                }
            }
            _ => {
                if written_any && !fixed.starts_with("---") {
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

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Rejections, errors and the totals go to stderr: stdout is the manifests.
fn report(tally: &Tally, files: usize) {
    for entry in &tally.entries {
        match &entry.status {
            Status::Error(message) => eprintln!("{}: error: {message}", entry.location()),
            Status::Evaluated(answer) if !answer.accepted() => {
                eprintln!(
                    "{}  {}  rejected, left unchanged",
                    entry.location(),
                    entry.name()
                );
                for finding in &answer.violations {
                    eprintln!("  violation  {}", finding.item);
                }
            }
            _ => {}
        }
    }
    if tally.reserialised > 0 {
        eprintln!(
            "{} document(s) re-serialised (flow style, JSON, or anchors and merge keys): their comments are not kept",
            tally.reserialised
        );
    }
    eprintln!("{}", Summary::of(&tally.entries, files).line());
}

/// The input with every patch applied; unchanged documents byte for byte.
fn fix_text(text: &str, file: &str, options: &Options<'_>, tally: &mut Tally) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut cursor = 0;
    for document in read_stream(text) {
        let document = match document {
            Ok(document) => document,
            Err(broken) => {
                tally.entries.push(Entry::problem(file, broken.into()));
                continue;
            }
        };
        let answered = answer_document(&document, file, options, tally);
        if let Some(fixed) = fix_document(text, &document, &answered, tally) {
            out.push_str(text.get(cursor..document.range.start).unwrap_or(""));
            out.push_str(&fixed);
            cursor = document.range.end;
        }
    }
    out.push_str(text.get(cursor..).unwrap_or(""));
    out
}

/// The answer of every object of a document, with its JSON Pointer in the
/// document; the entries go to the tally.
fn answer_document(
    document: &Document,
    file: &str,
    options: &Options<'_>,
    tally: &mut Tally,
) -> Vec<(String, Answer)> {
    let mut answered = Vec::new();
    for found in objects(document) {
        match found {
            Found::Object(subject) => {
                let answer = evaluate(&options.call(&subject));
                tally.entries.push(Entry::answered(file, answer.clone()));
                // A captured AdmissionReview is a record, not a manifest to fix.
                if subject.review_request.is_none() {
                    answered.push((subject.pointer.clone(), answer));
                }
            }
            Found::NotAnObject(problem) => tally.entries.push(Entry::problem(file, problem.into())),
        }
    }
    answered
}

/// The patched text of one document, or None when nothing changes.
fn fix_document(
    text: &str,
    document: &Document,
    answered: &[(String, Answer)],
    tally: &mut Tally,
) -> Option<String> {
    let mut ops: Vec<(String, Value)> = Vec::new();
    // Only `add` can be inserted into the text; `replace` and `remove` (of
    // entries the policy recorded as its own) go through rewriting.
    let mut only_adds = true;
    let mut expected = document.root.to_json();
    for (pointer, answer) in answered {
        let Some(mutated) = answer.mutated_object.as_ref().filter(|_| answer.patched()) else {
            continue;
        };
        for op in &answer.patch {
            let path = op.get("path").and_then(Value::as_str).unwrap_or("");
            let value = op.get("value").cloned().unwrap_or(Value::Null);
            only_adds &= op.get("op").and_then(Value::as_str) == Some("add");
            ops.push((format!("{pointer}{path}"), value));
        }
        match expected.pointer_mut(pointer) {
            Some(slot) => *slot = mutated.clone(),
            None => expected = mutated.clone(),
        }
    }
    if ops.is_empty() {
        return None;
    }
    let original = text.get(document.range.clone()).unwrap_or("");
    if only_adds {
        let edited = ops
            .iter()
            .try_fold(original.to_owned(), |t, (pointer, value)| {
                edit::add(&t, pointer, value)
            });
        // The edit must give exactly the object the policy returned.
        if let Ok(edited) = edited {
            if reads_as(&edited, &expected) {
                return Some(edited);
            }
        }
    }
    tally.reserialised += 1;
    Some(reserialise(original, &document.root, &expected))
}

fn reads_as(text: &str, expected: &Value) -> bool {
    matches!(read_stream(text).first(), Some(Ok(d)) if d.root.to_json() == *expected)
}

/// The document written anew from `expected`, after its leading markers
/// and comments, keys in the written order; JSON stays JSON.
fn reserialise(original: &str, written: &Node, expected: &Value) -> String {
    let offset = content_start(original, 1).map_or(0, |(offset, _)| offset);
    let (prefix, body) = original.split_at(offset.min(original.len()));
    let ordered = ordered_like(Some(written), expected);
    let text = if body.trim_start().starts_with(['{', '[']) {
        to_json_text(&ordered)
    } else {
        to_yaml(&ordered)
    };
    format!("{prefix}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use os_placement_door::read_one;
    use serde_json::json;

    #[test]
    fn reserialising_keeps_the_original_key_order_and_comments_before_the_document() {
        let original = "---\n# Source: x\n{\"kind\": \"Pod\", \"apiVersion\": \"v1\", \"spec\": {\"b\": 1, \"a\": 2}}\n";
        let written = read_one(original).unwrap().unwrap();
        let expected = json!({"kind": "Pod", "apiVersion": "v1", "spec": {"b": 1, "a": 2, "c": 3}});
        let out = reserialise(original, &written, &expected);
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
