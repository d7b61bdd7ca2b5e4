//! Documents to the objects the API server would receive: a document is an
//! object, every `*List` (`List`, or a typed list such as `DeploymentList`
//! as `kubectl get -o yaml` prints it) stands for its items, and an
//! AdmissionReview for the object of its request. A null document holds
//! none; anything else that is not a Kubernetes object is named as such.

use serde::Serialize;
use serde_json::Value;

use crate::node::{Data, Node};
use crate::review::{is_review, judged_object_pointer, review_request};
use crate::stream::Document;

/// Where an object is in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// 1-based number of its document.
    pub document: usize,
    /// Its index in a list's `items`, when it is one.
    pub item: Option<usize>,
    /// Line where it starts.
    pub line: usize,
    /// Column where it starts.
    pub column: usize,
}

/// One object of the input.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    /// Where it is.
    pub at: Location,
    /// Its JSON Pointer within its document: `""` (the document),
    /// `/items/3` (a list item) or `/request/object` (an AdmissionReview).
    pub pointer: String,
    /// The object as written, with spans.
    pub node: Node,
    /// The object as JSON.
    pub object: Value,
    /// The `request` of the AdmissionReview it came in, taken as it is.
    pub review_request: Option<Value>,
}

/// A document or list item that is not a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnObject {
    /// Where it is.
    pub at: Location,
    /// What it is instead, and what is expected.
    pub message: String,
}

/// What a document holds: objects, or something that is not one.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// An object to evaluate.
    Object(Box<Subject>),
    /// Not a Kubernetes object.
    NotAnObject(NotAnObject),
}

/// The objects of a document, in order.
pub fn objects(document: &Document) -> Vec<Found> {
    let root = &document.root;
    let at = |node: &Node, item: Option<usize>| Location {
        document: document.number,
        item,
        line: node.span.at.line,
        column: node.span.at.column,
    };
    if matches!(root.data, Data::Null) {
        return Vec::new();
    }
    if let Err(malformed) = check_object(root, "document") {
        return vec![not_an_object(at(root, None), malformed.to_string())];
    }
    let json = root.to_json();
    if is_review(&json) {
        return vec![review_subject(root, &json, |node| at(node, None))];
    }
    let kind = root.text("kind").unwrap_or("");
    match root.get("items").filter(|_| kind.ends_with("List")) {
        None => vec![subject(at(root, None), String::new(), root, json, None)],
        Some(Node {
            data: Data::Seq(items),
            ..
        }) => items
            .iter()
            .enumerate()
            .map(
                |(i, item)| match check_object(item, &format!("items[{i}]")) {
                    Ok(()) => subject(
                        at(item, Some(i)),
                        format!("/items/{i}"),
                        item,
                        item.to_json(),
                        None,
                    ),
                    Err(malformed) => not_an_object(at(item, Some(i)), malformed.to_string()),
                },
            )
            .collect(),
        Some(items) => vec![not_an_object(
            at(items, None),
            format!("{kind}: items is {}, not a list", type_name(&items.data)),
        )],
    }
}

fn subject(
    at: Location,
    pointer: String,
    node: &Node,
    object: Value,
    review_request: Option<Value>,
) -> Found {
    Found::Object(Box::new(Subject {
        at,
        pointer,
        node: node.clone(),
        object,
        review_request,
    }))
}

fn not_an_object(at: Location, message: String) -> Found {
    Found::NotAnObject(NotAnObject { at, message })
}

/// An AdmissionReview: its request as it is, judged on its object (or the
/// old object of a DELETE), which is where the answer points.
fn review_subject(root: &Node, review: &Value, at: impl Fn(&Node) -> Location) -> Found {
    let request = match review_request(review) {
        Ok(request) => request,
        Err(e) => return not_an_object(at(root), e.to_string()),
    };
    let pointer = format!("/request{}", judged_object_pointer(request));
    let node = root.at_pointer(&pointer).unwrap_or(root);
    let object = review.pointer(&pointer).cloned().unwrap_or(Value::Null);
    subject(at(node), pointer, node, object, Some(request.clone()))
}

