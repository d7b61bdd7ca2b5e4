//! (a) Raw bytes as the waPC `validate` payload: every input is a
//! response, never a trap; a rejection always says why.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let response = os_placement_policy::respond(data);
    if !response.accepted {
        assert!(
            response.message.as_deref().is_some_and(|m| !m.is_empty()),
            "rejection without a message"
        );
        assert!(response.mutated_object().is_none(), "rejection with a patch");
    }
    for w in response.warnings.iter().flatten() {
        assert!(w.chars().count() <= 256, "warning over the API limit: {w}");
    }
    // The whole response is what the host serialises.
    assert!(os_placement_policy::validate(data).is_ok());
});
