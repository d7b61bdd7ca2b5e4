//! `settings_object!`: declares a settings object once — each key with its
//! field, type, default and doc comment — and generates the struct, its
//! `Default`, its key list, its reader (unknown keys named with the nearest
//! known one, required keys checked, then the object's own `Validate`
//! step), its JSON form and its schema.

/// Checks a settings object once all its keys are read.
pub trait Validate {
    /// Records every problem the keys have together or in their values.
    fn validate(&self, at: &super::read::At<'_>);
}

/// Declares a settings object; see the module documentation.
macro_rules! settings_object {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty = $default:expr => $key:literal $(, required $req:literal)? ;
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $name {
            /// The keys of this object, in declaration order.
            pub const KEYS: &'static [&'static str] = &[$($key),*];
        }

        impl $crate::input::settings::read::SettingValue for $name {
            const EXPECTED: &'static str = "an object";

            fn shape() -> $crate::input::settings::schema::Shape {
                $crate::input::settings::schema::Shape::Object {
                    fields: vec![$(
                        $crate::input::settings::schema::FieldSchema {
                            key: $key,
                            description: [$($doc),*]
                                .iter()
                                .map(|line| line.trim())
                                .collect::<Vec<_>>()
                                .join(" "),
                            shape: <$ty as $crate::input::settings::read::SettingValue>::shape(),
                            default: settings_object!(@default $ty, $default $(, $req)?),
                            required: settings_object!(@is_required $($req)?),
                        }
                    ),*],
                }
            }

            fn to_json(&self) -> serde_json::Value {
                let mut map = serde_json::Map::new();
                $( map.insert(
                    $key.to_string(),
                    $crate::input::settings::read::SettingValue::to_json(&self.$field),
                ); )*
                serde_json::Value::Object(map)
            }

            fn from_map<'de, A: serde::de::MapAccess<'de>>(
                mut map: A,
                at: &$crate::input::settings::read::At<'_>,
            ) -> Result<Option<Self>, A::Error> {
                use $crate::input::settings::declare::Validate as _;
                use $crate::input::settings::read::{unknown_key, Seed};
                let mut out = Self::default();
                let mut seen: Vec<&'static str> = Vec::new();
                let mut complete = true;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        $(
                            $key => {
                                seen.push($key);
                                match map.next_value_seed(Seed::<$ty>::new(&at.field($key)))? {
                                    Some(value) => out.$field = value,
                                    None => complete = false,
                                }
                            }
                        )*
                        other => {
                            unknown_key(at, other, Self::KEYS);
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                $( settings_object!(@check_required seen, at, complete, $key $(, $req)?); )*
                if !complete {
                    return Ok(None);
                }
                out.validate(at);
                Ok(Some(out))
            }
        }
    };
    (@is_required) => { false };
    (@is_required $req:literal) => { true };
    (@default $ty:ty, $default:expr) => {
        <$ty as $crate::input::settings::read::SettingValue>::to_json(&$default)
    };
    (@default $ty:ty, $default:expr, $req:literal) => { serde_json::Value::Null };
    (@check_required $seen:ident, $at:ident, $complete:ident, $key:literal) => {};
    (@check_required $seen:ident, $at:ident, $complete:ident, $key:literal, $req:literal) => {
        if !$seen.contains(&$key) {
            $at.problem_at($key, $req);
            $complete = false;
        }
    };
}

pub(crate) use settings_object;
