//! How each type a setting can have is read, described and written back:
//! booleans, strings, lists, optional values, label maps, words from a fixed
//! list, Windows builds and globs.

use crate::vocab::ordered::StringMap;

use serde_json::Value;

use crate::input::settings::read::{wrong, At, SettingValue};
use crate::input::settings::schema::Shape;
use crate::vocab::build::WindowsBuild;
use crate::vocab::glob::Glob;
use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::names::{is_label_value, is_qualified_name};

impl SettingValue for bool {
    const EXPECTED: &'static str = "true or false";

    fn shape() -> Shape {
        Shape::Boolean
    }

    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }

    fn read(value: &Value, at: &At<'_>) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

impl SettingValue for String {
    const EXPECTED: &'static str = "a string";

    fn shape() -> Shape {
        Shape::String { example: "" }
    }

    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }

    fn read(value: &Value, at: &At<'_>) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

impl SettingValue for i64 {
    const EXPECTED: &'static str = "an integer";

    fn shape() -> Shape {
        Shape::Integer
    }

    fn to_json(&self) -> Value {
        Value::from(*self)
    }

    fn read(value: &Value, at: &At<'_>) -> Option<i64> {
        match value.as_i64() {
            Some(n) => Some(n),
            None => wrong(Self::EXPECTED, value, at),
        }
    }
}

/// `null` reads as absent.
impl<T: SettingValue> SettingValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;

    fn shape() -> Shape {
        T::shape()
    }

    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            value => T::read(value, at).map(Some),
        }
    }
}

/// A list; `null` reads as the empty list. Wrong items are reported at
/// their index and left out.
impl<T: SettingValue> SettingValue for Vec<T> {
    const EXPECTED: &'static str = "a list";

    fn shape() -> Shape {
        Shape::List {
            item: Box::new(T::shape()),
        }
    }

    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(T::to_json).collect())
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Self> {
        match value {
            Value::Null => Some(Vec::new()),
            Value::Array(items) => {
                let mut read = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    read.extend(T::read(item, &at.index(i)));
                }
                Some(read)
            }
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

/// A nodeSelector: label keys to values; `null` reads as empty. Keys must be
/// label keys; values label values, `linux`/`windows` for the OS label and
/// `10.0.N` for the build label.
impl SettingValue for StringMap {
    const EXPECTED: &'static str = "an object";

    fn shape() -> Shape {
        Shape::Map
    }

    fn to_json(&self) -> Value {
        Value::Object(
            self.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Self> {
        let map = match value {
            Value::Null => return Some(StringMap::new()),
            Value::Object(map) => map,
            _ => return wrong(Self::EXPECTED, value, at),
        };
        let mut entries = StringMap::new();
        for (key, value) in map {
            let entry = at.entry(key);
            let Some(value) = String::read(value, &entry) else {
                continue;
            };
            if !is_qualified_name(key) {
                entry.problem("is not a valid label key");
            }
            check_selector_value(&entry, key, &value);
            entries.insert(key.clone(), value);
        }
        Some(entries)
    }
}

fn check_selector_value(at: &At<'_>, key: &str, value: &str) {
    if key == OS_LABEL && value != "linux" && value != "windows" {
        at.problem(format_args!(
            "{value:?} is not an OS label value: use linux or windows"
        ));
    } else if key == WINDOWS_BUILD_LABEL {
        if let Err(e) = WindowsBuild::parse_label(value) {
            at.problem(e);
        }
    } else if !is_label_value(value) {
        at.problem(format_args!("{value:?} is not a valid label value"));
    }
}

/// A build written `10.0.N`.
impl SettingValue for WindowsBuild {
    const EXPECTED: &'static str = "a string such as \"10.0.20348\"";

    fn shape() -> Shape {
        Shape::String {
            example: "10.0.20348",
        }
    }

    fn to_json(&self) -> Value {
        Value::String(self.to_string())
    }

    fn read(value: &Value, at: &At<'_>) -> Option<WindowsBuild> {
        match value {
            Value::String(s) => WindowsBuild::parse_label(s).map_err(|e| at.problem(e)).ok(),
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

/// A glob on image references.
impl SettingValue for Glob {
    const EXPECTED: &'static str = "a string";

    fn shape() -> Shape {
        Shape::String {
            example: "registry.example.com/windows/*",
        }
    }

    fn to_json(&self) -> Value {
        Value::String(self.as_str().to_string())
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Glob> {
        match value {
            Value::String(s) => Glob::new(s).map_err(|e| at.problem(e)).ok(),
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

/// Implements [`SettingValue`] for an enum written as one of a few words.
macro_rules! word_setting {
    ($ty:ty { $($word:literal => $value:expr),+ $(,)? }) => {
        impl $crate::input::settings::read::SettingValue for $ty {
            const EXPECTED: &'static str = "a string";

            fn shape() -> $crate::input::settings::schema::Shape {
                $crate::input::settings::schema::Shape::Enum { values: vec![$($word),+] }
            }

            fn to_json(&self) -> serde_json::Value {
                let word = [$(($value, $word)),+]
                    .into_iter()
                    .find(|(value, _)| value == self)
                    .map_or("", |(_, word)| word);
                serde_json::Value::String(word.to_string())
            }

            fn read(
                value: &serde_json::Value,
                at: &$crate::input::settings::read::At<'_>,
            ) -> Option<Self> {
                const WORDS: &[&str] = &[$($word),+];
                const VALUES: &[$ty] = &[$($value),+];
                $crate::input::settings::values::read_word(value, at, WORDS)
                    .and_then(|i| VALUES.get(i).copied())
            }
        }
    };
}

/// The index of the word `value` holds among `words`; a problem naming
/// the words otherwise.
pub fn read_word(value: &Value, at: &At<'_>, words: &[&str]) -> Option<usize> {
    // YAML 1.1, as kubectl reads manifests, turns an unquoted `off` into
    // `false`: the cluster hands the policy `false` for `off`.
    if *value == Value::Bool(false) {
        if let Some(off) = words.iter().position(|w| *w == "off") {
            return Some(off);
        }
    }
    let Some(word) = value.as_str() else {
        return wrong("a string", value, at);
    };
    let found = words.iter().position(|w| *w == word);
    if found.is_none() {
        let quoted: Vec<String> = words.iter().map(|w| format!("{w:?}")).collect();
        let quoted: Vec<&str> = quoted.iter().map(String::as_str).collect();
        at.problem(format_args!(
            "{word:?} is not supported: use {}",
            one_of(&quoted)
        ));
    }
    found
}

pub(crate) use word_setting;

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub fn one_of(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [only] => only.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}
