//! Multi-document YAML streams: split at document markers, each document
//! parsed on its own so a broken one does not hide the others, `List`
//! objects expanded into their items.

use serde_json::Value;

/// Documents larger than this are reported instead of parsed.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// One document of a stream: a byte range of the input text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start: usize,
    pub end: usize,
    /// 1-based line where the chunk starts (its `---` line, if any).
    pub first_line: usize,
}

/// A parsed document.
#[derive(Debug, Clone)]
pub struct Document {
    pub chunk: Chunk,
    /// 1-based position among the non-empty documents of the input.
    pub number: usize,
    /// 1-based line of the document's first content (after markers and comments).
    pub line: usize,
    /// The whole document as parsed.
    pub value: Value,
    /// The objects to evaluate, or why the document holds none.
    pub objects: Result<Vec<Object>, String>,
}

/// One Kubernetes object: a document, or an item of a `List`.
#[derive(Debug, Clone)]
pub struct Object {
    pub value: Value,
    /// 1-based line of a `List` item, when it could be located.
    pub line: Option<usize>,
    /// Index in the `List`'s `items`, when it comes from a `List`.
    pub item: Option<usize>,
}

impl Object {
    /// JSON Pointer of the object inside its document.
    pub fn pointer(&self) -> String {
        self.item.map(|i| format!("/items/{i}")).unwrap_or_default()
    }
}

/// Sets the line of each `List` item from its position in the text.
fn locate_items(mut objects: Vec<Object>, body: &str, chunk: &Chunk) -> Vec<Object> {
    if objects.iter().all(|o| o.item.is_none()) {
        return objects;
    }
    let offsets = crate::yaml_edit::item_offsets(body, "/items").unwrap_or_default();
    for object in &mut objects {
        object.line = object
            .item
            .and_then(|i| offsets.get(i))
            .and_then(|&offset| body.get(..offset))
            .map(|before| chunk.first_line + before.matches('\n').count());
    }
    objects
}

/// A document that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub chunk: Chunk,
    /// 1-based position among the non-empty documents of the input.
    pub number: usize,
    pub line: usize,
    pub column: Option<usize>,
    pub message: String,
}

/// What reading a stream gave: documents and errors, in order.
#[derive(Debug, Clone)]
pub enum Parsed {
    Document(Box<Document>),
    Error(ParseError),
}

/// Splits a stream at `---` lines. A line starting with `---` followed by
/// a blank or the line end can only be a document marker: YAML forbids it
/// inside scalars, so splitting the text is exact.
pub fn split_stream(text: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut first_line = 1;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if offset > start && is_document_start(line) {
            chunks.push(Chunk {
                start,
                end: offset,
                first_line,
            });
            start = offset;
            first_line = index + 1;
        }
        offset += line.len();
    }
    chunks.push(Chunk {
        start,
        end: text.len(),
        first_line,
    });
    chunks
}

fn is_document_start(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// A `---` line with nothing but a comment after it.
fn is_bare_marker(line: &str) -> bool {
    is_document_start(line) && {
        let rest = line.get(3..).unwrap_or("").trim_start();
        rest.is_empty() || rest.starts_with('#')
    }
}

/// The text of a chunk.
pub fn chunk_text<'t>(text: &'t str, chunk: &Chunk) -> &'t str {
    text.get(chunk.start..chunk.end).unwrap_or("")
}

/// Byte offset (within the chunk) and 1-based line of the first content line:
/// not blank, not a comment, not a marker or directive. None when empty.
pub fn content_start(chunk_text: &str, first_line: usize) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (index, line) in chunk_text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start_matches(BOM).trim_start();
        let is_noise = trimmed.is_empty()
            || trimmed.starts_with('#')
            || trimmed.starts_with('%')
            || is_bare_marker(line)
            || line.trim_end() == "...";
        if !is_noise {
            return Some((offset, first_line + index));
        }
        offset += line.len();
    }
    None
}

