//! The policy as policy-server serves it: settings validated once when the
//! policy is loaded (an invalid policy is refused, as policy-server refuses to
//! start), every request evaluated on a fresh instance, and the answer wrapped
//! in the `admission.k8s.io/v1` AdmissionReview the API server receives.

use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use base64::Engine as _;
use os_placement_door::review;
use serde_json::{json, Map, Value};

use crate::host::{Evaluation, PolicyModule};

/// A policy ready to serve: its module and settings that passed `validate_settings`.
#[derive(Debug)]
pub struct LoadedPolicy {
    module: Arc<PolicyModule>,
    settings: Value,
}

impl LoadedPolicy {
    /// Validates `settings` on a fresh instance; refuses them, with the policy's
    /// message, when `validate_settings` says they are invalid.
    /// The module is shared: one compiled module can serve several policies.
    pub fn load(module: impl Into<Arc<PolicyModule>>, settings: Value) -> Result<Self> {
        let module = module.into();
        let answer = module.instantiate()?.validate_settings(&settings)?;
        if !answer.valid {
            bail!(
                "the policy settings are not valid: {}",
                answer.message.as_deref().unwrap_or("(no message)")
            );
        }
        Ok(Self { module, settings })
    }

    /// The settings the policy was loaded with.
    pub fn settings(&self) -> &Value {
        &self.settings
    }

    /// The module the policy runs.
    pub fn module(&self) -> &PolicyModule {
        &self.module
    }

    /// Evaluates one AdmissionRequest on a fresh instance, as policy-server does.
    pub fn evaluate(&self, request: &Value) -> Result<Evaluation> {
        Ok(self
            .module
            .instantiate()?
            .validate(request, &self.settings)?)
    }

    /// The AdmissionReview response policy-server sends for an AdmissionReview
    /// request. A failing policy (trap, timeout) gives a rejection with code 500.
    pub fn review(&self, review: &Value) -> Result<Value> {
        let request = review_request(review)?;
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("request.uid: a string is required"))?;
        let response = match self.evaluate(request) {
            Ok(evaluation) => admission_response(uid, request.get("object"), &evaluation)?,
            Err(e) => rejection(uid, &format!("internal server error: {e:#}"), 500),
        };
        Ok(json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }))
    }
}

/// The `request` of an `admission.k8s.io/v1` AdmissionReview, read by the door.
pub fn review_request(review: &Value) -> Result<&Value> {
    if review.get("apiVersion").and_then(Value::as_str) != Some(review::ADMISSION_V1) {
        let api_version = review.get("apiVersion");
        bail!("not an admission.k8s.io/v1 AdmissionReview (apiVersion {api_version:?})");
    }
    Ok(review::review_request(review)?)
}

pub use review::review_of;

fn rejection(uid: &str, message: &str, code: u16) -> Value {
    json!({
        "uid": uid,
        "allowed": false,
        "status": {"message": message, "code": code},
        "auditAnnotations": null,
        "warnings": null,
    })
}

