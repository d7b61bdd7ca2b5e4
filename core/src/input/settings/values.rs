//! How each type a setting can have is read, described and written back:
//! booleans, strings, lists, optional values, label maps, words from a fixed
//! list, Windows builds and globs.

use std::collections::BTreeMap;

use serde::de::{MapAccess, SeqAccess};
use serde_json::Value;

use crate::input::settings::read::{At, Got, Number, Seed, SettingValue};
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

    fn from_bool(b: bool, _: &At<'_>) -> Option<bool> {
        Some(b)
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

    fn from_str(s: &str, _: &At<'_>) -> Option<String> {
        Some(s.to_string())
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

    fn from_number(n: Number, at: &At<'_>) -> Option<i64> {
        match n {
            Number::Signed(n) => Some(n),
            Number::Unsigned(n) => i64::try_from(n).ok().or_else(|| {
                at.problem(format_args!("{n} is too large"));
                None
            }),
            Number::Float(_) => {
                at.wrong(Self::EXPECTED, Got::Number(&n));
                None
            }
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

    fn from_null(_: &At<'_>) -> Option<Self> {
        Some(None)
    }

    fn from_bool(b: bool, at: &At<'_>) -> Option<Self> {
        T::from_bool(b, at).map(Some)
    }

    fn from_number(n: Number, at: &At<'_>) -> Option<Self> {
        T::from_number(n, at).map(Some)
    }

    fn from_str(s: &str, at: &At<'_>) -> Option<Self> {
        T::from_str(s, at).map(Some)
    }

    fn from_seq<'de, A: SeqAccess<'de>>(seq: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        Ok(T::from_seq(seq, at)?.map(Some))
    }

    fn from_map<'de, A: MapAccess<'de>>(map: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        Ok(T::from_map(map, at)?.map(Some))
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

    fn from_null(_: &At<'_>) -> Option<Self> {
        Some(Vec::new())
    }

    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::new();
        for index in 0.. {
            match seq.next_element_seed(Seed::<T>::new(&at.index(index)))? {
                None => break,
                Some(Some(item)) => items.push(item),
                Some(None) => {}
            }
        }
        Ok(Some(items))
    }
}

/// A nodeSelector: label keys to values; `null` reads as empty. Keys must be
/// label keys; values label values, `linux`/`windows` for the OS label and
/// `10.0.N` for the build label.
impl SettingValue for BTreeMap<String, String> {
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

    fn from_null(_: &At<'_>) -> Option<Self> {
        Some(BTreeMap::new())
    }

    fn from_map<'de, A: MapAccess<'de>>(mut map: A, at: &At<'_>) -> Result<Option<Self>, A::Error> {
        let mut entries = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let entry = at.entry(&key);
            let Some(value) = map.next_value_seed(Seed::<String>::new(&entry))? else {
                continue;
            };
            if !is_qualified_name(&key) {
                entry.problem("is not a valid label key");
            }
            check_selector_value(&entry, &key, &value);
            entries.insert(key, value);
        }
        Ok(Some(entries))
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

    fn from_str(s: &str, at: &At<'_>) -> Option<WindowsBuild> {
        WindowsBuild::parse_label(s).map_err(|e| at.problem(e)).ok()
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

    fn from_str(s: &str, at: &At<'_>) -> Option<Glob> {
        Glob::new(s).map_err(|e| at.problem(e)).ok()
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

            fn from_str(s: &str, at: &$crate::input::settings::read::At<'_>) -> Option<Self> {
                match s {
                    $($word => Some($value),)+
                    other => {
                        let words: &[&str] = &[$(concat!("\"", $word, "\"")),+];
                        at.problem(format_args!(
                            "{other:?} is not supported: use {}",
                            $crate::input::settings::values::one_of(words)
                        ));
                        None
                    }
                }
            }
        }
    };
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