/// How a document or list item falls short of a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Malformed {
    #[error(
        "{what} is {found}, not a Kubernetes object: expected a mapping with apiVersion and kind"
    )]
    NotAMapping { what: String, found: &'static str },
    #[error("{what} is not a Kubernetes object: {field} is {found}, expected a non-empty string")]
    Field {
        what: String,
        field: &'static str,
        found: &'static str,
    },
    #[error("{what} is not a Kubernetes object: {field} is missing")]
    Missing { what: String, field: &'static str },
}

/// A Kubernetes object is a mapping with a non-empty `apiVersion` and `kind`.
fn check_object(node: &Node, what: &str) -> Result<(), Malformed> {
    if !matches!(node.data, Data::Map(_)) {
        return Err(Malformed::NotAMapping {
            what: what.to_string(),
            found: type_name(&node.data),
        });
    }
    for field in ["apiVersion", "kind"] {
        match node.get(field).map(|n| &n.data) {
            Some(Data::Str(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err(Malformed::Field {
                    what: what.to_string(),
                    field,
                    found: type_name(other),
                })
            }
            None => {
                return Err(Malformed::Missing {
                    what: what.to_string(),
                    field,
                })
            }
        }
    }
    Ok(())
}

/// A value's type in words, for messages.
pub fn type_name(data: &Data) -> &'static str {
    match data {
        Data::Null => "null",
        Data::Bool(_) => "a boolean",
        Data::Int(_) | Data::Uint(_) | Data::Float(_) => "a number",
        Data::Str(s) if s.is_empty() => "an empty string",
        Data::Str(_) => "a string",
        Data::Seq(_) => "a list",
        Data::Map(_) => "a mapping",
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_stream;

    fn found(text: &str) -> Vec<Found> {
        read_stream(text)
            .into_iter()
            .flat_map(|d| objects(&d.unwrap()))
            .collect()
    }

    fn subject_of(found: &Found) -> &Subject {
        match found {
            Found::Object(s) => s,
            Found::NotAnObject(n) => panic!("{n:?}"),
        }
    }

    #[test]
    fn lists_and_typed_lists_are_expanded_item_by_item() {
        for kind in ["List", "DeploymentList"] {
            let text = format!("apiVersion: v1\nkind: {kind}\nitems:\n- {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: a}}}}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {{name: b}}\n");
            let all = found(&text);
            assert_eq!(all.len(), 2, "{kind}");
            let b = subject_of(&all[1]);
            assert_eq!(b.pointer, "/items/1");
            assert_eq!((b.at.item, b.at.line, b.at.column), (Some(1), 5, 3));
            assert_eq!(b.object["metadata"]["name"], "b");
        }
        // A kind that merely ends in List, without items, is an object.
        let shopping = found("apiVersion: example.com/v1\nkind: ShoppingList\nspec: {}\n");
        assert_eq!(subject_of(&shopping[0]).pointer, "");
    }

    #[test]
    fn an_admission_review_is_its_request_judged_on_its_object() {
        let text = "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: u1\n  operation: UPDATE\n  kind: {group: apps, version: v1, kind: Deployment}\n  object:\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n  oldObject: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}\n";
        let all = found(text);
        let review = subject_of(&all[0]);
        assert_eq!(review.pointer, "/request/object");
        assert_eq!(review.object["metadata"]["name"], "web");
        let request = review.review_request.as_ref().unwrap();
        assert_eq!(
            (request["uid"].as_str(), request["operation"].as_str()),
            (Some("u1"), Some("UPDATE"))
        );
        assert_eq!(review.node.span.at.line, 8, "where the object is written");
        let delete = found("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest: {operation: DELETE, object: null, oldObject: {apiVersion: v1, kind: Pod}}\n");
        assert_eq!(subject_of(&delete[0]).pointer, "/request/oldObject");
        let empty = found("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\n");
        assert!(matches!(&empty[0], Found::NotAnObject(n) if n.message.starts_with("request:")));
    }

    #[test]
    fn null_documents_hold_nothing_and_non_objects_are_named() {
        assert!(found("---\nnull\n---\n~\n").is_empty());
        let all = found("- a\n- b\n---\nkind: Pod\n---\napiVersion: v1\nkind: List\nitems:\n- 3\n---\napiVersion: v1\nkind: List\nitems: 3\n");
        let messages: Vec<&str> = all
            .iter()
            .map(|f| match f {
                Found::NotAnObject(n) => n.message.as_str(),
                Found::Object(_) => "object",
            })
            .collect();
        assert_eq!(
            messages,
            [
                "document is a list, not a Kubernetes object: expected a mapping with apiVersion and kind",
                "document is not a Kubernetes object: apiVersion is missing",
                "items[0] is a number, not a Kubernetes object: expected a mapping with apiVersion and kind",
                "List: items is a number, not a list",
            ]
        );
    }
}
