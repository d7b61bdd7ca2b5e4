//! Shared fixtures: the policy module, its annotated form (annotated by the
//! release chores with the protocol version our host asks the module for),
//! metadata.yml and the real kwctl and policy-server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

use os_placement_e2e::external;
use os_placement_e2e::{repo_root, wasm_path, PolicyModule};
use serde_json::Value;
use xtask::annotate::{annotate_bytes, embedded_metadata, load_metadata};

/// The built policy module (`make build`).
pub fn policy_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = wasm_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "policy module {} not readable ({e}): run `make build` first (or set OS_PLACEMENT_WASM)",
                path.display()
            )
        })
    })
}

/// metadata.yml as JSON.
pub fn metadata_yml() -> Value {
    Value::Object(load_metadata(&repo_root().join("metadata.yml")).unwrap())
}

/// README.md, the usage text.
pub fn readme() -> String {
    std::fs::read_to_string(repo_root().join("README.md")).unwrap()
}

/// The protocol version the module answers through waPC, as kwctl asks it.
pub fn protocol_version() -> String {
    PolicyModule::from_bytes(policy_bytes())
        .unwrap()
        .instantiate()
        .unwrap()
        .protocol_version()
        .unwrap()
}

/// The policy annotated with metadata.yml and README.md, as `make annotated-policy.wasm` builds it.
pub fn annotated_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let Value::Object(metadata) = metadata_yml() else {
            unreachable!()
        };
        let embedded = embedded_metadata(metadata, &protocol_version(), Some(&readme()));
        annotate_bytes(policy_bytes(), &embedded).unwrap()
    })
}

/// The annotated module, compiled once.
pub fn annotated_module() -> Arc<PolicyModule> {
    static MODULE: OnceLock<Arc<PolicyModule>> = OnceLock::new();
    MODULE
        .get_or_init(|| Arc::new(PolicyModule::from_bytes(annotated_bytes()).unwrap()))
        .clone()
}

/// Writes the annotated module into `dir` and returns its path.
pub fn write_annotated(dir: &Path) -> PathBuf {
    let path = dir.join("annotated-policy.wasm");
    std::fs::write(&path, annotated_bytes()).unwrap();
    path
}

/// kwctl, or `None` after a visible skip (a failure under CI).
pub fn kwctl() -> Option<PathBuf> {
    external::kubewarden_tool("kwctl").unwrap_or_else(|e| panic!("{e}"))
}

/// policy-server, or `None` after a visible skip (a failure under CI).
pub fn policy_server() -> Option<PathBuf> {
    external::kubewarden_tool("policy-server").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs kwctl with its store and config in `home`, so tests never touch the user's.
pub fn run_kwctl(kwctl: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(kwctl)
        .args(args)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", kwctl.display()))
}

/// Panics with stdout and stderr unless the command succeeded.
pub fn assert_success(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
