//! Realistic Kubernetes AdmissionRequests (`admission.k8s.io/v1`), as the API
//! server sends them and policy-server forwards them to the policy.

use serde_json::{json, Map, Value};

/// Splits an `apiVersion` into (group, version): `apps/v1` -> (`apps`, `v1`),
/// `v1` -> (``, `v1`).
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

/// A deterministic UUID-shaped request uid (FNV-1a of the inputs), so outputs
/// are reproducible.
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

fn options_for(operation: &str) -> Value {
    let kind = match operation {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        "DELETE" => "DeleteOptions",
        _ => return Value::Null,
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if operation != "DELETE" {
        if let Some(map) = options.as_object_mut() {
            map.insert(
                "fieldManager".to_owned(),
                json!("kubectl-client-side-apply"),
            );
            map.insert("fieldValidation".to_owned(), json!("Strict"));
        }
    }
    options
}

/// Builds the AdmissionRequest the API server would send for `object`.
///
/// * `kind`/`requestKind` come from the object's `apiVersion` and `kind`,
///   `resource`/`requestResource` from the kind's plural (`{group, version, resource}`,
///   as Kubernetes sends it).
/// * `name` and `namespace` come from `metadata` (`namespace` defaults to `default`).
/// * DELETE: as the API server does, `object` is null and `oldObject` is the
///   object being deleted (`old_object` if given, otherwise `object`).
/// * `sub_resource` (e.g. `ephemeralcontainers`) fills `subResource` and
///   `requestSubResource`.
pub fn admission_request(
    object: &Value,
    operation: &str,
    old_object: Option<&Value>,
    sub_resource: Option<&str>,
) -> Value {
    let api_version = str_at(object, &["apiVersion"]).unwrap_or_default();
    let kind = str_at(object, &["kind"]).unwrap_or_default();
    let (group, version) = group_version(api_version);
    let resource = resource_of(kind);
    let name = str_at(object, &["metadata", "name"]).unwrap_or_default();
    let namespace = str_at(object, &["metadata", "namespace"]).unwrap_or("default");
    let sub_resource = sub_resource.unwrap_or_default();

    let (object, old_object) = if operation == "DELETE" {
        (Value::Null, old_object.unwrap_or(object).clone())
    } else {
        (object.clone(), old_object.cloned().unwrap_or(Value::Null))
    };

    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let mut request = Map::new();
    request.insert(
        "uid".to_owned(),
        json!(request_uid(&[
            operation,
            api_version,
            kind,
            namespace,
            name,
            sub_resource
        ])),
    );
    request.insert("kind".to_owned(), gvk.clone());
    request.insert("resource".to_owned(), gvr.clone());
    if !sub_resource.is_empty() {
        request.insert("subResource".to_owned(), json!(sub_resource));
    }
    request.insert("requestKind".to_owned(), gvk);
    request.insert("requestResource".to_owned(), gvr);
    if !sub_resource.is_empty() {
        request.insert("requestSubResource".to_owned(), json!(sub_resource));
    }
    request.insert("name".to_owned(), json!(name));
    request.insert("namespace".to_owned(), json!(namespace));
    request.insert("operation".to_owned(), json!(operation));
    request.insert(
        "userInfo".to_owned(),
        json!({
            "username": "kubernetes-admin",
            "groups": ["kubeadm:cluster-admins", "system:authenticated"],
        }),
    );
    request.insert("object".to_owned(), object);
    request.insert("oldObject".to_owned(), old_object);
    request.insert("dryRun".to_owned(), json!(false));
    let options = options_for(operation);
    if !options.is_null() {
        request.insert("options".to_owned(), options);
    }
    Value::Object(request)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn deployment_request() {
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": {}
        });
        let request = admission_request(&object, "CREATE", None, None);
        assert_eq!(
            request["kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(
            request["resource"],
            json!({"group": "apps", "version": "v1", "resource": "deployments"})
        );
        assert_eq!(request["name"], "web");
        assert_eq!(request["namespace"], "shop");
        assert_eq!(request["object"], object);
        assert!(request["oldObject"].is_null());
        assert_eq!(request["dryRun"], false);
        assert!(request.get("subResource").is_none());
        let uid = request["uid"].as_str().unwrap();
        assert_eq!(uid.len(), 36, "{uid}");
        assert_eq!(uid, admission_request(&object, "CREATE", None, None)["uid"]);
    }

    #[test]
    fn delete_moves_object_to_old_object() {
        let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let request = admission_request(&object, "DELETE", None, None);
        assert!(request["object"].is_null());
        assert_eq!(request["oldObject"], object);
        assert_eq!(request["namespace"], "default");
        assert_eq!(request["kind"]["group"], "");
        assert_eq!(request["options"]["kind"], "DeleteOptions");
    }

    #[test]
    fn ephemeral_containers_update() {
        let old = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let new = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}});
        let request = admission_request(&new, "UPDATE", Some(&old), Some("ephemeralcontainers"));
        assert_eq!(request["subResource"], "ephemeralcontainers");
        assert_eq!(request["requestSubResource"], "ephemeralcontainers");
        assert_eq!(request["oldObject"], old);
        assert_eq!(request["object"], new);
    }
}
