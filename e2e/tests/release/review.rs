//! The policy-server-faithful host and its AdmissionReview front door
//! (`os-placement-eval --review`), checked against the admission.k8s.io/v1
//! AdmissionReview shape (k8s.io/api/admission/v1/types.go; `status` is a
//! metav1.Status and `patch` a base64 []byte, both from k8s-openapi).

use std::collections::BTreeMap;
use std::process::Command;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use k8s_openapi::ByteString;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, read_yaml, repo_root, LoadedPolicy};
use serde::Deserialize;
use serde_json::{json, Value};

use super::support::{annotated_module, write_annotated};

/// admission.k8s.io/v1 AdmissionReview; unknown fields are errors.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AdmissionReview {
    api_version: String,
    kind: String,
    #[serde(default)]
    request: Option<Value>,
    #[serde(default)]
    response: Option<AdmissionResponse>,
}

/// admission.k8s.io/v1 AdmissionResponse.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AdmissionResponse {
    uid: String,
    allowed: bool,
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    patch: Option<ByteString>,
    #[serde(default)]
    patch_type: Option<String>,
    #[serde(default)]
    audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

fn eks_settings() -> Value {
    read_yaml(&repo_root().join("examples/settings/eks.yaml")).unwrap()
}

fn policy() -> LoadedPolicy {
    LoadedPolicy::load(annotated_module(), eks_settings()).unwrap()
}

fn pod(containers: Value, node_selector: Option<Value>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "app", "namespace": "shop"},
        "spec": {"containers": containers}
    });
    if let Some(selector) = node_selector {
        pod["spec"]["nodeSelector"] = selector;
    }
    pod
}

fn typed(review: &Value) -> AdmissionResponse {
    let review: AdmissionReview = serde_json::from_value(review.clone())
        .unwrap_or_else(|e| panic!("not an admission.k8s.io/v1 AdmissionReview: {e}\n{review:#}"));
    assert_eq!(review.api_version, "admission.k8s.io/v1");
    assert_eq!(review.kind, "AdmissionReview");
    assert!(review.request.is_none(), "a response carries no request");
    review.response.expect("no response")
}

fn with_uid(mut request: Value, uid: &str) -> Value {
    request["uid"] = json!(uid);
    request
}

#[test]
fn patched_windows_pod() {
    let object = pod(
        json!([{"name": "web", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]),
        None,
    );
    let request = with_uid(
        admission_request(&object, "CREATE", None, None),
        "uid-windows-1",
    );
    let response = typed(&policy().review(&review_of(&request)).unwrap());
    assert_eq!(response.uid, "uid-windows-1");
    assert!(response.allowed);
    assert_eq!(response.patch_type.as_deref(), Some("JSONPatch"));
    assert!(response.status.is_none());
    let patch: Value = serde_json::from_slice(&response.patch.expect("no patch").0).unwrap();
    assert_eq!(
        patch,
        json!([
            {"op": "add", "path": "/spec/nodeSelector", "value": {
                "kubernetes.io/os": "windows",
                "node.kubernetes.io/windows-build": "10.0.20348"
            }},
            {"op": "add", "path": "/spec/tolerations", "value": [
                {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}
            ]}
        ])
    );
    // The patch applies to the request object and gives the placed pod.
    let mut placed = object.clone();
    json_patch::patch(
        &mut placed,
        &serde_json::from_value::<json_patch::Patch>(patch).unwrap(),
    )
    .unwrap();
    assert_eq!(placed["spec"]["containers"], object["spec"]["containers"]);
    assert!(response.warnings.unwrap_or_default().is_empty());
    assert!(response.audit_annotations.unwrap_or_default().is_empty());
}

#[test]
fn conflicting_pod_is_denied_with_its_message() {
    let object = pod(
        json!([{"name": "web", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]),
        Some(json!({"kubernetes.io/os": "linux"})),
    );
    let request = with_uid(
        admission_request(&object, "CREATE", None, None),
        "uid-conflict",
    );
    let response = typed(&policy().review(&review_of(&request)).unwrap());
    assert_eq!(response.uid, "uid-conflict");
    assert!(!response.allowed);
    assert!(response.patch.is_none() && response.patch_type.is_none());
    let message = response.status.and_then(|s| s.message).unwrap_or_default();
    assert!(message.contains("spec.nodeSelector"), "{message}");
    assert!(message.contains("spec.containers[0].image"), "{message}");
}

#[test]
fn delete_is_allowed_without_patch_or_status() {
    let object = pod(json!([{"name": "web", "image": "nginx:1.27"}]), None);
    let request = with_uid(
        admission_request(&object, "DELETE", None, None),
        "uid-delete",
    );
    let response = typed(&policy().review(&review_of(&request)).unwrap());
    assert_eq!(response.uid, "uid-delete");
    assert!(response.allowed);
    assert!(response.patch.is_none() && response.status.is_none());
}

#[test]
fn bad_settings_are_refused_at_load_with_the_policy_message() {
    let module = annotated_module();
    let err = LoadedPolicy::load(
        module,
        json!({"windowsTaint": {"key": "os", "effect": "Sometimes"}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("windowsTaint.effect"), "{err}");
}

fn eval_review(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_os-placement-eval"))
        .args(args)
        .output()
        .unwrap()
}

/// `os-placement-eval --review` prints exactly what the loaded policy answers.
#[test]
fn eval_review_command_prints_the_response() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let object = pod(json!([{"name": "app", "image": "alpine:3.20"}]), None);
    let request = with_uid(admission_request(&object, "CREATE", None, None), "uid-cli");
    let review_path = dir.path().join("review.json");
    std::fs::write(
        &review_path,
        serde_json::to_vec(&review_of(&request)).unwrap(),
    )
    .unwrap();
    let settings = repo_root().join("examples/settings/eks.yaml");
    let output = eval_review(&[
        "--wasm",
        wasm.to_str().unwrap(),
        "--review",
        review_path.to_str().unwrap(),
        "--settings",
        settings.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed, policy().review(&review_of(&request)).unwrap());
    let response = typed(&printed);
    assert_eq!(response.uid, "uid-cli");
    assert!(response.allowed);
    // A Linux pod with a Windows taint configured needs no patch.
    assert!(response.patch.is_none(), "{printed:#}");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "mutate: sometimes\n").unwrap();
    let output = eval_review(&[
        "--wasm",
        wasm.to_str().unwrap(),
        "--review",
        review_path.to_str().unwrap(),
        "--settings",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("settings are not valid") && stderr.contains("mutate"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
