//! Properties over generated pods and workloads of every kind, generated
//! settings and node pools (core/tests/props): no panic, rejections that
//! name their field, confinement, no overwrite, idempotence, modes and
//! kinds that agree, and the scheduler oracle. PROPTEST_CASES sets the
//! count (CI-sized by default).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod props;

use props::gen::Source;
use proptest::prelude::*;

/// Choices read from proptest's bytes: shrinking the bytes shrinks the case.
struct Bytes<'a>(&'a [u8], usize);

impl Source for Bytes<'_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let b = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        b as usize % n
    }
}

fn case_of(bytes: &[u8]) -> props::gen::Case {
    props::gen::case(&mut Bytes(bytes, 0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn every_property_holds(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        props::check::all(&case_of(&bytes));
    }
}

/// Found by the structure-aware fuzz target: the oracle's RuntimeClass
/// merge refused a spec whose nodeSelector is JSON null, which the plugin
/// reads as unset (plugin/pkg/admission/runtimeclass/admission.go).
#[test]
fn oracle_runtime_class_merge_over_null_node_selector() {
    use serde_json::json;
    let settings = json!({"runtimeClasses": [{"name": "w", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}}}]});
    let spec = json!({"containers": [], "nodeSelector": null, "tolerations": null, "runtimeClassName": "w"});
    let merged = props::oracle::merge_runtime_class(&spec, &settings).expect("merged");
    assert_eq!(
        merged["nodeSelector"],
        json!({"kubernetes.io/os": "windows"})
    );
    let conflicting =
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}, "runtimeClassName": "w"});
    assert!(props::oracle::merge_runtime_class(&conflicting, &settings).is_none());
}
