//! The AdmissionRequest (`admission.k8s.io/v1`) the API server sends for an
//! object, as policy-server forwards it to the policy. Every door builds
//! its requests here.

use os_placement_core::Operation;
use serde_json::{json, Map, Value};

/// What the API server is asked to do: the object, the operation, the
/// object before an UPDATE and the subresource, if any.
#[derive(Debug, Clone, Copy)]
pub struct Submission<'a> {
    /// The object as sent (for DELETE: the object being deleted).
    pub object: &'a Value,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: Operation,
    /// The object before an UPDATE (or the one deleted).
    pub old_object: Option<&'a Value>,
    /// A subresource, e.g. `ephemeralcontainers`.
    pub sub_resource: Option<&'a str>,
}

/// Splits an `apiVersion` into (group, version): `apps/v1` is (`apps`,
/// `v1`), `v1` is (``, `v1`).
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

/// The resource (plural, lower case) of a kind, as the API server names it.
pub fn resource_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => lower,
        _ if lower.ends_with('s') || lower.ends_with("sh") || lower.ends_with("ch") => {
            format!("{lower}es")
        }
        _ if lower.ends_with('y')
            && !lower.ends_with("ay")
            && !lower.ends_with("ey")
            && !lower.ends_with("oy") =>
        {
            format!("{}ies", lower.trim_end_matches('y'))
        }
        _ => format!("{lower}s"),
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
}

