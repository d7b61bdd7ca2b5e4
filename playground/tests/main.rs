//! The playground's integration tests: its answers are the policy's. Every
//! example case and corpus manifest (`parity`), and every case with cluster
//! and registry facts (`facts`), through the playground adapter (natively)
//! and through the built policy `.wasm` in wasmtime, as policy-server runs it.
//!
//! The module is `$OS_PLACEMENT_WASM` (set by `make test`), else the
//! default build path; the corpus `$OS_PLACEMENT_CORPUS`, else
//! `../shared/corpus` from the repository root.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod facts;
mod parity;
mod support;
