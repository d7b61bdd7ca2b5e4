//! Generated pods, workloads, settings and node pools, and the properties
//! every evaluation must keep. Shared by the property tests
//! (core/tests/properties.rs, driven by proptest) and the structure-aware
//! fuzz target (fuzz/fuzz_targets/evaluate_structured.rs, driven by
//! libFuzzer through `arbitrary`): one generator, one set of properties.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod check;
pub mod gen;
pub mod oracle;
