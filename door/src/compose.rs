//! One YAML document from saphyr's events to a [`Node`] tree, as kubectl's
//! reader (sigs.k8s.io/yaml over go-yaml v2) builds it: aliases resolved,
//! `<<` merge keys applied (explicit keys win, earlier maps of a merged list
//! win over later ones), YAML 1.1 scalars, keys as JSON text. Spans are
//! kept on every node and key. Expanding aliases is bounded, so a "billion
//! laughs" document is an input error, not an exhausted machine.

use std::collections::BTreeMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span as EventSpan, Tag};

use crate::error::TextError;
use crate::node::{Data, Entry, Node, Position, Span};
use crate::scalar::{key_text, resolve_plain};

/// Deeper documents are refused rather than risking the stack.
pub const MAX_DEPTH: usize = 200;

/// At most this many nodes may be copied by aliases in one document.
pub const MAX_COPIED_NODES: usize = 100_000;

/// Where a chunk of text sits in the whole input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    /// Byte offset of the chunk's first byte.
    pub byte: usize,
    /// Line number of the chunk's first line.
    pub line: usize,
}

/// The single document of `text` (a chunk of the input at `origin`), or
/// `None` when it holds none.
pub(crate) fn compose(text: &str, origin: Origin) -> Result<Option<Node>, TextError> {
    let mut composer = Composer::new(text, origin);
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| composer.error(*e.marker(), e.info()))?;
        composer.on_event(event, span)?;
    }
    Ok(composer.root)
}

/// A node being built: its start, anchor and children.
struct Frame {
    start: Span,
    anchor: usize,
    flow: bool,
    /// Where the last child written so far ends.
    last_end: Option<usize>,
    kind: FrameKind,
}

enum FrameKind {
    Seq(Vec<Node>),
    Map {
        entries: Vec<Entry>,
        /// The key read, waiting for its value.
        key: Option<Key>,
        /// `<<` values, with the entry index they are taken in at.
        merges: Vec<(usize, Node)>,
    },
}

enum Key {
    Named(String, Span),
    Merge,
}

struct Composer<'t> {
    offsets: Offsets<'t>,
    origin: Origin,
    stack: Vec<Frame>,
    anchors: BTreeMap<usize, (Node, usize)>,
    copied: usize,
    documents: usize,
    root: Option<Node>,
}