/// A deterministic UUID-shaped request uid (FNV-1a of the inputs), so the
/// same input gives the same request.
fn request_uid(parts: &[&str]) -> String {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in parts
        .iter()
        .flat_map(|p| p.bytes().chain(std::iter::once(0)))
    {
        hash ^= u128::from(byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    let hex = format!("{hash:032x}");
    let part = |range: std::ops::Range<usize>| hex.get(range).unwrap_or("0").to_owned();
    format!(
        "{}-{}-4{}-8{}-{}",
        part(0..8),
        part(8..12),
        part(13..16),
        part(17..20),
        part(20..32)
    )
}

/// `options` as the API server sends them: `CreateOptions`, `UpdateOptions`
/// (as `kubectl apply` sets them) or `DeleteOptions`; none for CONNECT.
fn options_for(operation: Operation) -> Option<Value> {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return None,
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if operation != Operation::Delete {
        if let Some(map) = options.as_object_mut() {
            map.insert("fieldManager".into(), json!("kubectl-client-side-apply"));
            map.insert("fieldValidation".into(), json!("Strict"));
        }
    }
    Some(options)
}

impl Submission<'_> {
    /// The AdmissionRequest the API server would send:
    ///
    /// * `kind`/`requestKind` from the object's `apiVersion` and `kind`,
    ///   `resource`/`requestResource` from the kind's plural;
    /// * `name` and `namespace` from `metadata` (`namespace` defaults to `default`);
    /// * DELETE: `object` is null and `oldObject` the object being deleted;
    /// * `subResource`/`requestSubResource` when there is one;
    /// * `userInfo` of a cluster admin, `dryRun` false, the operation's `options`.
    pub fn request(&self) -> Value {
        let object = self.object;
        let api_version = str_at(object, &["apiVersion"]).unwrap_or_default();
        let kind = str_at(object, &["kind"]).unwrap_or_default();
        let (group, version) = group_version(api_version);
        let name = str_at(object, &["metadata", "name"]).unwrap_or_default();
        let namespace = str_at(object, &["metadata", "namespace"]).unwrap_or("default");
        let sub_resource = self.sub_resource.unwrap_or_default();
        let operation = self.operation.as_str();
        let (object, old_object) = if self.operation == Operation::Delete {
            (Value::Null, self.old_object.unwrap_or(object).clone())
        } else {
            (
                object.clone(),
                self.old_object.cloned().unwrap_or(Value::Null),
            )
        };
        let gvk = json!({"group": group, "version": version, "kind": kind});
        let gvr = json!({"group": group, "version": version, "resource": resource_of(kind)});
        let uid = request_uid(&[operation, api_version, kind, namespace, name, sub_resource]);
        let mut request = Map::new();
        request.insert("uid".into(), json!(uid));
        request.insert("kind".into(), gvk.clone());
        request.insert("resource".into(), gvr.clone());
        request.insert("requestKind".into(), gvk);
        request.insert("requestResource".into(), gvr);
        if !sub_resource.is_empty() {
            request.insert("subResource".into(), json!(sub_resource));
            request.insert("requestSubResource".into(), json!(sub_resource));
        }
        request.insert("name".into(), json!(name));
        request.insert("namespace".into(), json!(namespace));
        request.insert("operation".into(), json!(operation));
        request.insert(
            "userInfo".into(),
            json!({"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}),
        );
        request.insert("object".into(), object);
        request.insert("oldObject".into(), old_object);
        request.insert("dryRun".into(), json!(false));
        if let Some(options) = options_for(self.operation) {
            request.insert("options".into(), options);
        }
        Value::Object(request)
    }
}

/// The request Kubewarden's audit scanner sends about a live `object`, as
/// kubewarden-controller builds it
/// (`internal/audit-scanner/scanner/admission_request.go`,
/// `newAdmissionRequest`) and Go writes it: `CREATE`, the object's UID as
/// the request's, `resource.resource` set to the Kind, an empty
/// `userInfo`, no `oldObject` or `options`.
pub fn audit_request(object: &Value) -> Value {
    let api_version = str_at(object, &["apiVersion"]).unwrap_or_default();
    let kind = str_at(object, &["kind"]).unwrap_or_default();
    let (group, version) = group_version(api_version);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let mut request = Map::new();
    let metadata = |key: &str| str_at(object, &["metadata", key]).unwrap_or_default();
    request.insert("uid".into(), json!(metadata("uid")));
    request.insert("kind".into(), gvk.clone());
    request.insert(
        "resource".into(),
        json!({"group": group, "version": version, "resource": kind}),
    );
    request.insert("requestKind".into(), gvk);
    request.insert("name".into(), json!(metadata("name")));
    if !metadata("namespace").is_empty() {
        request.insert("namespace".into(), json!(metadata("namespace")));
    }
    request.insert("operation".into(), json!("CREATE"));
    request.insert("userInfo".into(), json!({}));
    request.insert("object".into(), object.clone());
    request.insert("oldObject".into(), Value::Null);
    request.insert("options".into(), Value::Null);
    Value::Object(request)
}

/// The AdmissionRequest for `object`: see [`Submission::request`].
pub fn admission_request(
    object: &Value,
    operation: Operation,
    old_object: Option<&Value>,
    sub_resource: Option<&str>,
) -> Value {
    Submission {
        object,
        operation,
        old_object,
        sub_resource,
    }
    .request()
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {

    #[test]
    fn audit_requests_are_shaped_as_the_audit_scanner_builds_them() {
        let object = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "ops", "uid": "4f1c"}});
        let request = audit_request(&object);
        assert_eq!(request["uid"], "4f1c");
        assert_eq!(request["operation"], "CREATE");
        assert_eq!(
            request["resource"],
            json!({"group": "apps", "version": "v1", "resource": "DaemonSet"})
        );
        assert_eq!(request["requestKind"], request["kind"]);
        assert_eq!(request["userInfo"], json!({}));
        assert_eq!(request["namespace"], "ops");
        assert_eq!(request["object"], object);
        assert!(request.get("requestResource").is_none() && request.get("dryRun").is_none());
        let cluster_scoped = audit_request(&json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n"}}));
        assert!(cluster_scoped.get("namespace").is_none());
        assert_eq!(cluster_scoped["resource"]["group"], "");
    }
    use super::*;

    /// Plurals as the API server serves them (`kubectl api-resources`).
    #[test]
    fn plurals() {
        assert_eq!(resource_of("Pod"), "pods");
        assert_eq!(
            resource_of("ReplicationController"),
            "replicationcontrollers"
        );
        assert_eq!(resource_of("CronJob"), "cronjobs");
        assert_eq!(resource_of("NetworkPolicy"), "networkpolicies");
        assert_eq!(resource_of("Ingress"), "ingresses");
        assert_eq!(resource_of("Gateway"), "gateways");
        assert_eq!(resource_of("Endpoints"), "endpoints");
    }

    /// An AdmissionRequest as the Kubernetes admission webhook docs show it.
    #[test]
    fn deployment_request() {
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": {}
        });
        let request = admission_request(&object, Operation::Create, None, None);
        assert_eq!(
            request["kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(request["requestKind"], request["kind"]);
        assert_eq!(
            request["resource"],
            json!({"group": "apps", "version": "v1", "resource": "deployments"})
        );
        assert_eq!(request["requestResource"], request["resource"]);
        assert_eq!(
            (request["name"].as_str(), request["namespace"].as_str()),
            (Some("web"), Some("shop"))
        );
        assert_eq!(request["operation"], "CREATE");
        assert_eq!(request["object"], object);
        assert!(request["oldObject"].is_null());
        assert_eq!(request["dryRun"], false);
        assert_eq!(request["options"]["kind"], "CreateOptions");
        assert_eq!(request["userInfo"]["username"], "kubernetes-admin");
        assert!(request.get("subResource").is_none());
        let uid = request["uid"].as_str().unwrap();
        assert_eq!(uid.len(), 36, "{uid}");
        assert_eq!(
            uid,
            admission_request(&object, Operation::Create, None, None)["uid"]
        );
        assert_ne!(
            uid,
            admission_request(&object, Operation::Update, None, None)["uid"]
        );
    }

    #[test]
    fn delete_moves_object_to_old_object() {
        let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let request = admission_request(&object, Operation::Delete, None, None);
        assert!(request["object"].is_null());
        assert_eq!(request["oldObject"], object);
        assert_eq!(request["namespace"], "default");
        assert_eq!(request["kind"]["group"], "");
        assert_eq!(request["options"]["kind"], "DeleteOptions");
        assert!(request["options"].get("fieldManager").is_none());
        let connect = admission_request(&object, Operation::Connect, None, None);
        assert!(connect.get("options").is_none());
    }

    #[test]
    fn ephemeral_containers_update() {
        let old = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let new = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}});
        let request = admission_request(
            &new,
            Operation::Update,
            Some(&old),
            Some("ephemeralcontainers"),
        );
        assert_eq!(request["subResource"], "ephemeralcontainers");
        assert_eq!(request["requestSubResource"], "ephemeralcontainers");
        assert_eq!(request["oldObject"], old);
        assert_eq!(request["object"], new);
        assert_eq!(request["options"]["kind"], "UpdateOptions");
    }
}
