//! Applying JSON Patch `add` operations to YAML text by inserting the new
//! entries where they belong, so every other byte (comments, quoting,
//! layout) stays as written. Only block collections written in the
//! document itself are edited; anything else (flow style, JSON, an alias or
//! merged entries) is an error and the caller rewrites the document.

use serde_json::Value;

use crate::emit::{scalar, value_to_yaml};
use crate::error::TextError;
use crate::node::Data;
use crate::path::pointer_tokens;
use crate::stream::read_stream;

/// Why an `add` cannot be written into the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text does not read.
    #[error("the document does not read: {0}")]
    Unreadable(TextError),
    /// The text holds no document.
    #[error("the document is empty")]
    Empty,
    /// The pointer is the whole document.
    #[error("the patch replaces the whole object")]
    WholeObject,
    /// The parent of the new entry is not in the document.
    #[error("{0}: parent not found")]
    NoParent(String),
    /// The parent is written elsewhere (an alias, or merged entries).
    #[error("{0}: the parent is written elsewhere (an alias or a merge key)")]
    Copied(String),
    /// The parent is written in flow style.
    #[error("{0}: the parent is in flow style")]
    Flow(String),
    /// The key exists already.
    #[error("{0}: the key is already there")]
    KeyExists(String),
    /// The parent is not a block mapping or a block sequence to append to.
    #[error("{0}: the parent is not a block collection")]
    NotBlock(String),
    /// A sequence item whose dash is not on its line.
    #[error("{0}: the sequence item does not start on its dash line")]
    NoDash(String),
}

/// Adds `value` at `pointer` (RFC 6901) in the first document of `text`.
pub fn add(text: &str, pointer: &str, value: &Value) -> Result<String, EditError> {
    let root = match read_stream(text).into_iter().next() {
        Some(Ok(document)) => document.root,
        Some(Err(broken)) => return Err(EditError::Unreadable(broken.error)),
        None => return Err(EditError::Empty),
    };
    let tokens = pointer_tokens(pointer);
    let (last, parents) = tokens.split_last().ok_or(EditError::WholeObject)?;
    let mut node = &root;
    for token in parents {
        node = node
            .child(token)
            .ok_or_else(|| EditError::NoParent(pointer.to_string()))?;
        if node.copied {
            return Err(EditError::Copied(pointer.to_string()));
        }
    }
    if node.flow {
        return Err(EditError::Flow(pointer.to_string()));
    }
    let snippet = match &node.data {
        Data::Map(entries) if !entries.is_empty() => {
            if entries.iter().any(|e| e.key == *last) {
                return Err(EditError::KeyExists(pointer.to_string()));
            }
            if entries.iter().any(|e| e.value.copied) {
                return Err(EditError::Copied(pointer.to_string()));
            }
            entry_text(column(text, node.content_start()), last, value)
        }
        Data::Seq(items) if last == "-" || last.parse::<usize>().ok() == Some(items.len()) => {
            let first = items
                .first()
                .ok_or_else(|| EditError::NotBlock(pointer.to_string()))?;
            let dash = dash_column(text, first.content_start())
                .ok_or_else(|| EditError::NoDash(pointer.to_string()))?;
            item_text(dash, value)
        }
        _ => return Err(EditError::NotBlock(pointer.to_string())),
    };
    Ok(insert_after_line(
        text,
        node.span.end.max(node.span.start),
        &snippet,
    ))
}

/// Column (in bytes) of an offset.
fn column(text: &str, offset: usize) -> usize {
    let line_start = text
        .get(..offset)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |i| i + 1);
    offset - line_start
}

/// Column of the `-` that introduces the sequence item starting at `offset`.
fn dash_column(text: &str, offset: usize) -> Option<usize> {
    let line_start = offset - column(text, offset);
    let before = text.get(line_start..offset).unwrap_or("");
    before
        .rfind("- ")
        .or_else(|| before.ends_with('-').then(|| before.len() - 1))
}

/// Inserts `snippet` (whole lines) after the line holding byte `end - 1`.
fn insert_after_line(text: &str, end: usize, snippet: &str) -> String {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let anchor = end.saturating_sub(1);
    let position = text
        .get(anchor..)
        .and_then(|rest| rest.find('\n'))
        .map_or(text.len(), |i| anchor + i + 1);
    let mut out = String::with_capacity(text.len() + snippet.len() + 2);
    out.push_str(text.get(..position).unwrap_or(text));
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(newline);
    }
    out.push_str(&snippet.replace('\n', newline));
    out.push_str(text.get(position..).unwrap_or(""));
    out
}

/// `key: value` lines at `indent`.
fn entry_text(indent: usize, key: &str, value: &Value) -> String {
    let pad = " ".repeat(indent);
    let key = scalar(key);
    let body = value_to_yaml(value);
    let nested = matches!(value, Value::Object(m) if !m.is_empty())
        || matches!(value, Value::Array(a) if !a.is_empty());
    if nested {
        return format!("{pad}{key}:\n{}", indent_lines(&body, indent + 2));
    }
    format!("{pad}{key}: {}", body)
}

