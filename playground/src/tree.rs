//! YAML (or JSON) text as an ordered tree that remembers where each node
//! and each mapping key starts, so a field path can point at a line.

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use serde_json::{Map, Number, Value};

/// Deeper input is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

/// A position in the input text: 1-based line and column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// A problem with the input text itself, at a position.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TextError {
    pub message: String,
    #[serde(flatten)]
    pub at: Position,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub at: Position,
    pub value: Val,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order; the position is the key's.
    Map(Vec<(String, Position, Node)>),
}

/// Parses every document of a YAML stream; JSON is YAML too.
pub fn parse_documents(text: &str) -> Result<Vec<Node>, TextError> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| TextError {
        message: e.info().to_string(),
        at: Position {
            line: e.marker().line(),
            column: e.marker().col() + 1,
        },
    })?;
    docs.iter().map(|d| convert(d, 0)).collect()
}

fn position(node: &MarkedYaml<'_>) -> Position {
    Position {
        line: node.span.start.line(),
        column: node.span.start.col() + 1,
    }
}

fn convert(node: &MarkedYaml<'_>, depth: usize) -> Result<Node, TextError> {
    let at = position(node);
    let fail = |message: &str| TextError {
        message: message.to_string(),
        at,
    };
    if depth > MAX_DEPTH {
        return Err(fail("nested too deeply"));
    }
    let value = match &node.data {
        YamlData::Value(scalar) => scalar_val(scalar),
        YamlData::Representation(text, _, _) => Val::Str(text.to_string()),
        YamlData::Sequence(items) => Val::Seq(
            items
                .iter()
                .map(|i| convert(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        YamlData::Mapping(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key = key_text(k).ok_or_else(|| fail("mapping keys must be scalars"))?;
                out.push((key, position(k), convert(v, depth + 1)?));
            }
            Val::Map(out)
        }
        YamlData::Tagged(_, inner) => return convert(inner, depth + 1),
        YamlData::Alias(_) => return Err(fail("unresolved alias")),
        YamlData::BadValue => return Err(fail("value does not match its tag")),
    };
    Ok(Node { at, value })
}

fn scalar_val(scalar: &Scalar<'_>) -> Val {
    match scalar {
        Scalar::Null => Val::Null,
        Scalar::Boolean(b) => Val::Bool(*b),
        Scalar::Integer(i) => Val::Int(*i),
        Scalar::FloatingPoint(f) => Val::Float(f.into_inner()),
        Scalar::String(s) => Val::Str(s.to_string()),
    }
}

/// Keys become strings, as Kubernetes' YAML-to-JSON conversion does.
fn key_text(key: &MarkedYaml<'_>) -> Option<String> {
    match &key.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Null) => Some("null".to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        YamlData::Representation(text, _, _) => Some(text.to_string()),
        YamlData::Tagged(_, inner) => key_text(inner),
        _ => None,
    }
}

impl Node {
    /// A node with no position, for values the policy adds.
    pub fn from_json(value: &Value) -> Node {
        let value = match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => Val::Str(s.clone()),
            Value::Array(items) => Val::Seq(items.iter().map(Node::from_json).collect()),
            Value::Object(map) => Val::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Position::default(), Node::from_json(v)))
                    .collect(),
            ),
        };
        Node {
            at: Position::default(),
            value,
        }
    }

    pub fn to_json(&self) -> Value {
        match &self.value {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::from(*i),
            // JSON has no NaN or infinity: keep what was written.
            Val::Float(f) => {
                Number::from_f64(*f).map_or_else(|| Value::from(f.to_string()), Value::Number)
            }
            Val::Str(s) => Value::String(s.clone()),
            Val::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Val::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, _, v)| (k.clone(), v.to_json()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Val::Map(entries) => entries.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }

    /// Where a field path such as `spec.containers[0].image` or
    /// `spec.nodeSelector[kubernetes.io/os]` is written: the key of a map
    /// entry, the start of a list item. A path that goes beyond the text
    /// (a field to add) points at the deepest part that exists.
    pub fn locate(&self, path: &str) -> Position {
        let mut current = self;
        let mut at = self.at;
        for segment in segments(path) {
            let next = match (&current.value, segment.parse::<usize>()) {
                (Val::Seq(items), Ok(i)) => items.get(i).map(|n| (n.at, n)),
                (Val::Map(entries), _) => entries
                    .iter()
                    .find(|(k, _, _)| *k == segment)
                    .map(|(_, key_at, v)| (*key_at, v)),
                _ => None,
            };
            match next {
                Some((pos, node)) => {
                    at = pos;
                    current = node;
                }
                None => break,
            }
        }
        at
    }

    /// Applies one RFC 6902 `add` at a JSON Pointer; false when its parent
    /// is missing. New map keys go last, keeping the written order.
    pub fn add(&mut self, pointer: &str, value: &Value) -> bool {
        let tokens: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let Some((last, parents)) = tokens.split_last() else {
            *self = Node::from_json(value);
            return true;
        };
        let mut current = self;
        for token in parents {
            let next = match &mut current.value {
                Val::Map(entries) => entries
                    .iter_mut()
                    .find(|(k, _, _)| k == token)
                    .map(|(_, _, v)| v),
                Val::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
                _ => None,
            };
            match next {
                Some(node) => current = node,
                None => return false,
            }
        }
        insert(current, last, Node::from_json(value))
    }
}

