//! Reading settings from any serde source (JSON bytes, a JSON value)
//! without building a tree, and without stopping at the first mistake:
//! every value is taken in whatever shape it comes, and a wrong shape is
//! recorded as a problem at its path, so one answer lists them all.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::input::settings::schema::Shape;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::push_key;

/// Where a value sits in the settings, and where its problems go.
pub struct At<'p> {
    path: String,
    problems: &'p RefCell<Vec<Diagnostic>>,
}

impl<'p> At<'p> {
    /// The settings root.
    pub fn root(problems: &'p RefCell<Vec<Diagnostic>>) -> At<'p> {
        At {
            path: String::new(),
            problems,
        }
    }

    /// A key of the object at this path: `windowsTaint.key`.
    pub fn field(&self, key: &str) -> At<'p> {
        let mut path = self.path.clone();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        At {
            path,
            problems: self.problems,
        }
    }

    /// An item of the list at this path: `runtimeClasses[0]`.
    pub fn index(&self, i: usize) -> At<'p> {
        At {
            path: format!("{}[{i}]", self.path),
            problems: self.problems,
        }
    }

    /// An entry of the map at this path: `nodeSelector[kubernetes.io/os]`.
    pub fn entry(&self, key: &str) -> At<'p> {
        let mut path = self.path.clone();
        push_key(&mut path, key);
        At {
            path,
            problems: self.problems,
        }
    }

    /// The path, `settings` at the root.
    pub fn path(&self) -> &str {
        if self.path.is_empty() {
            "settings"
        } else {
            &self.path
        }
    }

    /// Records a problem at this path.
    pub fn problem(&self, message: impl fmt::Display) {
        self.problems.borrow_mut().push(Diagnostic::new(
            Code::InvalidSetting,
            self.path(),
            message.to_string(),
            "",
        ));
    }

    /// Records a problem at the path of `key` under this one.
    pub fn problem_at(&self, key: &str, message: impl fmt::Display) {
        self.field(key).problem(message);
    }

    /// Records a value of the wrong shape.
    pub fn wrong(&self, expected: &str, got: Got<'_>) {
        self.problem(format_args!("expected {expected}, got {got}"));
    }
}

/// A value of the wrong shape, for messages.
#[derive(Debug, Clone, Copy)]
pub enum Got<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// A number, as written.
    Number(&'a Number),
    /// A string.
    Str(&'a str),
    /// A list.
    List,
    /// An object.
    Object,
}

impl fmt::Display for Got<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Got::Null => f.write_str("null"),
            Got::Bool => f.write_str("a boolean"),
            Got::Number(n) => write!(f, "the number {n}"),
            Got::Str(s) => write!(f, "the string {s:?}"),
            Got::List => f.write_str("a list"),
            Got::Object => f.write_str("an object"),
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

    /// From `null`; a wrong shape unless the type says otherwise.
    fn from_null(at: &At<'_>) -> Option<Self> {
        at.wrong(Self::EXPECTED, Got::Null);
        None
    }

    /// From `true` or `false`.
    fn from_bool(b: bool, at: &At<'_>) -> Option<Self> {
        let _ = b;
        at.wrong(Self::EXPECTED, Got::Bool);
        None
    }

    /// From a number: `i64`, `u64` or `f64` as the source gives it.
    fn from_number(n: Number, at: &At<'_>) -> Option<Self> {
        at.wrong(Self::EXPECTED, Got::Number(&n));
        None
    }

    /// From a string.
    fn from_str(s: &str, at: &At<'_>) -> Option<Self> {
        at.wrong(Self::EXPECTED, Got::Str(s));
        None
    }

    /// From a list: skipped as a wrong shape unless the type reads lists.
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        at.wrong(Self::EXPECTED, Got::List);
        Ok(None)
    }

    /// From an object: skipped as a wrong shape unless the type reads objects.
    fn from_map<'de, A: MapAccess<'de>>(mut map: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        at.wrong(Self::EXPECTED, Got::Object);
        Ok(None)
    }
}

/// A JSON number as serde hands it over.
#[derive(Debug, Clone, Copy)]
pub enum Number {
    /// A negative integer.
    Signed(i64),
    /// A non-negative integer.
    Unsigned(u64),
    /// Anything else.
    Float(f64),
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Signed(n) => write!(f, "{n}"),
            Number::Unsigned(n) => write!(f, "{n}"),
            Number::Float(n) => write!(f, "{n}"),
        }
    }
}

/// Reads one `T` at `at` from a deserializer: `None` when it is wrong
/// (the problem is recorded); an error only when the source itself fails.
pub struct Seed<'a, 'p, T> {
    at: &'a At<'p>,
    value: PhantomData<T>,
}

impl<'a, 'p, T> Seed<'a, 'p, T> {
    /// A seed reading at `at`.
    pub fn new(at: &'a At<'p>) -> Self {
        Seed {
            at,
            value: PhantomData,
        }
    }
}

impl<'de, T: SettingValue> DeserializeSeed<'de> for Seed<'_, '_, T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: SettingValue> Visitor<'de> for Seed<'_, '_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }

    fn visit_unit<E>(self) -> Result<Option<T>, E> {
        Ok(T::from_null(self.at))
    }

    fn visit_none<E>(self) -> Result<Option<T>, E> {
        Ok(T::from_null(self.at))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Option<T>, E> {
        Ok(T::from_bool(b, self.at))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Option<T>, E> {
        Ok(T::from_number(Number::Signed(n), self.at))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Option<T>, E> {
        Ok(T::from_number(Number::Unsigned(n), self.at))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Option<T>, E> {
        Ok(T::from_number(Number::Float(n), self.at))
    }

    fn visit_str<E>(self, s: &str) -> Result<Option<T>, E> {
        Ok(T::from_str(s, self.at))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<T>, A::Error> {
        T::from_seq(seq, self.at)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
        T::from_map(map, self.at)
    }
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
            let current = substitute.min(above + 1).min(previous + 1);
            diagonal = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = current;
            }
            previous = current;
        }
    }
    row.last().copied().unwrap_or(0)
}

/// Records an unknown key, naming the nearest known one and all of them.
pub fn unknown_key(at: &At<'_>, key: &str, known: &[&str]) {
    let hint = nearest(key, known)
        .map(|k| format!("did you mean {k}? "))
        .unwrap_or_default();
    at.field(key).problem(format_args!(
        "unknown setting; {hint}known keys here are {}",
        known.join(", ")
    ));
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
}