/// `- item` lines with the dash at `dash`.
fn item_text(dash: usize, value: &Value) -> String {
    let body = value_to_yaml(value);
    let mut lines = body.lines();
    let first = lines.next().unwrap_or("");
    let rest: String = lines.map(|l| format!("{l}\n")).collect();
    format!(
        "{}- {first}\n{}",
        " ".repeat(dash),
        indent_lines(&rest, dash + 2)
    )
}

fn indent_lines(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    text.lines()
        .map(|line| {
            if line.is_empty() {
                "\n".to_owned()
            } else {
                format!("{pad}{line}\n")
            }
        })
        .collect()
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_one;
    use serde_json::json;

    fn parsed(text: &str) -> Value {
        read_one(text).unwrap().unwrap().to_json()
    }

    #[test]
    fn adds_a_key_to_a_block_mapping_and_keeps_comments() {
        let text = "spec:\n  # the app\n  containers:\n  - name: a # first\n    image: x\n  restartPolicy: Always\n# trailing\n";
        let out = add(
            text,
            "/spec/nodeSelector",
            &json!({"kubernetes.io/os": "linux"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "spec:\n  # the app\n  containers:\n  - name: a # first\n    image: x\n  restartPolicy: Always\n  nodeSelector:\n    kubernetes.io/os: linux\n# trailing\n"
        );
    }

    #[test]
    fn adds_to_an_existing_selector_with_quoted_keys() {
        let text = "spec:\n  nodeSelector:\n    \"kubernetes.io/os\": windows\n  containers: []\n";
        let out = add(
            text,
            "/spec/nodeSelector/node.kubernetes.io~1windows-build",
            &json!("10.0.17763"),
        )
        .unwrap();
        assert_eq!(
            parsed(&out)["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
            "10.0.17763"
        );
        assert!(out.starts_with("spec:\n  nodeSelector:\n    \"kubernetes.io/os\": windows\n    node.kubernetes.io/windows-build: 10.0.17763\n"), "{out}");
    }

    #[test]
    fn appends_to_indentless_and_indented_sequences() {
        for text in [
            "tolerations:\n- key: a\n  operator: Exists\nother: 1\n",
            "tolerations:\n  - key: a\n    operator: Exists\nother: 1\n",
        ] {
            let item = json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"});
            let out = add(text, "/tolerations/-", &item).unwrap();
            let value = parsed(&out);
            assert_eq!(value["tolerations"][1], item, "{out}");
            assert_eq!(value["other"], 1);
        }
    }

    #[test]
    fn multi_line_strings_stay_inside_their_entry() {
        let out = add(
            "metadata:\n  name: x\nspec:\n  a: 1\n",
            "/spec/script",
            &json!("line one\nline two\n"),
        )
        .unwrap();
        assert_eq!(
            parsed(&out)["spec"]["script"],
            "line one\nline two\n",
            "{out}"
        );
    }

    #[test]
    fn crlf_bom_and_a_missing_last_newline() {
        assert_eq!(
            add("spec:\r\n  a: 1\r\n", "/spec/b", &json!(2)).unwrap(),
            "spec:\r\n  a: 1\r\n  b: 2\r\n"
        );
        assert_eq!(
            add("\u{feff}spec:\n  a: 1\n", "/spec/b", &json!(2)).unwrap(),
            "\u{feff}spec:\n  a: 1\n  b: 2\n"
        );
        assert_eq!(
            add("spec:\n  a: 1", "/spec/b", &json!(2)).unwrap(),
            "spec:\n  a: 1\n  b: 2\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_edit_in_place() {
        assert!(matches!(
            add("spec: {a: 1}\n", "/spec/b", &json!(2)),
            Err(EditError::Flow(_))
        ));
        assert!(add(
            "spec:\n  nodeSelector:\n",
            "/spec/nodeSelector/x",
            &json!("y")
        )
        .is_err());
        assert!(matches!(
            add("spec:\n  a: 1\n", "/spec/a", &json!(2)),
            Err(EditError::KeyExists(_))
        ));
        assert!(matches!(
            add("spec:\n  a: 1\n", "/missing/b", &json!(2)),
            Err(EditError::NoParent(_))
        ));
        assert!(add("list: []\n", "/list/-", &json!(2)).is_err());
        // Written elsewhere: editing here would change the anchor's text.
        let aliased = "base: &b\n  a: 1\nspec: *b\n";
        assert!(matches!(
            add(aliased, "/spec/c", &json!(2)),
            Err(EditError::Copied(_))
        ));
        let merged = "base: &b\n  a: 1\nspec:\n  <<: *b\n  z: 2\n";
        assert!(matches!(
            add(merged, "/spec/c", &json!(2)),
            Err(EditError::Copied(_))
        ));
    }
}
