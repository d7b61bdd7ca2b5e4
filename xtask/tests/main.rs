//! Tests of the release chores against real programs on this machine: a
//! registry (Debian's docker-registry on 127.0.0.1), the real kwctl and
//! policy-server (`$KUBEWARDEN_BIN`, else `../shared/kubewarden`), skopeo,
//! the CLI's container image (`make image`, `$OS_PLACEMENT_IMAGE`) and the
//! checked-in packaging files. Nothing here runs the module: what it
//! evaluates is tested in e2e.
//!
//! The module is `$OS_PLACEMENT_WASM` (else the `make build` output). A test
//! that needs a missing program fails under CI and prints `SKIPPED: ...`
//! elsewhere (see `xtask::local::external`).
// A failing test fails loudly, helpers included.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod image;
mod kwctl;
mod packaging;
mod registry;
mod signing;
mod support;
mod tools;
