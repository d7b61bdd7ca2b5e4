//! Text to documents: a YAML or JSON stream split at its `---` lines, each
//! document read on its own, so a broken one does not hide the others.

use std::ops::Range;

use crate::compose::{compose, Origin};
use crate::error::TextError;
use crate::node::{Node, Position};

/// Documents larger than this are reported instead of read.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// A byte order mark, as editors on Windows often write.
pub const BOM: char = '\u{feff}';

/// One document of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// 1-based position among the documents that hold content.
    pub number: usize,
    /// Its bytes in the input, from its `---` line (if any) to the next one.
    pub range: Range<usize>,
    /// Line of its first content (after markers and comments).
    pub line: usize,
    /// Its content.
    pub root: Node,
}

/// A document that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenDocument {
    /// 1-based position among the documents that hold content.
    pub number: usize,
    /// Its bytes in the input.
    pub range: Range<usize>,
    /// What is wrong, and where.
    pub error: TextError,
}

/// Reads every document of a stream, in order. Chunks that hold only
/// markers and comments (a Helm template that rendered nothing) are left
/// out; a document whose content is `null` is kept (its root is null).
pub fn read_stream(text: &str) -> Vec<Result<Document, BrokenDocument>> {
    let mut out = Vec::new();
    let mut number = 0;
    for chunk in split_stream(text) {
        let body = text.get(chunk.range.clone()).unwrap_or("");
        let Some((_, line)) = content_start(body, chunk.first_line) else {
            continue;
        };
        number += 1;
        let broken = |error: TextError| BrokenDocument {
            number,
            range: chunk.range.clone(),
            error,
        };
        if body.len() > MAX_DOCUMENT_BYTES {
            out.push(Err(broken(TextError {
                message: format!(
                    "the document is larger than {} MiB: split it",
                    MAX_DOCUMENT_BYTES / 1024 / 1024
                ),
                at: Position { line, column: 1 },
            })));
            continue;
        }
        match read_chunk(body, &chunk) {
            Ok(Some(root)) => out.push(Ok(Document {
                number,
                range: chunk.range.clone(),
                line,
                root,
            })),
            // Only comments after all, e.g. `# Source:` of an empty template.
            Ok(None) => number -= 1,
            Err(error) => out.push(Err(broken(error))),
        }
    }
    out
}

/// The one document of a text (settings, a case file, an old object):
/// `None` when it holds none or only `null`; an error when it holds more.
pub fn read_one(text: &str) -> Result<Option<Node>, TextError> {
    let mut found = None;
    for document in read_stream(text) {
        let document = document.map_err(|b| b.error)?;
        if matches!(document.root.data, crate::node::Data::Null) {
            continue;
        }
        if found.is_some() {
            return Err(TextError {
                message: "a second document where one is expected: remove it, or the `---` line before it".to_string(),
                at: Position {
                    line: document.line,
                    column: 1,
                },
            });
        }
        found = Some(document.root);
    }
    Ok(found)
}

fn read_chunk(body: &str, chunk: &Chunk) -> Result<Option<Node>, TextError> {
    let (body, skipped) = match body.strip_prefix(BOM) {
        Some(rest) => (rest, BOM.len_utf8()),
        None => (body, 0),
    };
    let origin = Origin {
        byte: chunk.range.start + skipped,
        line: chunk.first_line,
    };
    compose(body, origin)
}

/// One document's text in a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    range: Range<usize>,
    /// Line where the chunk starts (its `---` line, if any).
    first_line: usize,
}

/// Splits a stream at `---` lines. A line starting with `---` followed by
/// a blank or the line end can only be a document marker: YAML forbids it
/// inside scalars, so splitting the text is exact. kubectl splits there too
/// (apimachinery's YAMLReader).
fn split_stream(text: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut first_line = 1;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if offset > start && is_document_start(line) {
            chunks.push(Chunk {
                range: start..offset,
                first_line,
            });
            start = offset;
            first_line = index + 1;
        }
        offset += line.len();
    }
    chunks.push(Chunk {
        range: start..text.len(),
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

/// Byte offset (within `chunk_text`) and line of its first content line:
/// not blank, not a comment, not a marker or directive. `None` when empty.
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

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn documents(text: &str) -> Vec<Document> {
        read_stream(text)
            .into_iter()
            .filter_map(Result::ok)
            .collect()
    }

    #[test]
    fn splits_at_markers_only() {
        let text = "a: 1\n---\nb: |\n  ---\n  x\n--- # c\nc: 3\n----\n";
        let chunks = split_stream(text);
        let parts: Vec<&str> = chunks.iter().map(|c| &text[c.range.clone()]).collect();
        assert_eq!(
            parts,
            ["a: 1\n", "---\nb: |\n  ---\n  x\n", "--- # c\nc: 3\n----\n"]
        );
        assert_eq!((chunks[1].first_line, chunks[2].first_line), (2, 6));
        assert_eq!(parts.concat(), text);
        assert_eq!(
            split_stream("---\na: 1\n").len(),
            1,
            "no empty chunk before"
        );
    }

    #[test]
    fn helm_stream_lines_and_empty_documents() {
        let text = "---\n# Source: chart/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n# Source: chart/templates/empty.yaml\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n";
        let docs = documents(text);
        assert_eq!(docs.len(), 2);
        assert_eq!((docs[0].number, docs[0].line), (1, 3));
        assert_eq!((docs[1].number, docs[1].line), (2, 9));
        assert_eq!(docs[1].root.get("kind").unwrap().span.at.line, 10);
    }

    #[test]
    fn broken_document_does_not_hide_the_others() {
        let text = "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: [Pod\n---\napiVersion: v1\nkind: Service\n";
        let read = read_stream(text);
        assert_eq!(read.len(), 3);
        let Err(broken) = &read[1] else {
            panic!("{read:?}")
        };
        assert_eq!(broken.number, 2);
        assert!(broken.error.at.line >= 5, "{broken:?}");
        assert!(read[2].is_ok());
    }

    #[test]
    fn an_enormous_document_is_an_error_and_the_next_is_still_read() {
        let huge = format!(
            "big: \"{}\"\n---\napiVersion: v1\nkind: Pod\n",
            "x".repeat(MAX_DOCUMENT_BYTES)
        );
        let read = read_stream(&huge);
        assert_eq!(read.len(), 2);
        let Err(broken) = &read[0] else {
            panic!("too big")
        };
        assert!(broken.error.message.contains("larger than 16 MiB"));
        assert!(matches!(&read[1], Ok(d) if d.number == 2));
    }

    #[test]
    fn byte_order_mark_is_skipped_and_offsets_stay_true() {
        let text = "\u{feff}apiVersion: v1\nkind: Pod\n";
        let docs = documents(text);
        assert_eq!(
            docs[0].root.to_json(),
            json!({"apiVersion": "v1", "kind": "Pod"})
        );
        let kind = docs[0].root.entry("kind").unwrap();
        assert_eq!(&text[kind.key_span.start..kind.key_span.end], "kind");
    }

    #[test]
    fn one_document_or_none() {
        assert_eq!(read_one("").unwrap(), None);
        assert_eq!(read_one("---\n~\n---\n").unwrap(), None);
        let one = read_one("---\na: 1\n---\n").unwrap().unwrap();
        assert_eq!(one.to_json(), json!({"a": 1}));
        let e = read_one("a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!(e.at.line, 3);
        assert_eq!(
            read_one("{\"a\": [1]}").unwrap().unwrap().to_json(),
            json!({"a": [1]})
        );
    }
}
