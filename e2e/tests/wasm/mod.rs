//! Tests that evaluate requests through the built policy `.wasm` in wasmtime,
//! as policy-server does. One test binary, so the module is compiled once.
//!
//! The module is `$OS_PLACEMENT_WASM`, else
//! `target/wasm32-wasip1/release/os_placement_policy.opt.wasm` in the repository:
//! run `make build` first (`make test` does).

mod corpus;
mod examples;
mod packaging;
mod protocol;
mod whole;

use std::sync::OnceLock;

use os_placement_e2e::{wasm_path, PolicyHost, PolicyModule};

/// The compiled policy module, shared by every test of this binary.
pub fn module() -> &'static PolicyModule {
    static MODULE: OnceLock<PolicyModule> = OnceLock::new();
    MODULE.get_or_init(|| {
        let path = wasm_path();
        assert!(
            path.is_file(),
            "policy module {} not found: run `make build` first (or point OS_PLACEMENT_WASM at a built module)",
            path.display()
        );
        PolicyModule::compile(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A fresh instance of the policy.
pub fn host() -> PolicyHost {
    module()
        .instantiate()
        .unwrap_or_else(|e| panic!("cannot instantiate the policy module: {e:#}"))
}