/// The AdmissionResponse for a policy's answer, as policy-server builds it: the
/// patch is the diff from the request object to `mutated_object`, base64 of its
/// JSON, left out when empty; `status` only when the policy gave a message or a
/// code; a mutation of a DELETE (no object) is refused.
pub fn admission_response(
    uid: &str,
    request_object: Option<&Value>,
    evaluation: &Evaluation,
) -> Result<Value> {
    let answer = &evaluation.response;
    let object = request_object.filter(|o| !o.is_null());
    if answer.mutated_object.is_some() && object.is_none() {
        return Ok(json!({
            "uid": uid,
            "allowed": false,
            "status": {"message": "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed"},
            "auditAnnotations": null,
            "warnings": null,
        }));
    }
    let mut response = Map::new();
    response.insert("uid".to_owned(), json!(uid));
    response.insert("allowed".to_owned(), json!(answer.accepted));
    if let Some(patch) = evaluation.patch.as_ref().filter(|p| !p.0.is_empty()) {
        let encoded = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(patch)?);
        response.insert("patchType".to_owned(), json!("JSONPatch"));
        response.insert("patch".to_owned(), json!(encoded));
    }
    if answer.message.is_some() || answer.code.is_some() {
        let mut status = Map::new();
        if let Some(message) = &answer.message {
            status.insert("message".to_owned(), json!(message));
        }
        if let Some(code) = answer.code {
            status.insert("code".to_owned(), json!(code));
        }
        response.insert("status".to_owned(), Value::Object(status));
    }
    response.insert(
        "auditAnnotations".to_owned(),
        json!(answer.audit_annotations),
    );
    response.insert("warnings".to_owned(), json!(answer.warnings));
    Ok(Value::Object(response))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::ValidationResponse;

    fn evaluation(accepted: bool, mutated: Option<Value>, original: &Value) -> Evaluation {
        let patch = mutated.as_ref().map(|m| json_patch::diff(original, m));
        Evaluation {
            response: ValidationResponse {
                accepted,
                message: (!accepted).then(|| "spec.x: wrong; fix it".to_owned()),
                code: None,
                mutated_object: mutated,
                audit_annotations: None,
                warnings: Some(vec!["w".to_owned()]),
            },
            patch,
        }
    }

    #[test]
    fn patch_is_base64_json_patch() {
        let original = json!({"a": 1});
        let answer = evaluation(true, Some(json!({"a": 1, "b": 2})), &original);
        let response = admission_response("u", Some(&original), &answer).unwrap();
        assert_eq!(response["uid"], "u");
        assert_eq!(response["allowed"], true);
        assert_eq!(response["patchType"], "JSONPatch");
        assert!(response.get("status").is_none());
        let patch = base64::engine::general_purpose::STANDARD
            .decode(response["patch"].as_str().unwrap())
            .unwrap();
        let patch: Value = serde_json::from_slice(&patch).unwrap();
        assert_eq!(patch, json!([{"op": "add", "path": "/b", "value": 2}]));
        assert_eq!(response["warnings"], json!(["w"]));
    }

    #[test]
    fn unchanged_object_has_no_patch_and_rejection_has_status() {
        let original = json!({"a": 1});
        let same = admission_response(
            "u",
            Some(&original),
            &evaluation(true, Some(original.clone()), &original),
        )
        .unwrap();
        assert!(same.get("patch").is_none() && same.get("patchType").is_none());
        let rejected =
            admission_response("u", Some(&original), &evaluation(false, None, &original)).unwrap();
        assert_eq!(rejected["allowed"], false);
        assert_eq!(
            rejected["status"],
            json!({"message": "spec.x: wrong; fix it"})
        );
    }

    #[test]
    fn mutating_a_delete_is_refused() {
        let original = json!({"a": 1});
        let answer = evaluation(true, Some(json!({"a": 2})), &original);
        let response = admission_response("u", Some(&Value::Null), &answer).unwrap();
        assert_eq!(response["allowed"], false);
        assert!(response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("DELETE"));
    }

    /// A guest whose `validate` accepts only the first call of an instance (a
    /// global counter), and whose `validate_settings` accepts anything.
    const STATEFUL_GUEST: &str = r#"
(module
  (import "wapc" "__guest_request" (func $request (param i32 i32)))
  (import "wapc" "__guest_response" (func $response (param i32 i32)))
  (memory (export "memory") 1)
  (global $calls (mut i32) (i32.const 0))
  (data (i32.const 60000) "{\"valid\":true}")
  (data (i32.const 60100) "{\"accepted\":true}")
  (data (i32.const 60200) "{\"accepted\":false,\"message\":\"state leaked\"}")
  (func (export "wapc_init"))
  (func (export "__guest_call") (param $op_len i32) (param $msg_len i32) (result i32)
    (call $request (i32.const 0) (i32.const 256))
    (if (i32.eq (local.get $op_len) (i32.const 17))
      (then (call $response (i32.const 60000) (i32.const 14)) (return (i32.const 1))))
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (if (i32.eq (global.get $calls) (i32.const 1))
      (then (call $response (i32.const 60100) (i32.const 17)) (return (i32.const 1))))
    (call $response (i32.const 60200) (i32.const 43))
    (i32.const 1)))
"#;

    #[test]
    fn every_request_gets_a_fresh_instance() {
        let module = PolicyModule::from_bytes(STATEFUL_GUEST.as_bytes()).unwrap();
        // A warm instance keeps state between calls: the guest notices.
        let warm = module.instantiate().unwrap();
        let request = json!({"uid": "u", "object": {"a": 1}});
        assert!(
            warm.validate(&request, &json!({}))
                .unwrap()
                .response
                .accepted
        );
        assert!(
            !warm
                .validate(&request, &json!({}))
                .unwrap()
                .response
                .accepted
        );
        // The loaded policy never reuses one.
        let policy = LoadedPolicy::load(module, json!({})).unwrap();
        for _ in 0..3 {
            let review = policy.review(&review_of(&request)).unwrap();
            assert_eq!(review["response"]["allowed"], true, "{review}");
            assert_eq!(review["response"]["uid"], "u");
        }
    }

    #[test]
    fn review_envelope_is_checked() {
        assert!(review_request(&json!({"request": {}})).is_err());
        let review = review_of(&json!({"uid": "x"}));
        assert_eq!(review_request(&review).unwrap()["uid"], "x");
        let no_request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
        let err = review_request(&no_request).unwrap_err().to_string();
        assert!(err.contains("request"), "{err}");
    }
}
