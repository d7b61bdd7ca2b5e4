//! (b) Structure-aware: the fuzzer's bytes drive a generator of pods and
//! workloads of every kind and of settings (the same generator the
//! property tests use), and every evaluation is checked against the
//! properties in core/tests/props. The module's answer, which parses only
//! the fields the rules read, must be the core's on the whole request.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use os_placement_core::Admission;
use os_placement_policy::facts::{gather, Wapc};
use serde_json::json;

#[path = "../../core/tests/props/mod.rs"]
#[allow(dead_code)]
mod props;

struct Bytes<'a, 'b>(&'a mut Unstructured<'b>);

impl props::gen::Source for Bytes<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.0.choose_index(n).unwrap_or(0)
    }
}

/// The module's answer against the core's decision on the whole request.
fn narrow_reads_as_whole(case: &props::gen::Case) {
    let request = json!({"kind": {"kind": case.kind_name}, "operation": "CREATE",
                         "object": case.object});
    let payload = json!({"request": request, "settings": case.settings_value});
    let Ok(payload) = serde_json::to_vec(&payload) else {
        return;
    };
    let answer = os_placement_policy::respond_with(&payload, &Wapc);
    let admission = Admission::new(&request, &case.settings).without_signals();
    let facts = gather(admission.needs(), &Wapc);
    let whole = admission.decide(&facts);
    let ctx = format!(
        "{} under {}:\n{}",
        case.kind_name, case.settings_value, case.object
    );
    assert_eq!(answer.accepted, whole.accepted, "verdict: {ctx}");
    assert_eq!(answer.message, whole.message(), "message: {ctx}");
    let warnings = whole.warning_lines();
    assert_eq!(
        answer.warnings,
        (!warnings.is_empty()).then_some(warnings),
        "warnings: {ctx}"
    );
    assert_eq!(
        answer.mutated_object(),
        whole.mutated_object,
        "object: {ctx}"
    );
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut source = Bytes(&mut u);
    let case = props::gen::case(&mut source);
    props::check::all(&case);
    narrow_reads_as_whole(&case);
});