impl<'t> Composer<'t> {
    fn new(text: &'t str, origin: Origin) -> Composer<'t> {
        Composer {
            offsets: Offsets::new(text),
            origin,
            stack: Vec::new(),
            anchors: BTreeMap::new(),
            copied: 0,
            documents: 0,
            root: None,
        }
    }

    fn position(&self, marker: Marker) -> Position {
        Position {
            line: self.origin.line + marker.line().saturating_sub(1),
            column: marker.col() + 1,
        }
    }

    fn span(&mut self, span: EventSpan) -> Span {
        Span {
            start: self.origin.byte + self.offsets.byte(span.start.index()),
            end: self.origin.byte + self.offsets.byte(span.end.index()),
            at: self.position(span.start),
        }
    }

    fn error(&self, marker: Marker, message: &str) -> TextError {
        TextError {
            message: message.to_string(),
            at: self.position(marker),
        }
    }

    fn on_event(&mut self, event: Event<'_>, span: EventSpan) -> Result<(), TextError> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(self.error(
                        span.start,
                        "a second document follows `...` without a `---` line: start it with `---`",
                    ));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let merge_key = is_merge_key(&value, style, tag.as_deref());
                let data = self.scalar(&value, style, tag.as_deref(), span.start)?;
                let node = self.leaf(span, data);
                self.complete(node, anchor, merge_key, span.start)?;
            }
            Event::Alias(id) => {
                let mut node = self.alias(id, span.start)?;
                // The alias itself is what is written here.
                node.span = self.span(span);
                self.complete(node, 0, false, span.start)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.open(span, anchor, '[', FrameKind::Seq(Vec::new()))?
            }
            Event::MappingStart(anchor, _) => {
                let map = FrameKind::Map {
                    entries: Vec::new(),
                    key: None,
                    merges: Vec::new(),
                };
                self.open(span, anchor, '{', map)?;
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(span)?,
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        Ok(())
    }

    fn leaf(&mut self, span: EventSpan, data: Data) -> Node {
        Node {
            span: self.span(span),
            data,
            flow: false,
            copied: false,
        }
    }

    fn open(
        &mut self,
        span: EventSpan,
        anchor: usize,
        flow_mark: char,
        kind: FrameKind,
    ) -> Result<(), TextError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.error(
                span.start,
                &format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let start = self.span(span);
        let flow = self
            .offsets
            .opens_with(start.start - self.origin.byte, flow_mark);
        self.stack.push(Frame {
            start,
            anchor,
            flow,
            last_end: None,
            kind,
        });
        Ok(())
    }

    fn close(&mut self, span: EventSpan) -> Result<(), TextError> {
        let Some(frame) = self.stack.pop() else {
            return Err(self.error(span.start, "a collection ends that never started"));
        };
        let end_marker = self.span(span).end;
        let data = match frame.kind {
            FrameKind::Seq(items) => Data::Seq(items),
            FrameKind::Map {
                entries, merges, ..
            } => Data::Map(merged(entries, merges).map_err(|(at, message)| TextError {
                message: message.to_string(),
                at,
            })?),
        };
        // A block collection ends with its last child; its end event sits at
        // the next token, past any comments.
        let end = if frame.flow {
            end_marker
        } else {
            frame.last_end.unwrap_or(frame.start.start)
        };
        let node = Node {
            span: Span { end, ..frame.start },
            data,
            flow: frame.flow,
            copied: false,
        };
        self.complete(node, frame.anchor, false, span.start)
    }

    fn alias(&mut self, id: usize, at: Marker) -> Result<Node, TextError> {
        let Some((node, size)) = self.anchors.get(&id) else {
            return Err(self.error(at, "an alias to an anchor that is not defined before it"));
        };
        self.copied += size;
        if self.copied > MAX_COPIED_NODES {
            return Err(self.error(
                at,
                &format!("aliases expand to more than {MAX_COPIED_NODES} nodes: anchors nested this way multiply the document (a \"billion laughs\"); write the values out"),
            ));
        }
        let mut copy = node.clone();
        copy.copied = true;
        Ok(copy)
    }

    /// A finished node goes to its parent: an item, a key, or a value.
    fn complete(
        &mut self,
        node: Node,
        anchor: usize,
        merge_key: bool,
        at: Marker,
    ) -> Result<(), TextError> {
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), size(&node)));
        }
        let position = self.position(at);
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(node);
            return Ok(());
        };
        frame.last_end = Some(frame.last_end.unwrap_or(0).max(node.span.end));
        match &mut frame.kind {
            FrameKind::Seq(items) => items.push(node),
            FrameKind::Map {
                entries,
                key,
                merges,
            } => match key.take() {
                None if merge_key => *key = Some(Key::Merge),
                None => {
                    let text = key_text(&node.data).ok_or_else(|| TextError {
                        message: format!("a mapping key must be text, a number or a boolean, not {}: JSON has no other keys", describe(&node.data)),
                        at: position,
                    })?;
                    *key = Some(Key::Named(text, node.span));
                }
                Some(Key::Merge) => merges.push((entries.len(), node)),
                Some(Key::Named(name, key_span)) => {
                    if entries.iter().any(|e| e.key == name) {
                        return Err(TextError {
                            message: format!(
                                "key {name:?} is written twice in this mapping: keep one"
                            ),
                            at: key_span.at,
                        });
                    }
                    entries.push(Entry {
                        key: name,
                        key_span,
                        value: node,
                    });
                }
            },
        }
        Ok(())
    }

    /// The value of a scalar: its explicit core tag, else plain text
    /// resolved as go-yaml v2 does; quoted and block scalars are text.
    fn scalar(
        &self,
        value: &str,
        style: ScalarStyle,
        tag: Option<&Tag>,
        at: Marker,
    ) -> Result<Data, TextError> {
        let data = match tag {
            Some(tag) if tag.is_yaml_core_schema() => self.tagged(value, &tag.suffix, at)?,
            // Another tag: go-yaml leaves the text as it is.
            Some(_) => Data::Str(value.to_string()),
            None if style == ScalarStyle::Plain => resolve_plain(value),
            None => Data::Str(value.to_string()),
        };
        self.json_number(data, value, at)
    }

    /// `!!str`, `!!int`, ...: the text must resolve to what the tag says
    /// (go-yaml: "cannot decode !!str `x` as a !!int").
    fn tagged(&self, value: &str, suffix: &str, at: Marker) -> Result<Data, TextError> {
        let resolved = resolve_plain(value);
        let fits = match suffix {
            "null" => matches!(resolved, Data::Null),
            "bool" => matches!(resolved, Data::Bool(_)),
            "int" => matches!(resolved, Data::Int(_) | Data::Uint(_)),
            // go-yaml takes an integer as a float here.
            "float" => matches!(resolved, Data::Float(_) | Data::Int(_)),
            "map" | "seq" => false,
            // `!!str`, `!!binary`, `!!timestamp`, `!!merge` and the rest: text.
            _ => return Ok(Data::Str(value.to_string())),
        };
        if fits {
            Ok(resolved)
        } else {
            Err(self.error(
                at,
                &format!("`!!{suffix} {value}`: the value is not a {suffix}"),
            ))
        }
    }

    /// As JSON writes numbers: an integral float is an integer; NaN and
    /// infinities have no JSON form (kubectl fails on them too).
    fn json_number(&self, data: Data, value: &str, at: Marker) -> Result<Data, TextError> {
        match data {
            Data::Float(f) if !f.is_finite() => Err(self.error(
                at,
                &format!("{value} is not a number JSON can hold: quote it to mean the text"),
            )),
            Data::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Data::Int(f as i64)),
            other => Ok(other),
        }
    }
}

