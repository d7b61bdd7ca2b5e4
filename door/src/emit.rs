//! Writing nodes back as text: block YAML in the layout `kubectl get -o
//! yaml` uses, and indented JSON, both in the nodes' order. A string is
//! written plain only when every common reader (kubectl's YAML 1.1 reader,
//! YAML 1.2 readers) reads it back as the same string.

use serde_json::Value;

use crate::node::{Data, Entry, Node};
use crate::scalar::resolve_plain;

/// The node as a YAML document.
pub fn to_yaml(node: &Node) -> String {
    let mut out = String::new();
    match &node.data {
        Data::Map(entries) if !entries.is_empty() => write_map(&mut out, entries, 0, false),
        Data::Seq(items) if !items.is_empty() => write_seq(&mut out, items, 0, false),
        other => {
            out.push_str(&inline(other).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

/// A JSON value as a YAML document (keys in JSON's order).
pub fn value_to_yaml(value: &Value) -> String {
    to_yaml(&Node::from_json(value))
}

/// The node as indented JSON (two spaces), keys in the node's order.
pub fn to_json_text(node: &Node) -> String {
    let mut out = String::new();
    write_json(&mut out, node, 0);
    out.push('\n');
    out
}

/// `value` arranged like `template`: mapping keys in the template's order,
/// new keys after them, so rewriting a document does not reorder it.
pub fn ordered_like(template: Option<&Node>, value: &Value) -> Node {
    match value {
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            if let Some(Node {
                data: Data::Map(written),
                ..
            }) = template
            {
                for entry in written {
                    if let Some(v) = map.get(&entry.key) {
                        entries.push(entry_of(&entry.key, ordered_like(Some(&entry.value), v)));
                    }
                }
            }
            for (key, v) in map {
                if !entries.iter().any(|e: &Entry| e.key == *key) {
                    entries.push(entry_of(key, ordered_like(None, v)));
                }
            }
            Node::detached(Data::Map(entries))
        }
        Value::Array(items) => {
            let written = match template {
                Some(Node {
                    data: Data::Seq(written),
                    ..
                }) => written.as_slice(),
                _ => &[],
            };
            let items = items
                .iter()
                .enumerate()
                .map(|(i, v)| ordered_like(written.get(i), v))
                .collect();
            Node::detached(Data::Seq(items))
        }
        other => Node::from_json(other),
    }
}

fn entry_of(key: &str, value: Node) -> Entry {
    Entry {
        key: key.to_string(),
        key_span: crate::node::Span::default(),
        value,
    }
}

/// A scalar or an empty collection on one line; `None` for the others.
fn inline(data: &Data) -> Option<String> {
    Some(match data {
        Data::Null => "null".to_string(),
        Data::Bool(b) => b.to_string(),
        Data::Int(i) => i.to_string(),
        Data::Uint(u) => u.to_string(),
        Data::Float(f) if f.is_nan() => ".nan".to_string(),
        Data::Float(f) if f.is_infinite() => (if *f > 0.0 { ".inf" } else { "-.inf" }).to_string(),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.1}"),
        Data::Float(f) => f.to_string(),
        Data::Str(s) => scalar(s),
        Data::Seq(items) if items.is_empty() => "[]".to_string(),
        Data::Map(entries) if entries.is_empty() => "{}".to_string(),
        _ => return None,
    })
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn write_map(out: &mut String, entries: &[Entry], indent: usize, first_inline: bool) {
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push_str(&scalar(&entry.key));
        out.push(':');
        match (&entry.value.data, inline(&entry.value.data)) {
            (_, Some(text)) => {
                out.push(' ');
                out.push_str(&text);
                out.push('\n');
            }
            (Data::Seq(items), None) => {
                out.push('\n');
                write_seq(out, items, indent, false);
            }
            (Data::Map(inner), None) => {
                out.push('\n');
                write_map(out, inner, indent + 2, false);
            }
            _ => out.push('\n'),
        }
    }
}

fn write_seq(out: &mut String, items: &[Node], indent: usize, first_inline: bool) {
    for (i, node) in items.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push('-');
        match (&node.data, inline(&node.data)) {
            (_, Some(text)) => {
                out.push(' ');
                out.push_str(&text);
                out.push('\n');
            }
            (Data::Map(entries), None) => {
                out.push(' ');
                write_map(out, entries, indent + 2, true);
            }
            (Data::Seq(inner), None) => {
                out.push(' ');
                write_seq(out, inner, indent + 2, true);
            }
            _ => out.push('\n'),
        }
    }
}

fn write_json(out: &mut String, node: &Node, indent: usize) {
    let json_string = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    match &node.data {
        Data::Map(entries) if !entries.is_empty() => {
            out.push_str("{\n");
            for (i, entry) in entries.iter().enumerate() {
                pad(out, indent + 2);
                out.push_str(&json_string(&entry.key));
                out.push_str(": ");
                write_json(out, &entry.value, indent + 2);
                out.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
            }
            pad(out, indent);
            out.push('}');
        }
        Data::Seq(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                pad(out, indent + 2);
                write_json(out, item, indent + 2);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            pad(out, indent);
            out.push(']');
        }
        _ => out.push_str(&node.to_json().to_string()),
    }
}

/// A string plain when that is unambiguous, else double-quoted (JSON
/// string syntax is valid YAML).
pub fn scalar(s: &str) -> String {
    if needs_quotes(s) {
        serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
    } else {
        s.to_string()
    }
}

fn needs_quotes(s: &str) -> bool {
    const INDICATORS: &str = "-?:,[]{}#&*!|>'\"%@`";
    let Some(first) = s.chars().next() else {
        return true;
    };
    let last = s.chars().last().unwrap_or(first);
    let syntax = INDICATORS.contains(first)
        || first.is_whitespace()
        || last.is_whitespace()
        || last == ':'
        || s.contains(": ")
        || s.contains(" #")
        || s.chars().any(|c| c.is_control());
    // What kubectl's reader (YAML 1.1) would take for something else; that
    // covers YAML 1.2's numbers and words too. Sexagesimal numbers and
    // dates are text to kubectl but not to every YAML 1.1 reader.
    syntax
        || resolve_plain(s) != Data::Str(s.to_string())
        || sexagesimal_or_date(s)
        || matches!(
            s.to_ascii_lowercase().as_str(),
            "yes" | "no" | "on" | "off" | "y" | "n" | "true" | "false" | "null" | "~"
        )
}

fn sexagesimal_or_date(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let starts_with_digit = body.starts_with(|c: char| c.is_ascii_digit());
    let colons = body.contains(':')
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | '_'));
    let date = body.len() >= 8
        && body
            .get(..4)
            .is_some_and(|y| y.bytes().all(|b| b.is_ascii_digit()))
        && body.get(4..5) == Some("-");
    starts_with_digit && (colons || date)
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_one;
    use serde_json::json;

    fn round_trip(value: Value) -> String {
        let yaml = value_to_yaml(&value);
        let back = read_one(&yaml)
            .unwrap()
            .map(|n| n.to_json())
            .unwrap_or_default();
        assert_eq!(back, value, "{yaml}");
        yaml
    }

    #[test]
    fn kubectl_layout() {
        let yaml = round_trip(
            json!({"spec": {"containers": [{"image": "nginx", "name": "web"}],
            "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": []}}),
        );
        assert_eq!(
            yaml,
            "spec:\n  containers:\n  - image: nginx\n    name: web\n  nodeSelector:\n    kubernetes.io/os: windows\n  tolerations: []\n"
        );
    }

    #[test]
    fn quotes_only_what_could_be_read_otherwise() {
        let yaml = round_trip(json!({"build": "10.0.17763", "yes": "no", "port": "8080",
            "octal": "0644", "y": "n", "empty": "", "colon": "a: b", "hash": "a #b", "star": "*",
            "nl": "a\nb", "time": "1:20", "date": "2024-01-31", "n": 1, "f": 2.5, "b": false,
            "z": null, "nested": [[1, 2], {}]}));
        for line in [
            "build: 10.0.17763",
            "\"yes\": \"no\"",
            "port: \"8080\"",
            "octal: \"0644\"",
            "\"y\": \"n\"",
            "time: \"1:20\"",
            "date: \"2024-01-31\"",
            "f: 2.5",
        ] {
            assert!(yaml.contains(line), "{line} in {yaml}");
        }
        round_trip(json!([
            "- a",
            "plain text",
            "key: x",
            " lead",
            "~",
            "0x1F",
            "1e3",
            "On",
            ".inf"
        ]));
        round_trip(json!("scalar"));
    }

    #[test]
    fn keeps_written_order_and_writes_ordered_json() {
        let doc = read_one("b: 1\na:\n  z: 1\n  w: [2]\n").unwrap().unwrap();
        assert_eq!(to_yaml(&doc), "b: 1\na:\n  z: 1\n  w:\n  - 2\n");
        let value = json!({"a": {"w": [2], "z": 1, "new": true}, "b": 1});
        let ordered = ordered_like(Some(&doc), &value);
        assert_eq!(
            to_json_text(&ordered),
            "{\n  \"b\": 1,\n  \"a\": {\n    \"z\": 1,\n    \"w\": [\n      2\n    ],\n    \"new\": true\n  }\n}\n"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&to_json_text(&ordered)).unwrap(),
            value
        );
    }
}
