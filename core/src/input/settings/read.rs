//! Reading settings from a JSON value without stopping at the first
//! mistake: every value is taken in whatever shape it comes, and a wrong
//! shape is recorded as a problem at its path, so one answer lists them
//! all. Paths are written out only for problems.

use std::cell::RefCell;
use std::fmt;

use serde_json::{Map, Value};

use crate::input::settings::schema::Shape;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::push_key;

/// One step of a path.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    Entry(&'a str),
}

/// Where a value sits in the settings, and where its problems go.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
    problems: &'a RefCell<Vec<Diagnostic>>,
}

impl<'a> At<'a> {
    /// The settings root.
    pub fn root(problems: &'a RefCell<Vec<Diagnostic>>) -> At<'a> {
        At {
            parent: None,
            step: Step::Root,
            problems,
        }
    }

    fn child(&'a self, step: Step<'a>) -> At<'a> {
        At {
            parent: Some(self),
            step,
            problems: self.problems,
        }
    }

    /// A key of the object at this path: `windowsTaint.key`.
    pub fn field(&'a self, key: &'a str) -> At<'a> {
        self.child(Step::Field(key))
    }

    /// An item of the list at this path: `runtimeClasses[0]`.
    pub fn index(&'a self, i: usize) -> At<'a> {
        self.child(Step::Index(i))
    }

    /// An entry of the map at this path: `nodeSelector[kubernetes.io/os]`.
    pub fn entry(&'a self, key: &'a str) -> At<'a> {
        self.child(Step::Entry(key))
    }

    /// The path, `settings` at the root.
    pub fn path(&self) -> String {
        let mut path = String::new();
        self.write_path(&mut path);
        if path.is_empty() {
            path.push_str("settings");
        }
        path
    }

    fn write_path(&self, out: &mut String) {
        if let Some(parent) = self.parent {
            parent.write_path(out);
        }
        match self.step {
            Step::Root => {}
            Step::Field(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
            Step::Entry(key) => push_key(out, key),
        }
    }

    /// Records a problem at this path.
    pub fn problem(&self, message: impl fmt::Display) {
        self.record(message.to_string());
    }

    // Not generic: one copy in the module, whatever the message type.
    fn record(&self, message: String) {
        self.problems.borrow_mut().push(Diagnostic::new(
            Code::InvalidSetting,
            self.path(),
            message,
            "",
        ));
    }

    /// Records a problem at the path of `key` under this one.
    pub fn problem_at(&self, key: &str, message: impl fmt::Display) {
        let at = At {
            parent: Some(self),
            step: Step::Field(key),
            problems: self.problems,
        };
        at.record(message.to_string());
    }

    /// Records a value of the wrong shape.
    pub fn wrong(&self, expected: &str, got: &Value) {
        self.problem(format_args!("expected {expected}, got {}", Got(got)));
    }
}

/// A value of the wrong shape, for messages: `the string "x"`, `a list`.
struct Got<'v>(&'v Value);

impl fmt::Display for Got<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::Bool(_) => f.write_str("a boolean"),
            Value::Number(n) => write!(f, "the number {n}"),
            Value::String(s) => write!(f, "the string {s:?}"),
            Value::Array(_) => f.write_str("a list"),
            Value::Object(_) => f.write_str("an object"),
        }
    }
}

/// A type a setting can have: read from any shape, described for forms
/// and questions, and written back as JSON (for defaults and schemas).
pub trait SettingValue: Sized {
    /// What the value must be, for "expected ..." messages.
    const EXPECTED: &'static str;

    /// What a form shows for it.
    fn shape() -> Shape;

    /// The value as JSON.
    fn to_json(&self) -> Value;

    /// Reads the value; `None` when it is wrong (the problem is recorded).
    fn read(value: &Value, at: &At<'_>) -> Option<Self>;
}

/// Records a value of the wrong shape; always `None`.
pub fn wrong<T>(expected: &str, value: &Value, at: &At<'_>) -> Option<T> {
    at.wrong(expected, value);
    None
}

/// The closest known key to a misspelt one, when one is close enough to be
/// what was meant: same letters but for case, or a few edits away.
pub fn nearest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    if let Some(same) = known.iter().find(|k| k.eq_ignore_ascii_case(key)) {
        return Some(same);
    }
    let limit = (key.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, case-insensitive, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = i;
        let mut previous = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let substitute = diagonal + usize::from(ca != cb);
            let current = substitute.min(above.saturating_add(1)).min(previous + 1);
            diagonal = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = current;
            }
            previous = current;
        }
    }
    row.last().copied().unwrap_or(0)
}

/// Records every key of `map` that is not in `known`, naming the nearest
/// known key and all of them.
pub fn unknown_keys(map: &Map<String, Value>, at: &At<'_>, known: &[&str]) {
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        let hint = nearest(key, known)
            .map(|k| format!("did you mean {k}? "))
            .unwrap_or_default();
        at.problem_at(
            key,
            format_args!(
                "unknown setting; {hint}known keys here are {}",
                known.join(", ")
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_key_allows_case_and_a_few_edits() {
        let known = ["mutate", "defaultOS", "windowsTaint", "setPodOS"];
        assert_eq!(nearest("defaultOs", &known), Some("defaultOS"));
        assert_eq!(nearest("mutat", &known), Some("mutate"));
        assert_eq!(nearest("windowTaint", &known), Some("windowsTaint"));
        assert_eq!(nearest("set_pod_os", &known), Some("setPodOS"));
        assert_eq!(nearest("bogus", &known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn paths_are_written_only_when_asked() {
        let problems = RefCell::new(Vec::new());
        let root = At::root(&problems);
        let classes = root.field("runtimeClasses");
        let first = classes.index(0);
        let scheduling = first.field("scheduling");
        let selector = scheduling.field("nodeSelector");
        selector.entry("kubernetes.io/os").problem("x");
        root.problem("y");
        let paths: Vec<String> = problems.into_inner().into_iter().map(|d| d.path).collect();
        assert_eq!(
            paths,
            [
                "runtimeClasses[0].scheduling.nodeSelector[kubernetes.io/os]",
                "settings"
            ]
        );
    }
}
