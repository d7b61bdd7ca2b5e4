//! From documents to the AdmissionRequests the policy would receive.

use os_placement_core::{evaluate_request, Decision, Settings, SettingsError};
use serde_json::{json, Value};

use crate::tree::{Node, Val};

/// One object to evaluate, and the request it came in, if it came in one.
#[derive(Debug, Clone)]
pub struct Subject {
    pub object: Node,
    /// The `request` of a pasted AdmissionReview.
    pub review_request: Option<Value>,
}

/// Every object of the documents: `kind: List` items are expanded, empty
/// documents skipped, an AdmissionReview taken as its request.
pub fn subjects(docs: Vec<Node>) -> Vec<Subject> {
    let mut out = Vec::new();
    for doc in docs {
        let kind = doc.get("kind").map(Node::to_json);
        match kind.as_ref().and_then(Value::as_str) {
            _ if doc.value == Val::Null => {}
            Some("List") | Some("PodList") => {
                if let Some(Val::Seq(items)) = doc.get("items").map(|n| &n.value) {
                    out.extend(items.iter().map(|item| Subject {
                        object: item.clone(),
                        review_request: None,
                    }));
                }
            }
            Some("AdmissionReview") => {
                let request = doc.get("request");
                let object = request
                    .and_then(|r| r.get("object"))
                    .or(request)
                    .unwrap_or(&doc);
                out.push(Subject {
                    object: object.clone(),
                    review_request: Some(request.map(Node::to_json).unwrap_or(Value::Null)),
                });
            }
            _ => out.push(Subject {
                object: doc,
                review_request: None,
            }),
        }
    }
    out
}

/// The AdmissionRequest for a subject: its own when it came in a review,
/// else one built from the object as the API server would.
pub fn admission_request(subject: &Subject, operation: &str, old_object: Option<&Value>) -> Value {
    if let Some(request) = &subject.review_request {
        return request.clone();
    }
    let object = subject.object.to_json();
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
    let (group, version) = match text("apiVersion").split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", text("apiVersion")),
    };
    json!({
        "kind": {"group": group, "version": version, "kind": text("kind")},
        "operation": if operation.is_empty() { "CREATE" } else { operation },
        "object": object,
        "oldObject": old_object.cloned().unwrap_or(Value::Null),
    })
}

/// The core's decision on one request.
pub fn evaluate(request: &Value, settings: &Settings) -> Decision {
    evaluate_request(request, settings)
}

/// Each settings problem as (field path, message).
pub fn settings_problems(error: &SettingsError) -> Vec<(String, String)> {
    error
        .problems
        .iter()
        .map(|p| {
            let message = if p.fix.is_empty() {
                p.message.clone()
            } else {
                format!("{}; {}", p.message, p.fix)
            };
            (p.path.clone(), message)
        })
        .collect()
}
