//! A document as a tree that remembers where each node and each mapping
//! key is written, so a field path or a JSON Pointer can be mapped back to
//! a line and column of the input, and text can be edited in place.

use serde::Serialize;
use serde_json::{Map, Number, Value};

use crate::path::{pointer_tokens, segments};

/// A place in the input text: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Where a node is written: byte offsets into the whole input, and the
/// position of its first character.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset after the last character (for a block collection: after
    /// its last child).
    pub end: usize,
    /// Line and column of `start`.
    pub at: Position,
}

/// One node of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where it is written. For a copy (an alias, or entries taken in by a
    /// merge key) that is where the original is written.
    pub span: Span,
    /// Its value.
    pub data: Data,
    /// Written in flow style (`{...}`, `[...]`).
    pub flow: bool,
    /// A copy of a node written elsewhere: an alias, or an entry a merge
    /// key took in. Text at its span is not its own to edit.
    pub copied: bool,
}

/// The value of a node, as kubectl's YAML reader resolves it.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// `null`, `~` or nothing.
    Null,
    /// `true`, `false`, and YAML 1.1's `yes`, `on`, `no`, `off`, ...
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    Uint(u64),
    /// A number with a fraction or out of integer range (integral values
    /// are [`Data::Int`], as Go's JSON encoding writes them).
    Float(f64),
    /// Text.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, entries in written order (merged entries where the merge
    /// key is).
    Map(Vec<Entry>),
}

/// One entry of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key as JSON has it (YAML keys that are numbers or booleans
    /// become their text, as kubectl converts them).
    pub key: String,
    /// Where the key is written.
    pub key_span: Span,
    /// The value.
    pub value: Node,
}

impl Node {
    /// A node with no place in the text, e.g. for what the policy adds.
    pub fn detached(data: Data) -> Node {
        Node {
            span: Span::default(),
            data,
            flow: false,
            copied: false,
        }
    }

