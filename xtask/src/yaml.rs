//! YAML in and out through saphyr, the workspace's one YAML reader: a
//! document read as JSON values, and JSON values written as block YAML.

use std::borrow::Cow;

use saphyr::{LoadableYamlNode, Mapping, Scalar, Yaml, YamlEmitter};
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// The single document of `text` as JSON; an empty text is `null`.
pub fn parse(what: &str, text: &str) -> Result<Value> {
    let documents = Yaml::load_from_str(text).map_err(|e| document_error(what, e.to_string()))?;
    match documents.as_slice() {
        [] => Ok(Value::Null),
        [document] => to_json(what, document),
        _ => Err(document_error(
            what,
            "one YAML document expected, found several",
        )),
    }
}

/// Reads a YAML file as JSON.
pub fn read(path: &std::path::Path) -> Result<Value> {
    parse(&path.display().to_string(), &crate::error::read_text(path)?)
}

fn document_error(what: &str, message: impl Into<String>) -> Error {
    Error::Document {
        what: what.to_owned(),
        message: message.into(),
    }
}

fn to_json(what: &str, node: &Yaml) -> Result<Value> {
    Ok(match node {
        Yaml::Value(scalar) => scalar_to_json(scalar),
        Yaml::Sequence(items) => Value::Array(
            items
                .iter()
                .map(|item| to_json(what, item))
                .collect::<Result<_>>()?,
        ),
        Yaml::Mapping(mapping) => Value::Object(mapping_to_json(what, mapping)?),
        Yaml::Tagged(_, inner) => to_json(what, inner)?,
        Yaml::Representation(text, _, _) => Value::String(text.to_string()),
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(document_error(what, "an unresolved alias or a bad scalar"))
        }
    })
}

fn scalar_to_json(scalar: &Scalar) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::from(*i),
        Scalar::FloatingPoint(f) => {
            Number::from_f64(f.into_inner()).map_or(Value::Null, Value::Number)
        }
        Scalar::String(s) => Value::String(s.to_string()),
    }
}

fn mapping_to_json(what: &str, mapping: &Mapping) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    for (key, value) in mapping {
        let key = match to_json(what, key)? {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                return Err(document_error(
                    what,
                    format!("a mapping key {other} is not a scalar"),
                ))
            }
        };
        map.insert(key, to_json(what, value)?);
    }
    Ok(map)
}

/// A YAML node to write, its mappings in the order given (JSON objects are
/// sorted by key; kwctl's files are not).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A JSON scalar (null, boolean, number, string).
    Scalar(Value),
    /// A block sequence.
    List(Vec<Node>),
    /// A block mapping, in this order.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// A string scalar.
    pub fn text(value: impl Into<String>) -> Node {
        Node::Scalar(Value::String(value.into()))
    }

    /// A mapping from `(key, node)` pairs, in their order.
    pub fn map<const N: usize>(entries: [(&str, Node); N]) -> Node {
        Node::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    }
}

impl From<&Value> for Node {
    fn from(value: &Value) -> Node {
        match value {
            Value::Array(items) => Node::List(items.iter().map(Node::from).collect()),
            Value::Object(map) => Node::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::from(v)))
                    .collect(),
            ),
            scalar => Node::Scalar(scalar.clone()),
        }
    }
}

/// `node` as block YAML (multi-line strings as literal blocks), without the
/// `---` document marker, ending in a newline.
pub fn to_text(node: &Node) -> Result<String> {
    let node = to_yaml(node);
    let mut out = String::new();
    let mut emitter = YamlEmitter::new(&mut out);
    emitter.multiline(true);
    emitter
        .dump(&node)
        .map_err(|e| document_error("YAML output", format!("{e:?}")))?;
    let body = out.strip_prefix("---\n").unwrap_or(&out);
    Ok(format!("{}\n", body.trim_end_matches('\n')))
}

fn to_yaml(node: &Node) -> Yaml<'static> {
    match node {
        Node::Scalar(scalar) => Yaml::Value(scalar_of(scalar)),
        Node::List(items) => Yaml::Sequence(items.iter().map(to_yaml).collect()),
        Node::Map(entries) => Yaml::Mapping(
            entries
                .iter()
                .map(|(k, v)| {
                    (
                        Yaml::Value(Scalar::String(Cow::Owned(k.clone()))),
                        to_yaml(v),
                    )
                })
                .collect(),
        ),
    }
}

fn scalar_of(value: &Value) -> Scalar<'static> {
    match value {
        Value::Bool(b) => Scalar::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Scalar::Integer(i),
            None => Scalar::FloatingPoint(n.as_f64().unwrap_or(f64::NAN).into()),
        },
        Value::String(s) => Scalar::String(Cow::Owned(s.clone())),
        Value::Null | Value::Array(_) | Value::Object(_) => Scalar::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_types_and_order() {
        let value = json!({
            "b": "true", "a": true, "n": 3, "f": 1.5, "z": null,
            "list": ["x", {"k": "multi\nline\n"}], "empty": "", "colon": "a: b"
        });
        let text = to_text(&Node::from(&value)).unwrap();
        assert!(!text.starts_with("---"), "{text}");
        assert_eq!(parse("t", &text).unwrap(), value, "{text}");
    }

    #[test]
    fn mappings_keep_the_order_given() {
        let node = Node::map([
            ("version", Node::text("1")),
            ("name", Node::text("p")),
            ("a", Node::text("x")),
        ]);
        let text = to_text(&node).unwrap();
        let keys: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(keys, ["version", "name", "a"], "{text}");
    }

    #[test]
    fn bad_documents_are_named() {
        let err = parse("metadata.yml", "a: [").unwrap_err().to_string();
        assert!(err.starts_with("metadata.yml: "), "{err}");
        let err = parse("two.yml", "a: 1\n---\nb: 2\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("several"), "{err}");
        assert_eq!(parse("empty.yml", "").unwrap(), Value::Null);
    }
}
