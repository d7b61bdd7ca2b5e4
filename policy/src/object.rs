//! The request's object, read as far as the rules read it
//! (`os_placement_core::ReadNode`): every field they never read is kept as
//! its JSON text, unparsed, and written back as it came when the object is
//! mutated. The text stands in the tree as a string marked by a leading
//! NUL, so two objects still compare equal exactly when their texts do (an
//! UPDATE whose pod template did not change). An unread text is checked as
//! JSON, not as a full parse checks it: a lone surrogate escape or a number
//! beyond `f64` there is passed through as it came. The API server sends
//! neither, and checking every unread byte again would cost as much as a
//! fifth of a large request.

use std::fmt;

use os_placement_core::{Read, ReadNode};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// Marks a string of the tree as the JSON text of an unread field.
const UNREAD: char = '\0';

/// Reads a value at `place`: its fields as [`ReadNode::field`] says.
#[derive(Clone, Copy)]
pub struct Narrow(pub ReadNode);

impl<'de> DeserializeSeed<'de> for Narrow {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The unread field's text, as it stands in the tree.
fn unread(text: &RawValue) -> Value {
    let text = text.get();
    let mut marked = String::with_capacity(text.len() + 1);
    marked.push(UNREAD);
    marked.push_str(text);
    Value::String(marked)
}

impl<'de> Visitor<'de> for Narrow {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match self.0.field(&key) {
                Read::Whole => map.next_value()?,
                Read::Fields(place) => map.next_value_seed(Narrow(place))?,
                Read::Unread => unread(map.next_value::<&'de RawValue>()?),
            };
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Writes `value`, read at `place`, as JSON: unread fields as their text.
pub fn write(out: &mut Vec<u8>, value: &Value, place: ReadNode) -> serde_json::Result<()> {
    match value {
        Value::Object(fields) => {
            out.push(b'{');
            for (i, (key, field)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                match place.field(key) {
                    Read::Fields(inner) => write(out, field, inner)?,
                    Read::Unread => write_unread(out, field)?,
                    Read::Whole => serde_json::to_writer(&mut *out, field)?,
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item, place)?;
            }
            out.push(b']');
        }
        other => serde_json::to_writer(&mut *out, other)?,
    }
    Ok(())
}

/// An unread field: its text; a value put there since (never by the rules) as itself.
fn write_unread(out: &mut Vec<u8>, field: &Value) -> serde_json::Result<()> {
    match field {
        Value::String(marked) => match marked.strip_prefix(UNREAD) {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(())
            }
            None => serde_json::to_writer(out, field),
        },
        other => serde_json::to_writer(out, other),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn narrow(text: &str) -> Value {
        let mut de = serde_json::Deserializer::from_str(text);
        Narrow(ReadNode::Object).deserialize(&mut de).unwrap()
    }

    fn written(value: &Value) -> Value {
        let mut out = Vec::new();
        write(&mut out, value, ReadNode::Object).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    const DEPLOYMENT: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "d"}, "managedFields": [{"manager": "k"}]},
        "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "d"}},
          "spec": {"nodeSelector": {"kubernetes.io/os": "windows"}, "volumes": [{"name": "v"}],
            "containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "x"}],
              "securityContext": {"runAsUser": 1}}]}}},
        "status": {"replicas": 1.5e0}}"#;

    #[test]
    fn read_fields_are_values_and_unread_ones_their_text() {
        let object = narrow(DEPLOYMENT);
        let spec = &object["spec"]["template"]["spec"];
        assert_eq!(spec["nodeSelector"], json!({"kubernetes.io/os": "windows"}));
        assert_eq!(
            spec["containers"][0]["securityContext"],
            json!({"runAsUser": 1})
        );
        assert_eq!(object["metadata"]["labels"], json!({"app": "d"}));
        assert_eq!(object["status"], json!("\0{\"replicas\": 1.5e0}"));
        assert_eq!(object["spec"]["replicas"], json!("\u{0}3"));
        assert_eq!(
            spec["containers"][0]["env"],
            json!("\0[{\"name\": \"A\", \"value\": \"x\"}]")
        );
        assert_eq!(
            object["metadata"]["managedFields"],
            json!("\0[{\"manager\": \"k\"}]")
        );
    }

    #[test]
    fn written_back_it_is_the_object_it_was_read_from() {
        let whole: Value = serde_json::from_str(DEPLOYMENT).unwrap();
        assert_eq!(written(&narrow(DEPLOYMENT)), whole);
        // Anything but an object where one is read is kept as it is.
        for odd in [
            r#"{"spec": [1, {"env": 2}]}"#,
            r#"{"spec": "x"}"#,
            "[]",
            "null",
            "2.5",
        ] {
            let whole: Value = serde_json::from_str(odd).unwrap();
            assert_eq!(written(&narrow(odd)), whole, "{odd}");
        }
    }

    #[test]
    fn a_value_put_in_an_unread_field_is_written_as_itself() {
        let mut object = narrow(DEPLOYMENT);
        object["spec"]["replicas"] = json!("five");
        object["status"] = json!({"phase": "x"});
        let back = written(&object);
        assert_eq!(back["spec"]["replicas"], json!("five"));
        assert_eq!(back["status"], json!({"phase": "x"}));
    }

    #[test]
    fn unread_texts_are_written_as_they_came() {
        // Escapes, exponents, and what a full parse would refuse alike.
        for text in [
            r#""\ud83d\ude00 \u00e9""#,
            "1.5e3",
            "[1e-3, 12345]",
            r#""\ud800""#,
            "1e400",
        ] {
            let object = narrow(&format!(r#"{{"spec": {{"volumes": {text}}}}}"#));
            let mut out = Vec::new();
            write(&mut out, &object, ReadNode::Object).unwrap();
            let expected = format!(r#"{{"spec":{{"volumes":{text}}}}}"#);
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn objects_compare_equal_exactly_when_their_unread_texts_do() {
        let changed = DEPLOYMENT.replace(r#""value": "x""#, r#""value": "y""#);
        assert_ne!(narrow(DEPLOYMENT), narrow(&changed));
        assert_eq!(narrow(DEPLOYMENT), narrow(DEPLOYMENT));
    }
}
