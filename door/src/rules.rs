//! Which requests the policy's rules select (metadata.yml `rules`, which
//! the recommended ClusterAdmissionPolicy copies): the API server sends the
//! policy only those. Every door skips the others with the reason, as the
//! cluster never asks the policy about them: a ConfigMap is not rejected,
//! it is not the policy's business.
//!
//! The kinds come from the core ([`os_placement_core::SUPPORTED_KINDS`],
//! each in its API group): Pods on CREATE, and on UPDATE of their
//! `ephemeralcontainers` subresource; the workloads on CREATE and UPDATE.
//! The API server's default `matchPolicy: Equivalent` sends a request made
//! through another version of a selected resource converted, so the
//! version does not matter here. A test checks this against metadata.yml.

use os_placement_core::{Kind, Operation, SUPPORTED_KINDS};
use serde_json::Value;

/// The one subresource the rules select: `pods/ephemeralcontainers`, UPDATE.
pub const EPHEMERAL_CONTAINERS: &str = "ephemeralcontainers";

/// Every kind the rules select.
pub fn selected_kinds() -> Vec<Kind> {
    SUPPORTED_KINDS
        .split(", ")
        .filter_map(Kind::parse)
        .collect()
}

/// Why the policy's rules do not select a request: the API server does not
/// send it to the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSelected {
    /// A kind that is not one of the core's.
    #[error("{kind} is not one of the kinds the policy's rules select ({SUPPORTED_KINDS}): the API server does not send it to the policy")]
    Kind {
        /// The request's kind.
        kind: String,
    },
    /// A kind of the same name in another API group (a custom resource).
    #[error("{api_version} {kind} is not the Kubernetes {kind}: the policy's rules select {kind} in the API group {group:?} only")]
    Group {
        /// The request's group and version.
        api_version: String,
        /// The request's kind.
        kind: String,
        /// The group the rules select it in.
        group: &'static str,
    },
    /// No kind at all.
    #[error("the object names no kind")]
    NoKind,
    /// A Pod UPDATE other than through `ephemeralcontainers`.
    #[error("the policy's rules select an UPDATE of a Pod only through its ephemeralcontainers subresource (kubectl debug): the API server does not send other Pod updates to the policy")]
    PodUpdate,
    /// A subresource (`status`, `scale`, ...).
    #[error("the policy's rules do not select the {sub_resource} subresource of a {kind}: the API server does not send it to the policy")]
    SubResource {
        /// The subresource.
        sub_resource: String,
        /// The request's kind.
        kind: String,
    },
    /// DELETE or CONNECT.
    #[error("the policy's rules do not select {0}: the API server does not send it to the policy")]
    Operation(Operation),
    /// An operation word the API does not have.
    #[error("operation {0:?} is not an admission operation: CREATE, UPDATE, DELETE or CONNECT")]
    UnknownOperation(String),
}

/// The kind of a request the rules select, or why they do not select it.
pub fn select(request: &Value) -> Result<Kind, NotSelected> {
    let text = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (group, kind) = (text("/kind/group"), text("/kind/kind"));
    let selected = Kind::parse(kind).filter(|k| k.api_group() == group);
    let Some(selected) = selected else {
        return Err(kind_not_selected(group, text("/kind/version"), kind));
    };
    let Some(operation) = Operation::parse(text("/operation")) else {
        return Err(NotSelected::UnknownOperation(
            text("/operation").to_string(),
        ));
    };
    match (selected, operation, text("/subResource")) {
        (Kind::Pod, Operation::Create, "") => Ok(selected),
        (Kind::Pod, Operation::Update, EPHEMERAL_CONTAINERS) => Ok(selected),
        (Kind::Pod, Operation::Update, "") => Err(NotSelected::PodUpdate),
        (_, Operation::Create | Operation::Update, "") => Ok(selected),
        (_, Operation::Create | Operation::Update, sub) => Err(NotSelected::SubResource {
            sub_resource: sub.to_string(),
            kind: kind.to_string(),
        }),
        (_, other, _) => Err(NotSelected::Operation(other)),
    }
}

fn kind_not_selected(group: &str, version: &str, kind: &str) -> NotSelected {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    match Kind::parse(kind) {
        Some(known) => NotSelected::Group {
            api_version,
            kind: kind.to_string(),
            group: known.api_group(),
        },
        None if kind.is_empty() => NotSelected::NoKind,
        None => NotSelected::Kind {
            kind: kind.to_string(),
        },
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::admission_request;
    use serde_json::json;

    fn request(api_version: &str, kind: &str, operation: Operation, sub: Option<&str>) -> Value {
        let object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
        admission_request(&object, operation, None, sub)
    }

    #[test]
    fn workloads_on_create_and_update_pods_on_create_and_debug() {
        use Operation::*;
        for (api, kind) in [
            ("apps/v1", "Deployment"),
            ("batch/v1", "CronJob"),
            ("v1", "ReplicationController"),
        ] {
            for op in [Create, Update] {
                assert!(select(&request(api, kind, op, None)).is_ok(), "{kind} {op}");
            }
            assert!(
                select(&request(api, kind, Delete, None)).is_err(),
                "{kind} DELETE"
            );
            assert!(
                select(&request(api, kind, Update, Some("status"))).is_err(),
                "{kind} status"
            );
        }
        assert_eq!(select(&request("v1", "Pod", Create, None)), Ok(Kind::Pod));
        assert_eq!(
            select(&request("v1", "Pod", Update, Some(EPHEMERAL_CONTAINERS))),
            Ok(Kind::Pod)
        );
        let update = select(&request("v1", "Pod", Update, None)).unwrap_err();
        assert_eq!(update, NotSelected::PodUpdate);
        assert!(
            update.to_string().contains("ephemeralcontainers"),
            "{update}"
        );
        let connect = select(&request("v1", "Pod", Connect, None)).unwrap_err();
        assert!(connect.to_string().contains("CONNECT"), "{connect}");
    }

    #[test]
    fn other_kinds_and_groups_are_not_selected_and_say_why() {
        let config_map = select(&request("v1", "ConfigMap", Operation::Create, None))
            .unwrap_err()
            .to_string();
        assert!(
            config_map.starts_with("ConfigMap is not one of the kinds"),
            "{config_map}"
        );
        assert!(config_map.contains(SUPPORTED_KINDS));
        // A custom resource with a pod template, and one that is called Job.
        assert!(select(&request(
            "argoproj.io/v1alpha1",
            "Rollout",
            Operation::Create,
            None
        ))
        .is_err());
        let volcano = select(&request(
            "batch.volcano.sh/v1alpha1",
            "Job",
            Operation::Create,
            None,
        ))
        .unwrap_err()
        .to_string();
        assert!(
            volcano.contains("not the Kubernetes Job") && volcano.contains("\"batch\""),
            "{volcano}"
        );
        // Another version of a selected group is sent converted.
        assert!(select(&request(
            "apps/v1beta2",
            "Deployment",
            Operation::Create,
            None
        ))
        .is_ok());
    }

    #[test]
    fn the_selected_kinds_are_the_cores() {
        assert_eq!(selected_kinds().len(), SUPPORTED_KINDS.split(", ").count());
        assert!(selected_kinds().contains(&Kind::CronJob));
    }
}
