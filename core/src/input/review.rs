//! The admission review: the operation, the kind, the object and the old
//! object, and where the object keeps its pod spec.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::pod::malformed;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::FieldPath;
use crate::vocab::kinds::Kind;

/// The admission operation, as `AdmissionRequest.operation` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`
    Create,
    /// `UPDATE`
    Update,
    /// `DELETE`
    Delete,
    /// `CONNECT`
    Connect,
}

impl Operation {
    /// Parses the exact upper-case name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Operation> {
        Some(match s {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            "CONNECT" => Operation::Connect,
            _ => return None,
        })
    }

    /// The name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = Diagnostic;

    fn from_str(s: &str) -> Result<Operation, Diagnostic> {
        Operation::parse(s).ok_or_else(|| {
            Diagnostic::new(
                Code::UnsupportedKind,
                "operation",
                format!("{s:?} is not an admission operation"),
                "send CREATE, UPDATE, DELETE or CONNECT",
            )
        })
    }
}

/// Who sent the request: the API server admitting a change, or
/// Kubewarden's audit scanner asking about an object that already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// The API server, for a change being made.
    #[default]
    Admission,
    /// The audit scanner, for a live object: its report shows a failure
    /// only when the answer is a rejection, so nothing is patched.
    Audit,
}

impl Origin {
    /// Tells the audit scanner's requests from the API server's.
    ///
    /// The scanner (kubewarden-controller,
    /// `internal/audit-scanner/scanner/admission_request.go`,
    /// `newAdmissionRequest`) sets `resource.resource` to the object's Kind
    /// (`Deployment`) and sends no `userInfo`. The API server always names
    /// the lower-case plural resource (`deployments`) and the user, even
    /// `system:anonymous`. Both marks are required.
    pub fn of_request(request: &Value) -> Origin {
        let text = |outer: &str, inner: &str| {
            request
                .get(outer)
                .and_then(|v| v.get(inner))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let kind = text("kind", "kind");
        let resource_is_kind = !kind.is_empty() && text("resource", "resource") == kind;
        if resource_is_kind && text("userInfo", "username").is_empty() {
            Origin::Audit
        } else {
            Origin::Admission
        }
    }
}

/// The parts of an admission request the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    /// `kind.kind` of the request, e.g. `Deployment`.
    pub kind: &'a str,
    /// What the API server is doing with the object.
    pub operation: Operation,
    /// The object under review.
    pub object: &'a Value,
    /// The object before an UPDATE.
    pub old_object: Option<&'a Value>,
    /// Who asks: admission, or the audit scanner.
    pub origin: Origin,
}

impl<'a> Review<'a> {
    /// Reads a Kubernetes AdmissionRequest (`kind.kind`, `operation`,
    /// `object`, `oldObject`, and who sent it); an unknown operation is an
    /// error naming it.
    pub fn from_admission_request(request: &'a Value) -> Result<Review<'a>, Diagnostic> {
        let operation = request
            .get("operation")
            .and_then(Value::as_str)
            .unwrap_or("")
            .parse()?;
        Ok(Review {
            // Two lookups: `Value::pointer` allocates for each token.
            kind: request
                .get("kind")
                .and_then(|kind| kind.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or(""),
            operation,
            object: request.get("object").unwrap_or(&Value::Null),
            old_object: request.get("oldObject").filter(|v| !v.is_null()),
            origin: Origin::of_request(request),
        })
    }
}

/// The pod spec of `object` and its path, by kind; a diagnostic naming the
/// missing or malformed field otherwise.
pub fn locate_pod_spec(object: &Value, kind: Kind) -> Result<(&Value, FieldPath), Diagnostic> {
    let mut path = FieldPath::root();
    let mut current = object;
    if !current.is_object() {
        return Err(malformed(
            &FieldPath::root().field("object"),
            "an object",
            current,
        ));
    }
    for field in kind.pod_spec_fields() {
        path = path.field(field);
        current = match current.get(field) {
            Some(next @ Value::Object(_)) => next,
            Some(other) => return Err(malformed(&path, "an object", other)),
            None => {
                return Err(Diagnostic::new(
                    Code::MalformedObject,
                    path.display(),
                    "is missing, so there is no pod spec to place",
                    format!("add {path} as the Kubernetes API requires for a {kind:?}"),
                ))
            }
        };
    }
    Ok((current, path))
}

/// An object's controller, as its `ownerReferences` entry with
/// `controller: true` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Controller<'a> {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// `kind`, e.g. `ReplicaSet`.
    pub kind: &'a str,
    /// `name`.
    pub name: &'a str,
}

/// The controller of `object`, if one owns it.
pub fn controller_of(object: &Value) -> Option<Controller<'_>> {
    let owners = object.get("metadata")?.get("ownerReferences")?.as_array()?;
    let owner = owners
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))?;
    let text = |key: &str| owner.get(key).and_then(Value::as_str);
    Some(Controller {
        api_version: text("apiVersion").unwrap_or_default(),
        kind: text("kind")?,
        name: text("name")?,
    })
}
