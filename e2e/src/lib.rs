//! Host side of os-placement's end-to-end checks: loads the policy `.wasm` in
//! wasmtime through waPC exactly as Kubewarden's policy-server does, builds
//! realistic AdmissionRequests, and runs the example cases.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod capabilities;
pub mod cases;
pub mod corpus;
pub mod error;
pub mod faults;
pub mod host;
pub mod identity;
pub mod images;
pub mod native;
pub mod published;
pub mod request;
pub mod review;
pub mod selector;

use std::path::{Path, PathBuf};

// The local registry, policy-server, kwctl and HTTP client live with the
// release chores (xtask, no wasmtime); the e2e tests use the same ones.
pub use xtask::local::{external, http, policy_server, registry};

pub use cases::{load_cases, read_yaml, run_case, Case, CaseOutcome, Expect, ResolvedCase};
pub use error::{Error, HostCallError};
pub use host::{
    Evaluation, HostCalls, NoCapabilities, PolicyHost, PolicyModule, SettingsValidationResponse,
    ValidationResponse,
};
pub use request::admission_request;
pub use review::LoadedPolicy;

/// Where `make build` puts the policy module, relative to the repository root.
pub const DEFAULT_WASM: &str = "target/wasm32-wasip1/release/os_placement_policy.opt.wasm";

/// The example case list, relative to the repository root.
pub const DEFAULT_CASES: &str = "examples/cases.yaml";

/// The repository root (parent of the e2e crate).
pub fn repo_root() -> PathBuf {
    let e2e = Path::new(env!("CARGO_MANIFEST_DIR"));
    e2e.parent().unwrap_or(e2e).to_path_buf()
}

/// The policy module: `$OS_PLACEMENT_WASM`, else [`DEFAULT_WASM`] under the repository root.
pub fn wasm_path() -> PathBuf {
    match std::env::var_os("OS_PLACEMENT_WASM") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => repo_root().join(DEFAULT_WASM),
    }
}

/// The corpus of real manifests: `$OS_PLACEMENT_CORPUS`, else `../shared/corpus`
/// from the repository root.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("OS_PLACEMENT_CORPUS") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => repo_root().join("../shared/corpus"),
    }
}

/// The corpus ([`corpus_dir`]) when its SOURCES.md is there; else a visible
/// skip, or an error under CI (see [`external::missing`]).
pub fn corpus() -> external::Found {
    let dir = corpus_dir();
    if dir.join("SOURCES.md").is_file() {
        Ok(Some(dir))
    } else {
        let what = format!("corpus {}", dir.display());
        external::missing(
            &what,
            "set OS_PLACEMENT_CORPUS to the directory holding SOURCES.md and the manifests",
        )
        .map(|_| None)
    }
}
