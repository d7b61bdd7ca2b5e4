//! Realistic Kubernetes AdmissionRequests (`admission.k8s.io/v1`), as the API
//! server sends them and policy-server forwards them to the policy: built by
//! the door, the one request builder of every door.

use os_placement_core::Operation;
use serde_json::{json, Value};

pub use os_placement_door::request::{group_version, resource_of};

/// Builds the AdmissionRequest the API server would send for `object`
/// (see [`os_placement_door::request::Submission::request`]). `operation`
/// is the word the request carries; one that is not an admission operation
/// is kept as written, for tests of what the policy does with it.
pub fn admission_request(
    object: &Value,
    operation: &str,
    old_object: Option<&Value>,
    sub_resource: Option<&str>,
) -> Value {
    let Some(parsed) = Operation::parse(operation) else {
        let mut request = os_placement_door::admission_request(
            object,
            Operation::Create,
            old_object,
            sub_resource,
        );
        if let Some(map) = request.as_object_mut() {
            map.insert("operation".to_owned(), json!(operation));
            map.remove("options");
        }
        return request;
    };
    os_placement_door::admission_request(object, parsed, old_object, sub_resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_door_builds_the_request_and_odd_operations_stay_as_written() {
        let object =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let request = admission_request(&object, "UPDATE", None, None);
        assert_eq!(
            request,
            os_placement_door::admission_request(&object, Operation::Update, None, None)
        );
        let odd = admission_request(&object, "PATCH", None, None);
        assert_eq!(odd["operation"], "PATCH");
        assert!(odd.get("options").is_none());
        assert_eq!(odd["resource"]["resource"], "deployments");
    }
}
