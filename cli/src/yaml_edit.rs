//! Applies JSON Patch `add` operations to YAML text by inserting the new
//! entries where they belong, so every other byte (comments, quoting,
//! layout) stays as written. Only block collections are edited; anything
//! else is an error and the caller re-serialises the document instead.

use saphyr_parser::{Event, Parser};
use serde_json::Value;

use crate::documents::BOM;

/// A node of the document with its byte range.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    flow: bool,
    kind: NodeKind,
}

#[derive(Debug)]
enum NodeKind {
    Scalar,
    Alias,
    /// Entries with their key (None for a non-scalar key) and the byte
    /// offset of the first key.
    Map {
        entries: Vec<(Option<String>, Node)>,
        first_key: Option<usize>,
    },
    Seq(Vec<Node>),
}

impl Node {
    /// Where the node's own text begins: the first key of a block mapping.
    fn content_start(&self) -> usize {
        match &self.kind {
            NodeKind::Map {
                first_key: Some(k), ..
            } => *k,
            _ => self.start,
        }
    }
}

enum Frame {
    Map {
        start: usize,
        flow: bool,
        entries: Vec<(Option<String>, Node)>,
        first_key: Option<usize>,
        key: Option<Option<String>>,
    },
    Seq {
        start: usize,
        flow: bool,
        items: Vec<Node>,
    },
}

/// Adds `value` at `pointer` (RFC 6901) in the first document of `text`.
pub fn add(text: &str, pointer: &str, value: &Value) -> Result<String, String> {
    if let Some(rest) = text.strip_prefix(BOM) {
        return add(rest, pointer, value).map(|edited| format!("{BOM}{edited}"));
    }
    let root = parse_tree(text)?;
    let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    let (last, parents) = tokens
        .split_last()
        .ok_or("the patch replaces the whole object")?;
    let mut node = &root;
    for token in parents {
        node = child(node, token).ok_or_else(|| format!("{pointer}: parent not found"))?;
    }
    if node.flow {
        return Err(format!("{pointer}: the parent is in flow style"));
    }
    let snippet = match &node.kind {
        NodeKind::Map {
            entries,
            first_key: Some(first_key),
        } => {
            if entries
                .iter()
                .any(|(k, _)| k.as_deref() == Some(last.as_str()))
            {
                return Err(format!("{pointer}: the key is already there"));
            }
            entry_text(column(text, *first_key), last, value)?
        }
        NodeKind::Seq(items) if last == "-" || last.parse::<usize>().ok() == Some(items.len()) => {
            let first = items.first().ok_or("empty sequence")?;
            item_text(dash_column(text, first.content_start())?, value)?
        }
        _ => return Err(format!("{pointer}: the parent is not a block collection")),
    };
    Ok(insert_after_line(text, node.start.max(node.end), &snippet))
}

/// Byte offsets where the items of the sequence at `pointer` begin, e.g.
/// the objects of a `List` at `/items`; None when it cannot be located.
pub fn item_offsets(text: &str, pointer: &str) -> Option<Vec<usize>> {
    let bom = text.strip_prefix(BOM).map_or(0, |_| BOM.len_utf8());
    let root = parse_tree(text.get(bom..)?).ok()?;
    let node = pointer
        .split('/')
        .skip(1)
        .map(unescape)
        .try_fold(&root, |node, token| child(node, &token))?;
    match &node.kind {
        NodeKind::Seq(items) => Some(items.iter().map(|i| i.content_start() + bom).collect()),
        _ => None,
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn child<'n>(node: &'n Node, token: &str) -> Option<&'n Node> {
    match &node.kind {
        NodeKind::Map { entries, .. } => entries
            .iter()
            .find(|(k, _)| k.as_deref() == Some(token))
            .map(|(_, v)| v),
        NodeKind::Seq(items) => items.get(token.parse::<usize>().ok()?),
        NodeKind::Scalar | NodeKind::Alias => None,
    }
}

/// Builds the node tree of the first document, with byte offsets.
fn parse_tree(text: &str) -> Result<Node, String> {
    // Marker indices count characters; edits need bytes.
    let bytes: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let byte = |index: usize| bytes.get(index).copied().unwrap_or(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| e.to_string())?;
        let (start, end) = (byte(span.start.index()), byte(span.end.index()));
        let opens = |c: char| text.get(start..).is_some_and(|rest| rest.starts_with(c));
        let done = match event {
            Event::Scalar(value, ..) => {
                Some((leaf(start, end, NodeKind::Scalar), Some(value.into_owned())))
            }
            Event::Alias(_) => Some((leaf(start, end, NodeKind::Alias), None)),
            Event::MappingStart(..) => {
                stack.push(Frame::Map {
                    start,
                    flow: opens('{'),
                    entries: Vec::new(),
                    first_key: None,
                    key: None,
                });
                None
            }
            Event::SequenceStart(..) => {
                stack.push(Frame::Seq {
                    start,
                    flow: opens('['),
                    items: Vec::new(),
                });
                None
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let frame = stack.pop().ok_or("unbalanced document")?;
                Some((close(frame, end), None))
            }
            _ => None,
        };
        if let Some((node, scalar)) = done {
            match stack.last_mut() {
                None => return Ok(node),
                Some(frame) => attach(frame, node, scalar),
            }
        }
    }
    Err("the document is empty".to_owned())
}

fn leaf(start: usize, end: usize, kind: NodeKind) -> Node {
    Node {
        start,
        end,
        flow: false,
        kind,
    }
}

