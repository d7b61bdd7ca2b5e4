//! The CLI's tests, one binary: the command end to end (with registry
//! lookups against a real registry), its verdicts
//! against the policy module's, and the doors test (every door, the same
//! answer).
// Helpers outside #[test] functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod cli;
mod common;
mod doors;
mod lookup;
mod render;
mod wasm_parity;