fn is_merge_key(value: &str, style: ScalarStyle, tag: Option<&Tag>) -> bool {
    value == "<<"
        && match tag {
            None => style == ScalarStyle::Plain,
            Some(tag) => tag.is_yaml_core_schema() && tag.suffix == "merge",
        }
}

/// The entries with those of the merge keys taken in where each `<<` is:
/// a key written in the mapping wins, and of the merged mappings the
/// earlier wins (the YAML merge key spec; go-yaml v2).
fn merged(
    entries: Vec<Entry>,
    merges: Vec<(usize, Node)>,
) -> Result<Vec<Entry>, (Position, &'static str)> {
    if merges.is_empty() {
        return Ok(entries);
    }
    let mut taken: Vec<(usize, Entry)> = Vec::new();
    for (index, value) in merges {
        for source in merge_sources(&value)? {
            for entry in source {
                let known = entries.iter().any(|e| e.key == entry.key)
                    || taken.iter().any(|(_, e)| e.key == entry.key);
                if known {
                    continue;
                }
                let mut entry = entry.clone();
                entry.value.copied = true;
                taken.push((index, entry));
            }
        }
    }
    let mut out = Vec::with_capacity(entries.len() + taken.len());
    let mut taken = taken.into_iter().peekable();
    for (i, entry) in entries.into_iter().enumerate() {
        while let Some((_, merged)) = taken.next_if(|(at, _)| *at <= i) {
            out.push(merged);
        }
        out.push(entry);
    }
    out.extend(taken.map(|(_, e)| e));
    Ok(out)
}

