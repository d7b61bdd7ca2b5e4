//! End-to-end tests through the built policy `.wasm` on the wasmtime host, as
//! policy-server runs it; one test binary, so the module is compiled once.
//!
//! The module is `$OS_PLACEMENT_WASM`, else
//! `target/wasm32-wasip1/release/os_placement_policy.opt.wasm`: run `make build`
//! first (`make test` does). The Makefile runs the groups apart by name:
//! `wasm::`, `context::`, `release::`, and `hostile::` on one thread (it
//! measures the process's peak memory).
// A failing test fails loudly, helpers included.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod context;
mod faults;
mod hostile;
mod release;
mod wasm;
