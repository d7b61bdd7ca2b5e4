//! AdmissionReview envelopes (`admission.k8s.io/v1`): the request inside
//! one the API server sent, and one wrapped around a request.

use serde_json::{json, Value};

/// The API version of the AdmissionReviews the API server sends.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";

/// Whether `object` is an AdmissionReview (`admission.k8s.io/v1`, or the
/// older `v1beta1` a captured review may carry).
pub fn is_review(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("AdmissionReview")
        && object
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("admission.k8s.io/"))
}

/// Why an AdmissionReview carries no request the policy could be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    /// Not an AdmissionReview of `admission.k8s.io`.
    #[error(
        "not an admission.k8s.io/v1 AdmissionReview (apiVersion {api_version:?}, kind {kind:?})"
    )]
    NotAReview {
        /// The apiVersion found.
        api_version: Option<String>,
        /// The kind found.
        kind: Option<String>,
    },
    /// The review has no `request` mapping.
    #[error("request: the AdmissionReview carries no request; paste the review the API server sent, with its request")]
    NoRequest,
}

/// The `request` of an AdmissionReview.
pub fn review_request(review: &Value) -> Result<&Value, ReviewError> {
    if !is_review(review) {
        let text = |key: &str| review.get(key).and_then(Value::as_str).map(str::to_string);
        return Err(ReviewError::NotAReview {
            api_version: text("apiVersion"),
            kind: text("kind"),
        });
    }
    review
        .get("request")
        .filter(|r| r.is_object())
        .ok_or(ReviewError::NoRequest)
}

/// An AdmissionRequest wrapped in the AdmissionReview the API server sends.
pub fn review_of(request: &Value) -> Value {
    json!({
        "apiVersion": ADMISSION_V1,
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// The JSON Pointer, within a review's request, of the object a rule judges:
/// `object`, or for a DELETE (where `object` is null) `oldObject`.
pub fn judged_object_pointer(request: &Value) -> &'static str {
    match request.get("object") {
        Some(object) if !object.is_null() => "/object",
        _ => "/oldObject",
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_checked() {
        assert!(matches!(
            review_request(&json!({"request": {}})),
            Err(ReviewError::NotAReview { .. })
        ));
        let review = review_of(&json!({"uid": "x"}));
        assert_eq!(review_request(&review).unwrap()["uid"], "x");
        let no_request = json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview"});
        assert_eq!(review_request(&no_request), Err(ReviewError::NoRequest));
        assert!(ReviewError::NoRequest.to_string().starts_with("request:"));
    }

    #[test]
    fn a_delete_is_judged_on_its_old_object() {
        assert_eq!(
            judged_object_pointer(&json!({"object": {"a": 1}})),
            "/object"
        );
        assert_eq!(
            judged_object_pointer(&json!({"object": null, "oldObject": {"a": 1}})),
            "/oldObject"
        );
    }
}
