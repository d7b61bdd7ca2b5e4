//! (c) Raw bytes as the `validate_settings` payload: always an answer, and
//! an invalid one always carries a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(out) = os_placement_policy::validate_settings(data) else {
        panic!("validate_settings returned an error");
    };
    let answer: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
    match answer.get("valid").and_then(Value::as_bool) {
        Some(true) => {
            // Valid settings parse again to the same verdict.
            let value: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
            assert!(os_placement_core::Settings::from_value(&value).is_ok());
        }
        Some(false) => assert!(
            answer
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.is_empty()),
            "invalid settings without a message: {answer}"
        ),
        None => panic!("no verdict: {answer}"),
    }
});