fn insert(parent: &mut Node, token: &str, node: Node) -> bool {
    match &mut parent.value {
        Val::Map(entries) => {
            match entries.iter_mut().find(|(k, _, _)| k == token) {
                Some(entry) => entry.2 = node,
                None => entries.push((token.to_string(), Position::default(), node)),
            }
            true
        }
        Val::Seq(items) if token == "-" => {
            items.push(node);
            true
        }
        Val::Seq(items) => match token.parse::<usize>() {
            Ok(i) if i <= items.len() => {
                items.insert(i, node);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Splits a field path as the core renders it: `a.b[0][key/with.dots]`,
/// with keys that hold `]` or control characters written quoted.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = path.chars().peekable();
    let mut field = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => out.push(std::mem::take(&mut field)),
            '[' => {
                if !field.is_empty() {
                    out.push(std::mem::take(&mut field));
                }
                out.push(bracketed(&mut chars));
                // A `.` after `]` starts the next field.
                if chars.peek() == Some(&'.') {
                    chars.next();
                }
            }
            _ => field.push(c),
        }
    }
    if !field.is_empty() {
        out.push(field);
    }
    out
}

fn bracketed(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut key = String::new();
    if chars.peek() == Some(&'"') {
        let mut quoted = String::from("\"");
        chars.next();
        let mut escaped = false;
        for c in chars.by_ref() {
            quoted.push(c);
            if c == '"' && !escaped {
                break;
            }
            escaped = c == '\\' && !escaped;
        }
        chars.next(); // the closing ]
        return serde_json::from_str(&quoted).unwrap_or(quoted);
    }
    for c in chars.by_ref() {
        if c == ']' {
            break;
        }
        key.push(c);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: &str = "apiVersion: v1\nkind: Pod\nspec:\n  nodeSelector:\n    kubernetes.io/os: windows\n  containers:\n  - name: a\n    image: x\n  - name: b\n    image: y\n";

    #[test]
    fn converts_to_json_in_yaml_1_2() {
        let docs = parse_documents("a: 1\nb: \"10.0.17763\"\nc: yes\nd: ~\ne: 1.5\n").unwrap();
        assert_eq!(
            docs[0].to_json(),
            json!({"a": 1, "b": "10.0.17763", "c": "yes", "d": null, "e": 1.5})
        );
        let json_text = parse_documents("{\"kind\": \"Pod\", \"spec\": {}}").unwrap();
        assert_eq!(json_text[0].to_json(), json!({"kind": "Pod", "spec": {}}));
        assert_eq!(parse_documents("a: 1\n---\nb: 2\n").unwrap().len(), 2);
    }

    #[test]
    fn locates_keys_items_and_missing_fields() {
        let doc = &parse_documents(POD).unwrap()[0];
        assert_eq!(
            doc.locate("spec.nodeSelector[kubernetes.io/os]"),
            Position { line: 5, column: 5 }
        );
        assert_eq!(
            doc.locate("spec.containers[1].image"),
            Position {
                line: 10,
                column: 5
            }
        );
        assert_eq!(
            doc.locate("spec.containers[1]"),
            Position { line: 9, column: 5 }
        );
        // Missing: the deepest existing part.
        assert_eq!(
            doc.locate("spec.tolerations"),
            Position { line: 3, column: 1 }
        );
        assert_eq!(doc.locate("kind"), Position { line: 2, column: 1 });
    }

    #[test]
    fn splits_quoted_keys() {
        assert_eq!(segments("a.b[0].c"), ["a", "b", "0", "c"]);
        assert_eq!(segments("s.m[k.io/x]"), ["s", "m", "k.io/x"]);
        assert_eq!(segments("s.m[\"a]b\"].z"), ["s", "m", "a]b", "z"]);
    }

    #[test]
    fn adds_in_written_order() {
        let mut doc = parse_documents(POD).unwrap().remove(0);
        assert!(doc.add(
            "/spec/nodeSelector/node.kubernetes.io~1windows-build",
            &json!("10.0.17763")
        ));
        assert!(doc.add("/spec/tolerations", &json!([])));
        assert!(doc.add("/spec/tolerations/-", &json!({"key": "os"})));
        assert!(!doc.add("/spec/missing/x", &json!(1)));
        let Val::Map(spec) = &doc.get("spec").unwrap().value else {
            panic!()
        };
        let keys: Vec<&str> = spec.iter().map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(keys, ["nodeSelector", "containers", "tolerations"]);
        assert_eq!(doc.to_json()["spec"]["tolerations"], json!([{"key": "os"}]));
    }

    #[test]
    fn errors_have_positions_and_depth_is_bounded() {
        let e = parse_documents("a: 1\nb: [1, 2\n").unwrap_err();
        assert!(e.at.line >= 2, "{e:?}");
        let e = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.at.line, 2, "{e:?}");
        let deep = "[".repeat(1000) + &"]".repeat(1000);
        assert!(parse_documents(&deep).is_err());
    }
}
