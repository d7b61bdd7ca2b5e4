//! The Kubewarden waPC protocol, independent of the placement rules.

use os_placement_e2e::admission_request;
use serde_json::{json, Value};

use super::host;

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
    })
}

/// The policy answered (no waPC error, no trap) with a rejection carrying a message.
fn assert_rejected(payload: &[u8], what: &str) {
    let response = host()
        .validate_raw(payload)
        .unwrap_or_else(|e| panic!("{what}: the policy failed instead of rejecting: {e:#}"));
    assert!(!response.accepted, "{what}: accepted: {response:?}");
    assert!(
        !response.message().trim().is_empty(),
        "{what}: rejection without a message: {response:?}"
    );
}

#[test]
fn protocol_version_is_v1() {
    assert_eq!(host().protocol_version().unwrap(), "v1");
}

#[test]
fn empty_settings_are_valid() {
    let answer = host().validate_settings(&json!({})).unwrap();
    assert!(answer.valid, "{answer:?}");
}

#[test]
fn unknown_setting_is_rejected_by_name() {
    let answer = host().validate_settings(&json!({"bogus": 1})).unwrap();
    assert!(!answer.valid, "{answer:?}");
    let message = answer.message.unwrap_or_default();
    assert!(
        message.contains("bogus"),
        "message does not name the key: {message:?}"
    );
}

#[test]
fn payload_not_json_is_rejected() {
    assert_rejected(b"this is not JSON", "payload not JSON");
}

#[test]
fn payload_without_request_is_rejected() {
    assert_rejected(br#"{"settings": {}}"#, "payload without request");
}

#[test]
fn object_that_is_a_string_is_rejected() {
    let mut request = admission_request(&pod(), "CREATE", None, None);
    request["object"] = json!("a string");
    let payload = serde_json::to_vec(&json!({"request": request, "settings": {}})).unwrap();
    assert_rejected(&payload, "object is a string");
}

#[test]
fn unknown_kind_is_rejected() {
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"key": "value"}
    });
    let request = admission_request(&config_map, "CREATE", None, None);
    let payload = serde_json::to_vec(&json!({"request": request, "settings": {}})).unwrap();
    assert_rejected(&payload, "kind ConfigMap");
}

#[test]
fn delete_is_accepted_untouched() {
    let request = admission_request(&pod(), "DELETE", None, None);
    let evaluation = host().validate(&request, &json!({})).unwrap();
    assert!(evaluation.response.accepted, "{:?}", evaluation.response);
    assert_eq!(evaluation.response.mutated_object, None);
    assert!(evaluation.patch.is_none());
}
