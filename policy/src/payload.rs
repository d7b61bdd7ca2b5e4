//! The validation payload, read narrowly: the settings and the request
//! fields the core reads (`kind`, `operation`, `object`, `oldObject`)
//! become JSON values (the objects only as far as the rules read them:
//! `object.rs`), and of `resource` and `userInfo`, which tell the
//! audit scanner's requests apart, only `resource.resource` and
//! `userInfo.username`; every other request field (`options`, `uid`, ...)
//! is skipped without being built. The settings stay text,
//! borrowed from the payload, for the settings cache. Duplicate keys keep
//! the last value, as a full parse would.

use std::fmt;

use os_placement_core::ReadNode;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::object::Narrow;

/// `{"request": ..., "settings": ...}`.
#[derive(Debug, Default)]
pub struct Payload<'a> {
    /// The admission request's fields the core reads, as an object; `None`
    /// when the payload has no request object.
    pub request: Option<Value>,
    /// The policy settings as JSON text; `None` when absent.
    pub settings: Option<&'a RawValue>,
}

impl<'a> Payload<'a> {
    /// The settings' JSON text: `null` when absent (all defaults).
    pub fn settings_text(&self) -> &'a str {
        self.settings.map_or("null", RawValue::get)
    }
}

impl<'de> Deserialize<'de> for Payload<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Payload<'de>, D::Error> {
        let payload = deserializer.deserialize_any(ObjectOrNothing(Level::Payload))?;
        Ok(match payload {
            Read::Payload(p) => p,
            _ => Payload::default(),
        })
    }
}

/// A request read narrowly; anything but an object reads as no request.
struct NarrowRequest(Option<Value>);

impl<'de> Deserialize<'de> for NarrowRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NarrowRequest, D::Error> {
        Ok(
            match deserializer.deserialize_any(ObjectOrNothing(Level::Request))? {
                Read::Request(fields) => NarrowRequest(Some(Value::Object(fields))),
                _ => NarrowRequest(None),
            },
        )
    }
}

#[derive(Clone, Copy)]
enum Level {
    Payload,
    Request,
}

enum Read<'a> {
    Payload(Payload<'a>),
    Request(Map<String, Value>),
    Nothing,
}

/// Reads an object at one level; any other JSON value is skipped.
struct ObjectOrNothing(Level);

/// The keys read at either level, recognised without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Request,
    Settings,
    Kind,
    Operation,
    Object,
    OldObject,
    Resource,
    UserInfo,
    Other,
}

impl Key {
    fn name(self) -> &'static str {
        match self {
            Key::Request => "request",
            Key::Settings => "settings",
            Key::Kind => "kind",
            Key::Operation => "operation",
            Key::Object => "object",
            Key::OldObject => "oldObject",
            Key::Resource => "resource",
            Key::UserInfo => "userInfo",
            Key::Other => "",
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "request" => Key::Request,
            "settings" => Key::Settings,
            "kind" => Key::Kind,
            "operation" => Key::Operation,
            "object" => Key::Object,
            "oldObject" => Key::OldObject,
            "resource" => Key::Resource,
            "userInfo" => Key::UserInfo,
            _ => Key::Other,
        })
    }
}

impl<'de> Visitor<'de> for ObjectOrNothing {
    type Value = Read<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read<'de>, A::Error> {
        match self.0 {
            Level::Payload => {
                let mut payload = Payload::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Request => payload.request = map.next_value::<NarrowRequest>()?.0,
                        Key::Settings => payload.settings = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Read::Payload(payload))
            }
            Level::Request => {
                let mut fields = Map::new();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Kind | Key::Operation => {
                            fields.insert(key.name().to_string(), map.next_value()?);
                        }
                        Key::Object | Key::OldObject => {
                            let object = map.next_value_seed(Narrow(ReadNode::Object))?;
                            fields.insert(key.name().to_string(), object);
                        }
                        Key::Resource | Key::UserInfo => {
                            let inner = match key {
                                Key::Resource => "resource",
                                _ => "username",
                            };
                            let text = map.next_value_seed(OneString(inner))?;
                            let mut object = Map::new();
                            if let Some(text) = text {
                                object.insert(inner.to_string(), Value::String(text));
                            }
                            fields.insert(key.name().to_string(), Value::Object(object));
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Read::Request(fields))
            }
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Read::Nothing)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }

    fn visit_str<E>(self, _: &str) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }

    fn visit_unit<E>(self) -> Result<Read<'de>, E> {
        Ok(Read::Nothing)
    }
}

/// One string field of an object (`resource.resource`,
/// `userInfo.username`); everything else is skipped without being built.
struct OneString(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for OneString {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OneString {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.0 {
                found = map
                    .next_value::<Option<IgnoredOrString>>()?
                    .and_then(|v| v.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
}

/// A string, or any other value skipped.
struct IgnoredOrString(Option<String>);

impl<'de> Deserialize<'de> for IgnoredOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<IgnoredOrString, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = IgnoredOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, text: &str) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(Some(text.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IgnoredOrString, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IgnoredOrString(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IgnoredOrString, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IgnoredOrString(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(None))
            }
            fn visit_unit<E>(self) -> Result<IgnoredOrString, E> {
                Ok(IgnoredOrString(None))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Payload<'_> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn keeps_the_fields_the_core_reads_and_drops_the_rest() {
        let p = read(
            r#"{"request": {"uid": "u", "userInfo": {"groups": ["a"]}, "kind": {"kind": "Pod"},
                "operation": "CREATE", "object": {"spec": {}}, "oldObject": null,
                "resource": {"resource": "pods"}, "dryRun": false,
                "options": {"dryRun": [1, 2]}}, "settings": {"mutate": false}}"#,
        );
        assert_eq!(
            p.request,
            Some(json!({"kind": {"kind": "Pod"}, "operation": "CREATE",
                        "object": {"spec": {}}, "oldObject": null,
                        "userInfo": {}, "resource": {"resource": "pods"}}))
        );
        let audit = read(
            r#"{"request": {"userInfo": {"username": "alice", "extra": {"a": [[1]]}},
                "resource": {"group": "apps", "resource": {"odd": 1}}}}"#,
        );
        assert_eq!(
            audit.request,
            Some(json!({"userInfo": {"username": "alice"}, "resource": {}}))
        );
        assert_eq!(p.settings_text(), r#"{"mutate": false}"#);
    }

    #[test]
    fn duplicate_keys_keep_the_last_value_like_a_full_parse() {
        let p = read(r#"{"request": {"operation": "DELETE", "operation": "CREATE"}}"#);
        assert_eq!(p.request, Some(json!({"operation": "CREATE"})));
        assert_eq!(p.settings_text(), "null");
    }

    #[test]
    fn a_request_that_is_not_an_object_is_no_request() {
        for text in [
            r#"{"request": "x"}"#,
            r#"{"request": [1, {"a": 2}]}"#,
            "[]",
            "7",
            "null",
            "{}",
        ] {
            assert_eq!(read(text).request, None, "{text}");
        }
    }

    #[test]
    fn invalid_json_is_still_an_error() {
        for text in [
            r#"{"request": {"object": }"#,
            r#"{"request": {"userInfo": [1,}}"#,
            "",
        ] {
            assert!(serde_json::from_str::<Payload>(text).is_err(), "{text}");
        }
    }
}