fn close(frame: Frame, end_marker: usize) -> Node {
    // A block collection ends where its last child ends; its end event
    // sits at the next token, after any comments.
    let (start, flow, kind, last_end) = match frame {
        Frame::Map {
            start,
            flow,
            entries,
            first_key,
            ..
        } => {
            let last_end = entries.last().map(|(_, v)| v.end);
            (start, flow, NodeKind::Map { entries, first_key }, last_end)
        }
        Frame::Seq { start, flow, items } => {
            let last_end = items.last().map(|v| v.end);
            (start, flow, NodeKind::Seq(items), last_end)
        }
    };
    let end = if flow {
        end_marker
    } else {
        last_end.unwrap_or(start)
    };
    Node {
        start,
        end,
        flow,
        kind,
    }
}

fn attach(frame: &mut Frame, node: Node, scalar: Option<String>) {
    match frame {
        Frame::Seq { items, .. } => items.push(node),
        Frame::Map {
            entries,
            first_key,
            key,
            ..
        } => match key.take() {
            None => {
                first_key.get_or_insert(node.start);
                *key = Some(scalar.filter(|_| matches!(node.kind, NodeKind::Scalar)));
            }
            Some(k) => entries.push((k, node)),
        },
    }
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
fn dash_column(text: &str, offset: usize) -> Result<usize, String> {
    let line_start = offset - column(text, offset);
    let before = text.get(line_start..offset).unwrap_or("");
    let dash = before
        .rfind("- ")
        .or_else(|| before.ends_with('-').then(|| before.len() - 1))
        .ok_or("the sequence item does not start on its dash line")?;
    Ok(dash)
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

fn to_yaml(value: &Value) -> Result<String, String> {
    serde_yaml_ng::to_string(value).map_err(|e| e.to_string())
}

/// `key: value` lines at `indent`.
fn entry_text(indent: usize, key: &str, value: &Value) -> Result<String, String> {
    let pad = " ".repeat(indent);
    let key = to_yaml(&Value::String(key.to_owned()))?;
    let key = key.trim_end();
    let body = to_yaml(value)?;
    let nested = matches!(value, Value::Object(m) if !m.is_empty())
        || matches!(value, Value::Array(a) if !a.is_empty());
    if nested {
        return Ok(format!(
            "{pad}{key}:\n{}",
            indent_lines(&body, indent + 2, true)
        ));
    }
    let mut lines = body.lines();
    let first = lines.next().unwrap_or("");
    let rest: String = lines.map(|l| format!("{l}\n")).collect();
    Ok(format!(
        "{pad}{key}: {first}\n{}",
        indent_lines(&rest, indent, true)
    ))
}

/// `- item` lines with the dash at `dash`.
fn item_text(dash: usize, value: &Value) -> Result<String, String> {
    let body = to_yaml(value)?;
    let mut lines = body.lines();
    let first = lines.next().unwrap_or("");
    let rest: String = lines.map(|l| format!("{l}\n")).collect();
    Ok(format!(
        "{}- {first}\n{}",
        " ".repeat(dash),
        indent_lines(&rest, dash + 2, true)
    ))
}

fn indent_lines(text: &str, indent: usize, skip_empty: bool) -> String {
    let pad = " ".repeat(indent);
    text.lines()
        .map(|line| {
            if skip_empty && line.is_empty() {
                "\n".to_owned()
            } else {
                format!("{pad}{line}\n")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
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
        let value = parsed(&out);
        assert_eq!(
            value["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
            "10.0.17763"
        );
        assert!(out.starts_with("spec:\n  nodeSelector:\n    \"kubernetes.io/os\": windows\n    node.kubernetes.io/windows-build:"), "{out}");
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
        let text = "metadata:\n  name: x\nspec:\n  a: 1\n";
        let out = add(text, "/spec/script", &json!("line one\nline two\n")).unwrap();
        assert_eq!(
            parsed(&out)["spec"]["script"],
            "line one\nline two\n",
            "{out}"
        );
    }

    #[test]
    fn crlf_documents_get_crlf_lines() {
        let out = add("spec:\r\n  a: 1\r\n", "/spec/b", &json!(2)).unwrap();
        assert_eq!(out, "spec:\r\n  a: 1\r\n  b: 2\r\n");
    }

    #[test]
    fn byte_order_mark_stays_first() {
        let out = add("\u{feff}spec:\n  a: 1\n", "/spec/b", &json!(2)).unwrap();
        assert_eq!(out, "\u{feff}spec:\n  a: 1\n  b: 2\n");
    }

    #[test]
    fn item_offsets_point_at_each_item() {
        let text = "kind: List\nitems:\n- kind: Pod\n  x: 1\n-   kind: Job\n";
        let offsets = item_offsets(text, "/items").unwrap();
        let starts: Vec<&str> = offsets.iter().map(|&o| &text[o..o + 9]).collect();
        assert_eq!(starts, ["kind: Pod", "kind: Job"]);
        assert_eq!(item_offsets("items: 3\n", "/items"), None);
    }

    #[test]
    fn no_trailing_newline() {
        let out = add("spec:\n  a: 1", "/spec/b", &json!(2)).unwrap();
        assert_eq!(out, "spec:\n  a: 1\n  b: 2\n");
    }

    #[test]
    fn refuses_what_it_cannot_edit_in_place() {
        assert!(add("spec: {a: 1}\n", "/spec/b", &json!(2)).is_err());
        assert!(add(
            "spec:\n  nodeSelector:\n",
            "/spec/nodeSelector/x",
            &json!("y")
        )
        .is_err());
        assert!(add("spec:\n  a: 1\n", "/spec/a", &json!(2)).is_err());
        assert!(add("spec:\n  a: 1\n", "/missing/b", &json!(2)).is_err());
        assert!(add("list: []\n", "/list/-", &json!(2)).is_err());
    }
}