/// Parses every document of a stream.
pub fn parse_stream(text: &str) -> Vec<Parsed> {
    let mut parsed = Vec::new();
    let mut number = 0;
    for chunk in split_stream(text) {
        let body = chunk_text(text, &chunk);
        let Some((_, line)) = content_start(body, chunk.first_line) else {
            continue; // only markers and comments, e.g. a template that rendered nothing
        };
        number += 1;
        if body.len() > MAX_DOCUMENT_BYTES {
            parsed.push(Parsed::Error(ParseError {
                number,
                line,
                column: None,
                message: format!(
                    "document is larger than {} MiB: split it",
                    MAX_DOCUMENT_BYTES / 1024 / 1024
                ),
                chunk,
            }));
            continue;
        }
        match parse_document(body) {
            // Only comments after all, e.g. `# Source:` of an empty template.
            Ok(Value::Null) => number -= 1,
            Ok(value) => {
                let objects = objects_of(&value).map(|objects| locate_items(objects, body, &chunk));
                parsed.push(Parsed::Document(Box::new(Document {
                    chunk,
                    number,
                    line,
                    value,
                    objects,
                })));
            }
            Err(e) => {
                parsed.push(Parsed::Error(yaml_error(e, chunk, number)));
            }
        }
    }
    parsed
}

/// A byte order mark, as editors on Windows often write.
pub const BOM: char = '\u{feff}';

/// Parses one document's text.
pub fn parse_document(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    serde_yaml_ng::from_str(text.strip_prefix(BOM).unwrap_or(text))
}

fn yaml_error(error: serde_yaml_ng::Error, chunk: Chunk, number: usize) -> ParseError {
    let message = relocate(&error.to_string(), chunk.first_line - 1);
    let (line, column) = match error.location() {
        Some(location) => (
            chunk.first_line + location.line().saturating_sub(1),
            Some(location.column()),
        ),
        None => (chunk.first_line, None),
    };
    ParseError {
        chunk,
        number,
        line,
        column,
        message,
    }
}

/// The parser's message without its own location (reported separately),
/// keeping the context (`while parsing a flow sequence at line N column M`)
/// with N counted from the start of the input.
fn relocate(message: &str, lines_before: usize) -> String {
    let Some((problem, rest)) = message.split_once(" at line ") else {
        return message.to_owned();
    };
    let Some((_, context)) = rest.split_once(", ") else {
        return problem.to_owned();
    };
    let shifted = context.split_once(" at line ").and_then(|(what, at)| {
        let (line, column) = at.split_once(" column ")?;
        let line: usize = line.parse().ok()?;
        Some(format!(
            "{what} at line {} column {column}",
            line + lines_before
        ))
    });
    format!(
        "{problem}, {}",
        shifted.unwrap_or_else(|| context.to_owned())
    )
}

/// The objects of a document: itself, or the items of a `List`.
fn objects_of(value: &Value) -> Result<Vec<Object>, String> {
    check_object(value, "document")?;
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(items) = value.get("items").filter(|_| kind.ends_with("List")) else {
        return Ok(vec![Object {
            value: value.clone(),
            line: None,
            item: None,
        }]);
    };
    let items = items
        .as_array()
        .ok_or_else(|| format!("{kind}: items is {}, not a list", type_name(items)))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            check_object(item, &format!("items[{i}]"))?;
            Ok(Object {
                value: item.clone(),
                line: None,
                item: Some(i),
            })
        })
        .collect()
}