/// The mappings a `<<` value names: one mapping, or a list of them.
fn merge_sources(value: &Node) -> Result<Vec<&Vec<Entry>>, (Position, &'static str)> {
    const WANT: &str = "a merge key (<<) takes a mapping or a list of mappings";
    match &value.data {
        Data::Map(entries) => Ok(vec![entries]),
        Data::Seq(items) => items
            .iter()
            .map(|item| match &item.data {
                Data::Map(entries) => Ok(entries),
                _ => Err((item.span.at, WANT)),
            })
            .collect(),
        _ => Err((value.span.at, WANT)),
    }
}

fn size(node: &Node) -> usize {
    1 + match &node.data {
        Data::Seq(items) => items.iter().map(size).sum(),
        Data::Map(entries) => entries.iter().map(|e| 1 + size(&e.value)).sum(),
        _ => 0,
    }
}

fn describe(data: &Data) -> &'static str {
    match data {
        Data::Null => "null",
        Data::Uint(_) => "an integer above 9223372036854775807",
        Data::Seq(_) => "a list",
        Data::Map(_) => "a mapping",
        _ => "a scalar",
    }
}

/// Character indices (as saphyr counts) to byte offsets, walking forward:
/// events come in text order.
struct Offsets<'t> {
    text: &'t str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'t> Offsets<'t> {
    fn new(text: &'t str) -> Offsets<'t> {
        Offsets {
            text,
            ascii: text.is_ascii(),
            chars: 0,
            bytes: 0,
        }
    }

    fn byte(&mut self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.text.len());
        }
        if char_index < self.chars {
            self.chars = 0;
            self.bytes = 0;
        }
        let rest = self.text.get(self.bytes..).unwrap_or("");
        for c in rest.chars().take(char_index - self.chars) {
            self.bytes += c.len_utf8();
            self.chars += 1;
        }
        self.bytes
    }

    /// Whether the collection starting at `byte` opens with `mark` (`{` or
    /// `[`), after its anchor and tag, if any.
    fn opens_with(&self, byte: usize, mark: char) -> bool {
        let mut rest = self.text.get(byte..).unwrap_or("");
        while rest.starts_with(['&', '!']) {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            rest = rest.get(end..).unwrap_or("").trim_start();
        }
        rest.starts_with(mark)
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_of(text: &str) -> serde_json::Value {
        compose(text, Origin { byte: 0, line: 1 })
            .unwrap_or_else(|e| panic!("{e:?}"))
            .unwrap()
            .to_json()
    }

    fn error_of(text: &str) -> TextError {
        compose(text, Origin { byte: 0, line: 1 }).unwrap_err()
    }

    /// The YAML merge key spec (yaml.org/type/merge.html), its four examples.
    #[test]
    fn merge_keys_as_the_spec_examples() {
        // `y` would be a boolean key in YAML 1.1, as go-yaml reads it: `h`.
        let text = "- &CENTER { x: 1, h: 2 }\n- &LEFT { x: 0, h: 2 }\n- &BIG { r: 10 }\n- &SMALL { r: 1 }\n\
            - x: 1\n  h: 2\n  r: 10\n  label: center/big\n\
            - << : *CENTER\n  r: 10\n  label: center/big\n\
            - << : [ *CENTER, *BIG ]\n  label: center/big\n\
            - << : [ *BIG, *LEFT, *SMALL ]\n  x: 1\n  label: center/big\n";
        let value = json_of(text);
        let expected = json!({"x": 1, "h": 2, "r": 10, "label": "center/big"});
        for i in 4..8 {
            assert_eq!(value[i], expected, "example {}", i - 3);
        }
    }

    #[test]
    fn a_key_written_after_the_merge_wins_and_merged_entries_point_at_the_anchor() {
        let text = "base: &platform\n  kubernetes.io/os: windows\n  team: a\nspec:\n  nodeSelector:\n    <<: *platform\n    team: b\n";
        let root = compose(text, Origin { byte: 0, line: 1 }).unwrap().unwrap();
        assert_eq!(
            root.to_json()["spec"]["nodeSelector"],
            json!({"kubernetes.io/os": "windows", "team": "b"})
        );
        let selector = root.at_pointer("/spec/nodeSelector").unwrap();
        let os = selector.entry("kubernetes.io/os").unwrap();
        assert_eq!(os.key_span.at, Position { line: 2, column: 3 });
        assert!(os.value.copied);
        assert!(!selector.get("team").unwrap().copied);
    }

    #[test]
    fn a_merge_of_something_else_than_mappings_is_an_error() {
        let e = error_of("a: &x 1\nb:\n  <<: *x\n");
        assert!(e.message.contains("merge key"), "{e:?}");
        let e = error_of("b:\n  <<: [{a: 1}, 2]\n");
        assert_eq!(e.at.line, 2, "{e:?}");
    }

    #[test]
    fn aliases_copy_and_a_billion_laughs_is_refused() {
        assert_eq!(
            json_of("a: &x [1, 2]\nb: *x\n"),
            json!({"a": [1, 2], "b": [1, 2]})
        );
        let mut lol = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (name, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{prev}"); 9].join(",");
            lol.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let e = error_of(&lol);
        assert!(e.message.contains("billion laughs"), "{e:?}");
    }

    #[test]
    fn scalars_resolve_as_kubectl_reads_them() {
        let value = json_of(
            "a: yes\nb: \"yes\"\nc: 0644\nd: '0644'\ne: !!str 0644\nf: !!float 1\ng: 1.0\nh: 10.0.17763\ni: |-\n  on\nj: 1.5\n",
        );
        assert_eq!(
            value,
            json!({"a": true, "b": "yes", "c": 420, "d": "0644", "e": "0644", "f": 1, "g": 1,
                   "h": "10.0.17763", "i": "on", "j": 1.5})
        );
        assert!(error_of("a: !!int abc\n").message.contains("not a int"));
        assert!(error_of("a: .inf\n").message.contains("quote it"));
    }

    #[test]
    fn keys_become_text_and_duplicates_or_odd_keys_are_errors() {
        assert_eq!(
            json_of("1: a\ntrue: b\n1.5: c\n"),
            json!({"1": "a", "true": "b", "1.5": "c"})
        );
        let e = error_of("a: 1\nb: 2\na: 3\n");
        assert_eq!((e.at.line, e.at.column), (3, 1), "{e:?}");
        assert!(error_of("? [a]\n: 1\n").message.contains("a list"));
        assert!(error_of("~: 1\n").message.contains("null"));
    }

    #[test]
    fn spans_are_bytes_and_lines_of_the_whole_input() {
        let text = "é: {x: 1}\nb:\n  - c\n";
        let root = compose(text, Origin { byte: 100, line: 7 })
            .unwrap()
            .unwrap();
        let flow = root.get("é").unwrap();
        assert!(flow.flow);
        assert_eq!(flow.span.start, 100 + "é: ".len());
        assert_eq!(flow.span.at, Position { line: 7, column: 4 });
        let seq = root.get("b").unwrap();
        assert!(!seq.flow);
        assert_eq!(&text[seq.span.start - 100..seq.span.end - 100], "- c");
        assert_eq!(root.entry("b").unwrap().key_span.at.line, 8);
    }

    #[test]
    fn depth_is_bounded() {
        let block: String = (0..300).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert!(error_of(&block).message.contains("nested deeper than 200"));
        // saphyr's scanner has its own limit for flow collections.
        let flow = "[".repeat(1000) + &"]".repeat(1000);
        assert!(error_of(&flow).message.contains("recursion limit"));
    }

    #[test]
    fn two_documents_in_one_chunk_are_an_error() {
        assert!(error_of("a: 1\n...\nb: 2\n").message.contains("---"));
        assert_eq!(
            compose("# only a comment\n", Origin { byte: 0, line: 1 }).unwrap(),
            None
        );
    }
}
