//! Setting one top-level key of a settings text while keeping every other
//! byte (comments, order, quoting): the settings form writes through this,
//! so the form and the YAML stay two views of one value.

use os_placement_door::emit::to_yaml;
use os_placement_door::{read_one, Data, Entry, Node, Span, TextError};

/// Why a key could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetKeyError {
    /// The settings text does not read: fix it in the YAML view first.
    #[error("the settings YAML does not read ({0}): fix it in the YAML view first")]
    Settings(TextError),
    /// The new value is not JSON.
    #[error("the new value is not JSON: {0}")]
    Value(TextError),
}

impl SetKeyError {
    /// The underlying text problem.
    pub fn text_error(&self) -> &TextError {
        match self {
            SetKeyError::Settings(e) | SetKeyError::Value(e) => e,
        }
    }
}

/// `text` with top-level `key` set to `value` (JSON text; key order kept).
/// An entry written in the document is replaced where it stands; a new key
/// goes after the last one. A document that is not a block mapping written
/// in place (flow style, an alias) is written anew from its value.
pub fn set_key(text: &str, key: &str, value: &str) -> Result<String, SetKeyError> {
    let value = read_one(value)
        .map_err(SetKeyError::Value)?
        .unwrap_or_else(|| Node::detached(Data::Null));
    let root = read_one(text).map_err(SetKeyError::Settings)?;
    let entry_text = entry_yaml(key, value.clone());
    let Some(root) = root else {
        return Ok(append(text, &entry_text));
    };
    let in_place = match &root.data {
        Data::Map(entries) if !root.flow && !root.copied => {
            entries.iter().all(|e| !e.value.copied).then_some(entries)
        }
        _ => None,
    };
    let Some(entries) = in_place else {
        return Ok(rewritten(root, key, value));
    };
    let indent = " ".repeat(
        root.content_start()
            .saturating_sub(line_start(text, root.content_start())),
    );
    let entry_text = indented(&entry_text, &indent);
    let Some(entry) = entries.iter().find(|e| e.key == key) else {
        let end = trimmed_end(text, root.span.end);
        return Ok(splice(text, end, end, &format!("\n{indent}{entry_text}")));
    };
    let end = trimmed_end(text, entry.value.span.end.max(entry.key_span.end));
    Ok(splice(text, entry.key_span.start, end, &entry_text))
}

/// `key: value` as block YAML, without the final newline.
fn entry_yaml(key: &str, value: Node) -> String {
    let entry = Entry {
        key: key.to_string(),
        key_span: Span::default(),
        value,
    };
    let yaml = to_yaml(&Node::detached(Data::Map(vec![entry])));
    yaml.trim_end_matches('\n').to_string()
}

/// Every line after the first indented to the mapping's column.
fn indented(entry: &str, indent: &str) -> String {
    entry.replace('\n', &format!("\n{indent}"))
}

fn line_start(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |newline| newline + 1)
}

/// `end`, moved back over the line breaks a node's span may end with.
fn trimmed_end(text: &str, end: usize) -> usize {
    let before = text.get(..end).unwrap_or(text);
    before.trim_end_matches(['\n', '\r']).len()
}

fn splice(text: &str, start: usize, end: usize, with: &str) -> String {
    let head = text.get(..start).unwrap_or(text);
    let tail = text.get(end..).unwrap_or("");
    format!("{head}{with}{tail}")
}

/// After the text (empty, comments only, or `null`).
fn append(text: &str, entry: &str) -> String {
    let body = text.trim_end();
    let body = if body == "null" || body == "~" {
        ""
    } else {
        body
    };
    if body.is_empty() {
        format!("{entry}\n")
    } else {
        format!("{body}\n{entry}\n")
    }
}

/// The whole document written anew, with the key set.
fn rewritten(mut root: Node, key: &str, value: Node) -> String {
    match &mut root.data {
        Data::Map(entries) => match entries.iter_mut().find(|e| e.key == key) {
            Some(entry) => entry.value = value,
            None => entries.push(Entry {
                key: key.to_string(),
                key_span: Span::default(),
                value,
            }),
        },
        // Not a mapping: the settings become one (the reader says what was wrong).
        _ => {
            root = Node::detached(Data::Map(vec![Entry {
                key: key.to_string(),
                key_span: Span::default(),
                value,
            }]))
        }
    }
    to_yaml(&root)
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    const EKS: &str = "# EKS\nmutate: true   # add what is missing\nwindowsTaint:\n  key: os\n  value: windows\n  effect: NoSchedule\n\n# builds\npinWindowsBuild: true\n";

    #[test]
    fn a_key_is_replaced_where_it_stands_and_comments_stay() {
        let out = set_key(EKS, "mutate", "false").unwrap();
        assert_eq!(out, EKS.replace("mutate: true", "mutate: false"));
        let out = set_key(EKS, "windowsTaint", "null").unwrap();
        assert_eq!(
            out,
            "# EKS\nmutate: true   # add what is missing\nwindowsTaint: null\n\n# builds\npinWindowsBuild: true\n"
        );
        let out = set_key(
            EKS,
            "windowsTaint",
            r#"{"key": "os", "value": "win", "effect": "NoExecute"}"#,
        )
        .unwrap();
        assert!(
            out.contains("windowsTaint:\n  key: os\n  value: win\n  effect: NoExecute\n\n# builds"),
            "{out}"
        );
    }

    #[test]
    fn a_new_key_goes_after_the_last_one_in_written_order() {
        let out = set_key(
            EKS,
            "runtimeClasses",
            r#"[{"name": "w", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}}}]"#,
        )
        .unwrap();
        assert!(
            out.ends_with("pinWindowsBuild: true\nruntimeClasses:\n- name: w\n  scheduling:\n    nodeSelector:\n      kubernetes.io/os: windows\n"),
            "{out}"
        );
        assert_eq!(set_key("", "mutate", "false").unwrap(), "mutate: false\n");
        assert_eq!(
            set_key("# only a comment\n", "mutate", "false").unwrap(),
            "# only a comment\nmutate: false\n"
        );
    }

    #[test]
    fn flow_and_aliased_settings_are_written_anew() {
        let out = set_key("{mutate: true, defaultOS: none}", "mutate", "false").unwrap();
        assert_eq!(out, "mutate: false\ndefaultOS: none\n");
        let aliased = "base: &t {key: os, value: w, effect: NoSchedule}\nwindowsTaint: *t\n";
        let out = set_key(aliased, "windowsTaint", "null").unwrap();
        assert!(out.contains("windowsTaint: null"), "{out}");
    }

    #[test]
    fn unreadable_text_is_an_error_at_its_line() {
        let e = set_key("mutate: [\n", "mutate", "true").unwrap_err();
        assert!(matches!(e, SetKeyError::Settings(_)), "{e}");
        assert!(e.to_string().contains("YAML view"), "{e}");
        let e = set_key("", "mutate", "{").unwrap_err();
        assert!(matches!(e, SetKeyError::Value(_)), "{e}");
    }
}
