//! JSON Patch operations the policy applies to the request object.
//! The policy adds what is missing and never replaces or removes a value
//! the user set; `replace` and `remove` only touch entries it recorded as
//! its own (see `ownership`).

use std::borrow::Cow;

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
    /// The JSON Pointer of the operation that failed.
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
    let parent = pointer_mut(target, parent_pointer)?;
    let token = unescape(last);
    match (op.op, parent) {
        ("replace", Value::Object(map)) => {
            *map.get_mut(token.as_ref())? = op.value.clone();
            Some(())
        }
        ("remove", Value::Object(map)) => map.remove(token.as_ref()).map(drop),
        ("add", Value::Object(map)) => {
            map.insert(token.into_owned(), op.value.clone());
            Some(())
        }
        ("add", Value::Array(items)) if token == "-" => {
            items.push(op.value.clone());
            Some(())
        }
        ("add", Value::Array(items)) => {
            let index = array_index(&token)?;
            (index <= items.len()).then(|| items.insert(index, op.value.clone()))
        }
        _ => None,
    }
}

/// The value at `pointer` (RFC 6901). Unlike `Value::pointer_mut`, a token
/// is only copied when it holds an escape.
fn pointer_mut<'v>(target: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    if pointer.is_empty() {
        return Some(target);
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .try_fold(target, |value, token| match value {
            Value::Object(map) => map.get_mut(unescape(token).as_ref()),
            Value::Array(items) => items.get_mut(array_index(token)?),
            _ => None,
        })
}

fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// An array index token: decimal digits, no sign, no leading zero (RFC 6901).
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
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
    fn pointers_unescape_tokens_and_read_array_indices_strictly() {
        let mut doc = json!({"m": {"a/b": {"c~d": [10, {"x": 1}]}}});
        assert_eq!(
            pointer_mut(&mut doc, "/m/a~1b/c~0d/1/x"),
            Some(&mut json!(1))
        );
        assert_eq!(pointer_mut(&mut doc, "").map(|v| v.is_object()), Some(true));
        for bad in [
            "m",
            "/m/a/b",
            "/m/a~1b/c~0d/01",
            "/m/a~1b/c~0d/+1",
            "/m/a~1b/c~0d/2",
        ] {
            assert_eq!(pointer_mut(&mut doc, bad), None, "{bad}");
        }
        let ops = [AddOp::new("/m/a~1b/c~0d/1/y~1z".into(), json!(2))];
        apply(&mut doc, &ops).unwrap();
        assert_eq!(doc["m"]["a/b"]["c~d"][1], json!({"x": 1, "y/z": 2}));
        let insert = [AddOp::new("/m/a~1b/c~0d/0".into(), json!(9))];
        apply(&mut doc, &insert).unwrap();
        assert_eq!(doc["m"]["a/b"]["c~d"][0], json!(9));
        let past_end = [AddOp::new("/m/a~1b/c~0d/4".into(), json!(9))];
        assert!(apply(&mut doc, &past_end).is_err());
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
