//! JSON Patch operations the policy applies to the request object.
//! The policy adds what is missing and never replaces or removes a value
//! the user set; `replace` and `remove` only touch entries it recorded as
//! its own (see `ownership`).

use serde::Serialize;
use serde_json::Value;

/// One RFC 6902 operation: `add`, `replace` or `remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchOp {
    /// `add`, `replace` or `remove`.
    pub op: &'static str,
    /// JSON Pointer (RFC 6901).
    pub path: String,
    /// The value; `null` (and not serialised) for `remove`.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub value: Value,
}

/// The operation the policy emits almost always.
pub type AddOp = PatchOp;

impl PatchOp {
    /// `add` of `value` at `pointer`.
    pub fn new(pointer: String, value: Value) -> Self {
        PatchOp {
            op: "add",
            path: pointer,
            value,
        }
    }

    /// `replace` of the value at `pointer`.
    pub fn replace(pointer: String, value: Value) -> Self {
        PatchOp {
            op: "replace",
            path: pointer,
            value,
        }
    }

    /// `remove` of the value at `pointer`.
    pub fn remove(pointer: String) -> Self {
        PatchOp {
            op: "remove",
            path: pointer,
            value: Value::Null,
        }
    }
}

/// Escapes one reference token of a JSON Pointer.
pub fn escape_token(token: &str) -> String {
    let mut escaped = String::with_capacity(token.len());
    push_escaped(&mut escaped, token);
    escaped
}

/// Appends `token` to `out`, escaped as one JSON Pointer reference token;
/// one pass, no copy when nothing needs escaping.
pub fn push_escaped(out: &mut String, token: &str) {
    let mut rest = token;
    while let Some(at) = rest.find(['~', '/']) {
        out.push_str(rest.get(..at).unwrap_or_default());
        out.push_str(if rest.get(at..at + 1) == Some("~") {
            "~0"
        } else {
            "~1"
        });
        rest = rest.get(at + 1..).unwrap_or_default();
    }
    out.push_str(rest);
}

/// Joins a pointer prefix and one unescaped token.
pub fn pointer_child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape_token(token))
}

/// Why an operation could not be applied; a bug guard, never expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub path: String,
}

/// Applies the operations in order.
pub fn apply(target: &mut Value, ops: &[PatchOp]) -> Result<(), PatchError> {
    for op in ops {
        apply_one(target, op).ok_or_else(|| PatchError {
            path: op.path.clone(),
        })?;
    }
    Ok(())
}

fn apply_one(target: &mut Value, op: &PatchOp) -> Option<()> {
    let (parent_pointer, last) = op.path.rsplit_once('/')?;
    let parent = target.pointer_mut(parent_pointer)?;
    let token = last.replace("~1", "/").replace("~0", "~");
    match (op.op, parent) {
        ("replace", Value::Object(map)) => {
            *map.get_mut(&token)? = op.value.clone();
            return Some(());
        }
        ("remove", Value::Object(map)) => return map.remove(&token).map(drop),
        ("add", _) => {}
        _ => return None,
    }
    let parent = target.pointer_mut(parent_pointer)?;
    match parent {
        Value::Object(map) => {
            map.insert(token, op.value.clone());
            Some(())
        }
        Value::Array(items) if token == "-" => {
            items.push(op.value.clone());
            Some(())
        }
        Value::Array(items) => {
            let index: usize = token.parse().ok()?;
            (index <= items.len()).then(|| items.insert(index, op.value.clone()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_slashes_and_tildes() {
        assert_eq!(escape_token("kubernetes.io/os"), "kubernetes.io~1os");
        assert_eq!(escape_token("a~b/c"), "a~0b~1c");
        assert_eq!(
            pointer_child("/spec/nodeSelector", "kubernetes.io/os"),
            "/spec/nodeSelector/kubernetes.io~1os"
        );
    }

    #[test]
    fn applies_object_and_array_adds() {
        let mut doc = json!({"spec": {"nodeSelector": {"a": "b"}, "tolerations": [1]}});
        let ops = vec![
            AddOp::new(
                "/spec/nodeSelector/kubernetes.io~1os".into(),
                json!("linux"),
            ),
            AddOp::new("/spec/tolerations/-".into(), json!(2)),
            AddOp::new("/spec/os".into(), json!({"name": "linux"})),
        ];
        apply(&mut doc, &ops).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"nodeSelector": {"a": "b", "kubernetes.io/os": "linux"},
                            "tolerations": [1, 2], "os": {"name": "linux"}}})
        );
    }

    #[test]
    fn replaces_and_removes_object_members_only_when_present() {
        let mut doc = json!({"spec": {"nodeSelector": {"a": "b", "c": "d"}}});
        let ops = vec![
            PatchOp::replace("/spec/nodeSelector/a".into(), json!("x")),
            PatchOp::remove("/spec/nodeSelector/c".into()),
        ];
        apply(&mut doc, &ops).unwrap();
        assert_eq!(doc, json!({"spec": {"nodeSelector": {"a": "x"}}}));
        let missing = [PatchOp::replace("/spec/nodeSelector/zz".into(), json!(1))];
        assert!(apply(&mut doc, &missing).is_err());
        assert!(apply(&mut doc, &[PatchOp::remove("/spec/nodeSelector/zz".into())]).is_err());
        let remove = serde_json::to_value(PatchOp::remove("/a".into())).unwrap();
        assert_eq!(remove, json!({"op": "remove", "path": "/a"}));
    }

    #[test]
    fn missing_parent_is_an_error_not_a_panic() {
        let mut doc = json!({"spec": 3});
        let ops = vec![AddOp::new("/spec/x/y".into(), json!(1))];
        assert_eq!(
            apply(&mut doc, &ops),
            Err(PatchError {
                path: "/spec/x/y".into()
            })
        );
    }
}
