//! `settings_object!`: declares a settings object once — each key with its
//! field, type, default and doc comment — and generates the struct, its
//! `Default`, its key list, its reader (unknown keys named with the nearest
//! known one, then each key in declaration order, required keys checked,
//! then the object's own `Validate` step), its JSON form and its schema.

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

            fn read(
                value: &serde_json::Value,
                at: &$crate::input::settings::read::At<'_>,
            ) -> Option<Self> {
                use $crate::input::settings::declare::Validate as _;
                let Some(map) = value.as_object() else {
                    return $crate::input::settings::read::wrong(Self::EXPECTED, value, at);
                };
                $crate::input::settings::read::unknown_keys(map, at, Self::KEYS);
                let mut out = Self::default();
                let mut complete = true;
                $(
                    match map.get($key) {
                        Some(value) => match <$ty as $crate::input::settings::read::SettingValue>::read(
                            value,
                            &at.field($key),
                        ) {
                            Some(read) => out.$field = read,
                            None => complete = false,
                        },
                        None => settings_object!(@missing at, complete, $key $(, $req)?),
                    }
                )*
                if !complete {
                    return None;
                }
                out.validate(at);
                Some(out)
            }
        }
    };
    (@is_required) => { false };
    (@is_required $req:literal) => { true };
    (@default $ty:ty, $default:expr) => {
        <$ty as $crate::input::settings::read::SettingValue>::to_json(&$default)
    };
    (@default $ty:ty, $default:expr, $req:literal) => { serde_json::Value::Null };
    (@missing $at:ident, $complete:ident, $key:literal) => {{}};
    (@missing $at:ident, $complete:ident, $key:literal, $req:literal) => {{
        $at.problem_at($key, $req);
        $complete = false;
    }};
}

pub(crate) use settings_object;
