//! Kubewarden adapter: waPC entry points over the rule core.

use kubewarden_policy_sdk::metadata::ProtocolVersion;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use os_placement_core::{Admission, Settings};
use wapc_guest::{register_function, CallResult};

pub mod answer;
pub mod arena;
pub mod facts;
pub mod object;
pub mod payload;
pub mod settings_cache;

use answer::Answer;
use payload::Payload;

/// The guest's heap: a request arena over the system allocator.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: arena::Arena = arena::Arena::new(std::alloc::System);

/// The arena's request: from a handler's start to its return.
struct RequestScope;

impl RequestScope {
    fn begin() -> Self {
        #[cfg(target_arch = "wasm32")]
        HEAP.begin();
        RequestScope
    }
}

impl Drop for RequestScope {
    fn drop(&mut self) {
        #[cfg(target_arch = "wasm32")]
        HEAP.end();
    }
}

/// Runs `read` with its allocations outside the request's arena, so what
/// it keeps survives the request.
fn outside_request(read: &mut dyn FnMut()) {
    #[cfg(target_arch = "wasm32")]
    HEAP.outside(read);
    #[cfg(not(target_arch = "wasm32"))]
    read();
}

/// Drops `value`, or leaves it to the arena's next reset when the arena
/// holds all of the request's memory (walking the tree would only waste time).
fn discard<T>(value: T) {
    #[cfg(target_arch = "wasm32")]
    if HEAP.holds_everything() {
        std::mem::forget(value);
        return;
    }
    drop(value);
}

#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version);
}

fn protocol_version(_payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&ProtocolVersion::V1)?)
}

/// Settings are validated by the core, so every mistake gets a precise
/// message instead of a deserialisation error.
pub fn validate_settings(payload: &[u8]) -> CallResult {
    let _scope = RequestScope::begin();
    let response = match Settings::from_slice(payload) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(e) => invalid_settings(e.to_string()),
    };
    Ok(serde_json::to_vec(&response)?)
}

fn invalid_settings(message: String) -> SettingsValidationResponse {
    SettingsValidationResponse {
        valid: false,
        message: Some(message),
    }
}

/// Evaluates one `{"request": ..., "settings": ...}` payload. Every
/// outcome, malformed input included, is a response: never a trap.
pub fn validate(payload: &[u8]) -> CallResult {
    let _scope = RequestScope::begin();
    let answer = respond(payload);
    let json = answer.to_json()?;
    discard(answer);
    Ok(json)
}

/// The rejection of a payload without a request object, and how to send one.
pub const MISSING_REQUEST: &str = "validation payload: the admission request is missing; \
send {\"request\": <the AdmissionRequest object>, \"settings\": <the policy settings>}, \
as policy-server does";

/// The answer to one `validate` payload, with facts from the waPC host.
pub fn respond(payload: &[u8]) -> Answer {
    respond_with(payload, &facts::Wapc)
}

/// As [`respond`], with facts gathered from `host`: no call at all when
/// the request needs none.
pub fn respond_with(payload: &[u8], host: &dyn facts::Host) -> Answer {
    let payload: Payload = match serde_json::from_slice(payload) {
        Ok(p) => p,
        Err(e) => return Answer::rejection(format!("validation payload: not valid JSON: {e}")),
    };
    let text = payload.settings_text();
    let Some(mut request) = payload.request else {
        return Answer::rejection(MISSING_REQUEST.to_string());
    };
    let response = settings_cache::with_settings(text, outside_request, |settings| {
        decide(&mut request, settings, host)
    });
    discard(request);
    response.unwrap_or_else(|e| Answer::rejection(format!("invalid policy settings:\n{e}")))
}

/// The response to one request under the settings. The patch is applied to
/// the request's own object, taken out of it: the object is not copied.
fn decide(request: &mut serde_json::Value, settings: &Settings, host: &dyn facts::Host) -> Answer {
    let admission = Admission::new(request, settings).without_signals();
    let facts = if admission.needs().is_empty() {
        Default::default()
    } else {
        facts::gather(admission.needs(), host)
    };
    let mut decision = admission.decide_unapplied(&facts);
    discard(facts);
    // Only then: the object left in the request is discarded unwalked.
    if decision.patch_pending() {
        let object = request.get_mut("object").map(serde_json::Value::take);
        decision = decision.apply_to(object.unwrap_or_default());
    }
    Answer::of(decision)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoHost;

    impl facts::Host for NoHost {
        fn call(&self, _: &str, _: &str, _: &[u8]) -> Result<Vec<u8>, facts::HostError> {
            Err(facts::HostError("no host".into()))
        }
    }

    #[test]
    fn a_payload_without_a_request_object_says_how_to_send_one() {
        for payload in [&b"[]"[..], b"{}", br#"{"request": "x", "settings": {}}"#] {
            let response = respond_with(payload, &NoHost);
            assert!(!response.accepted);
            assert_eq!(response.message.as_deref(), Some(MISSING_REQUEST));
        }
        let bad = respond_with(b"{", &NoHost);
        assert!(bad
            .message
            .is_some_and(|m| m.starts_with("validation payload: not valid JSON: EOF")));
    }
}
