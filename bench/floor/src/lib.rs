//! The benchmark floor: the least a Kubewarden policy on this SDK does per
//! request. It parses the payload into the SDK's `ValidationRequest` (empty
//! settings) and accepts. `make bench` reports os-placement and other
//! policies as ratios to it, measured in the same run.

use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::{accept_request, protocol_version_guest, validate_settings};
use serde::Deserialize;
use wapc_guest::{register_function, CallResult};

/// No settings: any JSON object is accepted and ignored.
#[derive(Debug, Default, Deserialize)]
struct Settings {}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings::<Settings>);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let request = ValidationRequest::<Settings>::new(payload)?;
    // Keep the parse: the request must not be optimised away.
    std::hint::black_box(&request);
    accept_request()
}
