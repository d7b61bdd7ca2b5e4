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

use std::sync::OnceLock;

use os_placement_e2e::{wasm_path, PolicyHost, PolicyModule};

/// The compiled policy module, shared by every test of this binary.
pub fn module() -> &'static PolicyModule {
    static MODULE: OnceLock<Result<PolicyModule, String>> = OnceLock::new();
    let module = MODULE.get_or_init(|| {
        let path = wasm_path();
        if !path.is_file() {
            return Err(format!(
                "policy module {} not found: run `make build` first (or point OS_PLACEMENT_WASM at a built module)",
                path.display()
            ));
        }
        PolicyModule::compile(&path).map_err(|e| format!("{e:#}"))
    });
    match module {
        Ok(module) => module,
        Err(message) => panic!("{message}"),
    }
}

/// A fresh instance of the policy.
pub fn host() -> PolicyHost {
    module()
        .instantiate()
        .unwrap_or_else(|e| panic!("cannot instantiate the policy module: {e:#}"))
}
