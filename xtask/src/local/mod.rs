//! Programs run on this machine for the chores' tests and the e2e tests: a
//! real OCI registry on 127.0.0.1, the real kwctl and policy-server, and a
//! tiny HTTP client for them. Nothing here talks to another host.

pub mod external;
pub mod http;
pub mod policy_server;
pub mod registry;

use std::path::{Path, PathBuf};

/// The repository root (parent of the xtask crate).
pub fn repo_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// Where `make build` puts the policy module, relative to the repository root.
pub const DEFAULT_WASM: &str = "target/wasm32-wasip1/release/os_placement_policy.opt.wasm";

/// The policy module: `$OS_PLACEMENT_WASM`, else [`DEFAULT_WASM`] under the repository root.
pub fn wasm_path() -> PathBuf {
    match std::env::var_os("OS_PLACEMENT_WASM") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => repo_root().join(DEFAULT_WASM),
    }
}
