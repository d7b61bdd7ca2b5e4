//! Block-style YAML for a [`Node`], in the layout `kubectl get -o yaml`
//! uses, quoting every string a YAML 1.1 or 1.2 reader could take for
//! something else.

use crate::tree::{Node, Val};

/// The node as a YAML document.
pub fn to_yaml(node: &Node) -> String {
    let mut out = String::new();
    match &node.value {
        Val::Map(entries) if !entries.is_empty() => write_map(&mut out, entries, 0, false),
        Val::Seq(items) if !items.is_empty() => write_seq(&mut out, items, 0, false),
        other => {
            out.push_str(&inline(other).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

/// A scalar or an empty collection on one line; `None` for the others.
fn inline(value: &Val) -> Option<String> {
    Some(match value {
        Val::Null => "null".to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Float(f) if f.is_nan() => ".nan".to_string(),
        Val::Float(f) if f.is_infinite() => (if *f > 0.0 { ".inf" } else { "-.inf" }).to_string(),
        Val::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.1}"),
        Val::Float(f) => f.to_string(),
        Val::Str(s) => string(s),
        Val::Seq(items) if items.is_empty() => "[]".to_string(),
        Val::Map(entries) if entries.is_empty() => "{}".to_string(),
        _ => return None,
    })
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn write_map(
    out: &mut String,
    entries: &[(String, crate::tree::Position, Node)],
    indent: usize,
    first_inline: bool,
) {
    for (i, (key, _, node)) in entries.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push_str(&string(key));
        out.push(':');
        match (&node.value, inline(&node.value)) {
            (_, Some(text)) => {
                out.push(' ');
                out.push_str(&text);
                out.push('\n');
            }
            (Val::Seq(items), None) => {
                out.push('\n');
                write_seq(out, items, indent, false);
            }
            (Val::Map(inner), None) => {
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
        match (&node.value, inline(&node.value)) {
            (_, Some(text)) => {
                out.push(' ');
                out.push_str(&text);
                out.push('\n');
            }
            (Val::Map(entries), None) => {
                out.push(' ');
                write_map(out, entries, indent + 2, true);
            }
            (Val::Seq(inner), None) => {
                out.push(' ');
                write_seq(out, inner, indent + 2, true);
            }
            _ => out.push('\n'),
        }
    }
}

/// A string plain when that is unambiguous, else double-quoted (JSON
/// string syntax is valid YAML).
fn string(s: &str) -> String {
    if needs_quotes(s) {
        serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
    } else {
        s.to_string()
    }
}

fn needs_quotes(s: &str) -> bool {
    const INDICATORS: &str = "-?:,[]{}#&*!|>'\"%@`";
    const RESERVED: &[&str] = &[
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n",
    ];
    let Some(first) = s.chars().next() else {
        return true;
    };
    let last = s.chars().last().unwrap_or(first);
    INDICATORS.contains(first)
        || first.is_whitespace()
        || last.is_whitespace()
        || last == ':'
        || s.contains(": ")
        || s.contains(" #")
        || s.chars().any(|c| c.is_control())
        || RESERVED.contains(&s.to_ascii_lowercase().as_str())
        || looks_numeric(s)
}

/// Anything a YAML 1.1 or 1.2 reader might read as a number, `10.0.17763`
/// and `1:20` included.
fn looks_numeric(s: &str) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    (first.is_ascii_digit() || matches!(first, '.' | '+' | '-'))
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || "._:+-xXoO".contains(c))
        || s.eq_ignore_ascii_case(".inf")
        || s.eq_ignore_ascii_case(".nan")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::parse_documents;
    use serde_json::json;

    fn round_trip(value: serde_json::Value) -> String {
        let yaml = to_yaml(&Node::from_json(&value));
        let back = parse_documents(&yaml).unwrap();
        assert_eq!(back[0].to_json(), value, "{yaml}");
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
    fn quotes_what_could_be_read_otherwise() {
        let yaml = round_trip(json!({"build": "10.0.17763", "yes": "no", "port": "8080",
            "empty": "", "colon": "a: b", "hash": "a #b", "star": "*", "nl": "a\nb",
            "n": 1, "f": 2.0, "b": false, "z": null, "nested": [[1, 2], {}]}));
        assert!(yaml.contains("build: \"10.0.17763\""), "{yaml}");
        assert!(yaml.contains("\"yes\": \"no\""), "{yaml}");
        assert!(yaml.contains("f: 2.0"), "{yaml}");
        round_trip(json!([
            "- a",
            "plain text",
            "key: x",
            " lead",
            "~",
            "0x1F",
            "1e3"
        ]));
        round_trip(json!("scalar"));
    }

    #[test]
    fn keeps_written_order() {
        let docs = parse_documents("b: 1\na:\n  z: 1\n  w: 2\n").unwrap();
        assert_eq!(to_yaml(&docs[0]), "b: 1\na:\n  z: 1\n  w: 2\n");
    }
}