fn check_object(value: &Value, what: &str) -> Result<(), String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "{what} is {}, not a Kubernetes object: expected a mapping with apiVersion and kind",
            type_name(value)
        ));
    };
    for field in ["apiVersion", "kind"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err(format!(
                    "{what} is not a Kubernetes object: {field} is {}, expected a non-empty string",
                    type_name(other)
                ))
            }
            None => {
                return Err(format!(
                    "{what} is not a Kubernetes object: {field} is missing"
                ))
            }
        }
    }
    Ok(())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(s) if s.is_empty() => "an empty string",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents(text: &str) -> Vec<Document> {
        parse_stream(text)
            .into_iter()
            .filter_map(|p| match p {
                Parsed::Document(d) => Some(*d),
                Parsed::Error(_) => None,
            })
            .collect()
    }

    #[test]
    fn splits_at_markers_only() {
        let text = "a: 1\n---\nb: |\n  ---\n  x\n--- # c\nc: 3\n----\n";
        let chunks = split_stream(text);
        let parts: Vec<&str> = chunks.iter().map(|c| chunk_text(text, c)).collect();
        assert_eq!(
            parts,
            ["a: 1\n", "---\nb: |\n  ---\n  x\n", "--- # c\nc: 3\n----\n"]
        );
        assert_eq!(chunks[1].first_line, 2);
        assert_eq!(chunks[2].first_line, 6);
        let joined: String = parts.concat();
        assert_eq!(joined, text);
    }

    #[test]
    fn leading_marker_makes_no_empty_chunk() {
        let chunks = split_stream("---\na: 1\n");
        assert_eq!(chunks.len(), 1);
        assert_eq!(split_stream("").len(), 1);
    }

    #[test]
    fn helm_stream_lines_and_empty_documents() {
        let text = "---\n# Source: chart/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n# Source: chart/templates/empty.yaml\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n";
        let docs = documents(text);
        assert_eq!(docs.len(), 2);
        assert_eq!((docs[0].number, docs[0].line), (1, 3));
        assert_eq!((docs[1].number, docs[1].line), (2, 9));
    }

    #[test]
    fn broken_document_does_not_hide_the_others() {
        let text = "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: [Pod\n---\napiVersion: v1\nkind: Service\n";
        let parsed = parse_stream(text);
        assert_eq!(parsed.len(), 3);
        let Parsed::Error(e) = &parsed[1] else {
            panic!("{parsed:?}")
        };
        assert_eq!(e.line, 6, "{e:?}");
        assert!(e.column.is_some());
        assert!(
            e.message
                .ends_with("while parsing a flow sequence at line 5 column 7"),
            "{}",
            e.message
        );
        assert!(matches!(parsed[2], Parsed::Document(_)));
    }

    #[test]
    fn an_enormous_document_is_an_error_and_the_next_is_still_read() {
        let huge = format!(
            "big: \"{}\"\n---\napiVersion: v1\nkind: Pod\n",
            "x".repeat(MAX_DOCUMENT_BYTES)
        );
        let parsed = parse_stream(&huge);
        assert_eq!(parsed.len(), 2);
        let Parsed::Error(e) = &parsed[0] else {
            panic!("{:?}", parsed[0])
        };
        assert!(e.message.contains("larger than 16 MiB"), "{}", e.message);
        assert!(matches!(&parsed[1], Parsed::Document(d) if d.number == 2));
    }

    #[test]
    fn byte_order_mark_is_ignored() {
        let docs = documents("\u{feff}apiVersion: v1\nkind: Pod\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["kind"], "Pod");
    }

    #[test]
    fn lists_are_expanded() {
        let docs = documents(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n- {apiVersion: apps/v1, kind: Deployment}\n",
        );
        let objects = docs[0].objects.as_ref().unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[1].item, Some(1));
        assert_eq!(objects[1].pointer(), "/items/1");
        assert_eq!((objects[0].line, objects[1].line), (Some(4), Some(5)));
        assert_eq!(objects[1].value["kind"], "Deployment");
    }

    #[test]
    fn non_objects_are_reported() {
        let docs =
            documents("- a\n- b\n---\nkind: Pod\n---\napiVersion: v1\nkind: List\nitems:\n- 3\n");
        assert!(docs[0].objects.as_ref().unwrap_err().contains("a list"));
        assert!(docs[1]
            .objects
            .as_ref()
            .unwrap_err()
            .contains("apiVersion is missing"));
        assert!(docs[2]
            .objects
            .as_ref()
            .unwrap_err()
            .contains("items[0] is a number"));
    }
}