    /// The JSON value of a detached tree.
    pub fn from_json(value: &Value) -> Node {
        let data = match value {
            Value::Null => Data::Null,
            Value::Bool(b) => Data::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Data::Int(i),
                (None, Some(u)) => Data::Uint(u),
                _ => Data::Float(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => Data::Str(s.clone()),
            Value::Array(items) => Data::Seq(items.iter().map(Node::from_json).collect()),
            Value::Object(map) => Data::Map(
                map.iter()
                    .map(|(k, v)| Entry {
                        key: k.clone(),
                        key_span: Span::default(),
                        value: Node::from_json(v),
                    })
                    .collect(),
            ),
        };
        Node::detached(data)
    }

    /// The node as JSON.
    pub fn to_json(&self) -> Value {
        match &self.data {
            Data::Null => Value::Null,
            Data::Bool(b) => Value::Bool(*b),
            Data::Int(i) => Value::from(*i),
            Data::Uint(u) => Value::from(*u),
            // Non-finite floats never get here: the reader refuses them.
            Data::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Data::Str(s) => Value::String(s.clone()),
            Data::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Data::Map(entries) => {
                let mut map = Map::new();
                for entry in entries {
                    map.insert(entry.key.clone(), entry.value.to_json());
                }
                Value::Object(map)
            }
        }
    }

    /// The value of `key`, when this is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// The entry of `key`, when this is a mapping that has it.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.data {
            Data::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The text of `key`, when it holds a string.
    pub fn text(&self, key: &str) -> Option<&str> {
        match &self.get(key)?.data {
            Data::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The node at an RFC 6901 JSON Pointer (`""` is this node).
    pub fn at_pointer(&self, pointer: &str) -> Option<&Node> {
        pointer_tokens(pointer)
            .iter()
            .try_fold(self, |node, token| node.child(token))
    }

    /// The nodes from this one down to the one at `pointer`, or None when
    /// it does not exist.
    pub fn path_to(&self, pointer: &str) -> Option<Vec<&Node>> {
        let mut nodes = vec![self];
        let mut current = self;
        for token in pointer_tokens(pointer) {
            current = current.child(&token)?;
            nodes.push(current);
        }
        Some(nodes)
    }

    /// A mapping entry's value or a sequence item, by JSON Pointer token.
    pub fn child(&self, token: &str) -> Option<&Node> {
        match &self.data {
            Data::Map(_) => self.get(token),
            Data::Seq(items) => items.get(token.parse::<usize>().ok()?),
            _ => None,
        }
    }

    /// Where a field path such as `spec.containers[0].image` or
    /// `spec.nodeSelector[kubernetes.io/os]` is written: the key of a
    /// mapping entry, the start of a sequence item. A path that goes beyond
    /// the text (a field to add) points at the deepest part written.
    pub fn locate(&self, path: &str) -> Position {
        let mut current = self;
        let mut at = self.span.at;
        for segment in segments(path) {
            let next = match (&current.data, segment.parse::<usize>()) {
                (Data::Seq(items), Ok(i)) => items.get(i).map(|n| (n.span.at, n)),
                (Data::Map(entries), _) => entries
                    .iter()
                    .find(|e| e.key == segment)
                    .map(|e| (e.key_span.at, &e.value)),
                _ => None,
            };
            match next {
                Some((position, node)) => {
                    at = position;
                    current = node;
                }
                None => break,
            }
        }
        at
    }

    /// Applies one RFC 6902 `add` at a JSON Pointer; false when its parent
    /// is missing. New mapping keys go last, keeping the written order.
    pub fn add(&mut self, pointer: &str, value: &Value) -> bool {
        let tokens = pointer_tokens(pointer);
        let Some((last, parents)) = tokens.split_last() else {
            *self = Node::from_json(value);
            return true;
        };
        let mut current = self;
        for token in parents {
            let next = match &mut current.data {
                Data::Map(entries) => entries
                    .iter_mut()
                    .find(|e| e.key == *token)
                    .map(|e| &mut e.value),
                Data::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
                _ => None,
            };
            match next {
                Some(node) => current = node,
                None => return false,
            }
        }
        insert(current, last, Node::from_json(value))
    }

    /// Where the node's own text begins: the first key of a block mapping.
    pub fn content_start(&self) -> usize {
        match &self.data {
            Data::Map(entries) if !self.flow => entries
                .first()
                .map_or(self.span.start, |e| e.key_span.start),
            _ => self.span.start,
        }
    }
}

fn insert(parent: &mut Node, token: &str, node: Node) -> bool {
    match &mut parent.data {
        Data::Map(entries) => {
            match entries.iter_mut().find(|e| e.key == token) {
                Some(entry) => entry.value = node,
                None => entries.push(Entry {
                    key: token.to_string(),
                    key_span: Span::default(),
                    value: node,
                }),
            }
            true
        }
        Data::Seq(items) if token == "-" => {
            items.push(node);
            true
        }
        Data::Seq(items) => match token.parse::<usize>() {
            Ok(i) if i <= items.len() => {
                items.insert(i, node);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_one;
    use serde_json::json;

    const POD: &str = "apiVersion: v1\nkind: Pod\nspec:\n  nodeSelector:\n    kubernetes.io/os: windows\n  containers:\n  - name: a\n    image: x\n  - name: b\n    image: z\n";

    #[test]
    fn locates_keys_items_and_missing_fields() {
        let doc = read_one(POD).unwrap().unwrap();
        let at = |line, column| Position { line, column };
        assert_eq!(doc.locate("spec.nodeSelector[kubernetes.io/os]"), at(5, 5));
        assert_eq!(doc.locate("spec.containers[1].image"), at(10, 5));
        assert_eq!(doc.locate("spec.containers[1]"), at(9, 5));
        // Missing: the deepest existing part.
        assert_eq!(doc.locate("spec.tolerations"), at(3, 1));
        assert_eq!(doc.locate("kind"), at(2, 1));
    }

    #[test]
    fn adds_in_written_order_and_finds_pointers() {
        let mut doc = read_one(POD).unwrap().unwrap();
        assert_eq!(
            doc.at_pointer("/spec/containers/1/image")
                .map(Node::to_json),
            Some(json!("z"))
        );
        assert!(doc.add(
            "/spec/nodeSelector/node.kubernetes.io~1windows-build",
            &json!("10.0.17763")
        ));
        assert!(doc.add("/spec/tolerations", &json!([])));
        assert!(doc.add("/spec/tolerations/-", &json!({"key": "os"})));
        assert!(!doc.add("/spec/missing/x", &json!(1)));
        let Data::Map(spec) = &doc.get("spec").unwrap().data else {
            panic!()
        };
        let keys: Vec<&str> = spec.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["nodeSelector", "containers", "tolerations"]);
        assert_eq!(doc.to_json()["spec"]["tolerations"], json!([{"key": "os"}]));
    }

    #[test]
    fn json_round_trips_through_a_detached_tree() {
        let value = json!({"a": [1, -2, 18446744073709551615u64, 1.5, "x", null, true], "b": {}});
        assert_eq!(Node::from_json(&value).to_json(), value);
    }
}
