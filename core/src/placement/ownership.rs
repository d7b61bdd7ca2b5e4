//! What the policy added, recorded on the object so that a later UPDATE
//! can tell the policy's own nodeSelector entries from the user's. Without
//! the record, a build pin added at CREATE looks user-written after an
//! image upgrade, and the upgrade is rejected as a conflict with it.
//!
//! The record is an annotation on the object (not on the pod template, so
//! it starts no rollout): a JSON object from JSON Pointer to the value the
//! policy wrote. An entry is the policy's only while it still holds that
//! value; once a user changes it, it is theirs and is never touched.

use crate::vocab::ordered::StringMap;

use serde_json::{json, Value};

use crate::vocab::patch::{escape_token, PatchOp};

/// The annotation holding the record.
pub const ADDED_ANNOTATION: &str = "os-placement.kubewarden.io/added";

/// Pointer → value of the nodeSelector entries the policy owns.
pub type Owned = StringMap;

/// The recorded entries that still hold the recorded value. The record is
/// read from the object, or from the old object when an update dropped it
/// (`kubectl replace`, or an apply that does not merge annotations).
pub fn owned_entries(object: &Value, old_object: Option<&Value>) -> Owned {
    let record = read_record(object)
        .or_else(|| old_object.and_then(read_record))
        .unwrap_or_default();
    record
        .into_iter()
        .filter(|(pointer, value)| {
            object.pointer(pointer).and_then(Value::as_str) == Some(value.as_str())
        })
        .collect()
}

fn read_record(object: &Value) -> Option<Owned> {
    let text = object
        .get("metadata")?
        .get("annotations")?
        .get(ADDED_ANNOTATION)?
        .as_str()?;
    // Through `Value` and bytes: the module already carries that parser.
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(text.as_bytes()) else {
        return None;
    };
    let mut owned = Owned::new();
    for (pointer, value) in map {
        let Value::String(v) = value else {
            return None;
        };
        owned.insert(pointer, v);
    }
    Some(owned)
}

/// The object without the owned entries, so the rules see only what the
/// user wrote.
pub fn without(object: &Value, owned: &Owned) -> Value {
    let mut stripped = object.clone();
    for pointer in owned.keys() {
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            continue;
        };
        let key = last.replace("~1", "/").replace("~0", "~");
        if let Some(Value::Object(map)) = stripped.pointer_mut(parent) {
            map.remove(&key);
        }
    }
    stripped
}

/// Turns the ops computed on the stripped object into ops on the real one:
/// an owned entry the rules add again with the same value needs nothing,
/// with another value a `replace`; one they no longer add is removed.
pub fn reconcile(owned: &Owned, ops: Vec<PatchOp>) -> Vec<PatchOp> {
    let mut out = Vec::new();
    let mut readded: Vec<String> = Vec::new();
    for op in ops {
        match owned.get(&op.path) {
            Some(old) => {
                if op.value.as_str() != Some(old.as_str()) {
                    out.push(PatchOp::replace(op.path.clone(), op.value));
                }
                readded.push(op.path);
            }
            None => out.push(op),
        }
    }
    let stale = owned.keys().filter(|p| !readded.contains(p));
    out.extend(stale.map(|p| PatchOp::remove(p.clone())));
    out
}

/// The nodeSelector entries the ops leave in place, with `owned` entries
/// that stay: the new record.
pub fn record_after(owned: &Owned, ops: &[PatchOp], selector_pointer: &str) -> Owned {
    let mut record: Owned = owned.clone();
    for op in ops {
        match op.op {
            "remove" => {
                record.remove(&op.path);
            }
            _ if op.path == selector_pointer => {
                for (key, value) in op.value.as_object().into_iter().flatten() {
                    if let Some(v) = value.as_str() {
                        record.insert(
                            format!("{selector_pointer}/{}", escape_token(key)),
                            v.into(),
                        );
                    }
                }
            }
            _ if op.path.starts_with(&format!("{selector_pointer}/")) => {
                if let Some(v) = op.value.as_str() {
                    record.insert(op.path.clone(), v.to_string());
                }
            }
            _ => {}
        }
    }
    record
}

/// The op that writes `record` into the object's annotations, if it changed.
pub fn annotation_op(object: &Value, record: &Owned) -> Option<PatchOp> {
    let current = read_record(object);
    if current.as_ref() == Some(record) || (current.is_none() && record.is_empty()) {
        return None;
    }
    let mut map = serde_json::Map::new();
    map.extend(
        record
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone()))),
    );
    let text = String::from_utf8(serde_json::to_vec(&Value::Object(map)).ok()?).ok()?;
    let key = escape_token(ADDED_ANNOTATION);
    let annotations = object.get("metadata").and_then(|m| m.get("annotations"));
    Some(match annotations {
        Some(Value::Object(map)) if map.contains_key(ADDED_ANNOTATION) => {
            PatchOp::replace(format!("/metadata/annotations/{key}"), json!(text))
        }
        Some(Value::Object(_)) => PatchOp::new(format!("/metadata/annotations/{key}"), json!(text)),
        _ if object.get("metadata").is_some_and(Value::is_object) => PatchOp::new(
            "/metadata/annotations".into(),
            json!({ ADDED_ANNOTATION: text }),
        ),
        _ => PatchOp::new(
            "/metadata".into(),
            json!({"annotations": { ADDED_ANNOTATION: text }}),
        ),
    })
}
