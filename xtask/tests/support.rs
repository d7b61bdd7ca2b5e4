//! Shared fixtures: the policy module and its annotated form, metadata.yml,
//! the xtask binary, kwctl and policy-server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{json, Value};
use xtask::annotate::{annotate_bytes, embedded_metadata, load_metadata};
use xtask::local::registry::LocalRegistry;
use xtask::local::{external, repo_root, wasm_path};

/// The protocol version of kubewarden-policy-sdk modules; the e2e tests check
/// that the module answers it through waPC.
pub const PROTOCOL_VERSION: &str = "v1";

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

/// The policy annotated with metadata.yml and README.md, as `make annotated-policy.wasm` builds it.
pub fn annotated_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let Value::Object(metadata) = metadata_yml() else {
            unreachable!()
        };
        let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
        let embedded = embedded_metadata(metadata, PROTOCOL_VERSION, Some(&readme));
        annotate_bytes(policy_bytes(), &embedded).unwrap()
    })
}

/// Writes the annotated module into `dir` and returns its path.
pub fn write_annotated(dir: &Path) -> PathBuf {
    let path = dir.join("annotated-policy.wasm");
    std::fs::write(&path, annotated_bytes()).unwrap();
    path
}

/// Runs `cargo xtask` (the built binary) with `args`.
pub fn xtask(args: &[&str]) -> Output {
    xtask_with_env(args, &[])
}

/// [`xtask`] with more environment variables.
pub fn xtask_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `cargo xtask` and returns its stdout, trimmed; panics with stderr on failure.
pub fn xtask_ok(args: &[&str], env: &[(&str, &str)]) -> String {
    let output = xtask_with_env(args, env);
    assert!(
        output.status.success(),
        "xtask {args:?} failed: {}",
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A registry, or `None` after a visible skip (a failure under CI).
pub fn registry() -> Option<LocalRegistry> {
    LocalRegistry::start().unwrap_or_else(|e| panic!("{e}"))
}

/// kwctl, or `None` after a visible skip (a failure under CI).
pub fn kwctl() -> Option<PathBuf> {
    external::kubewarden_tool("kwctl").unwrap_or_else(|e| panic!("{e}"))
}

/// policy-server, or `None` after a visible skip (a failure under CI).
pub fn policy_server() -> Option<PathBuf> {
    external::kubewarden_tool("policy-server").unwrap_or_else(|e| panic!("{e}"))
}

/// Sources allowing plain HTTP to `registry` (kwctl and policy-server).
pub fn insecure(registry: &LocalRegistry) -> Value {
    json!({"insecure_sources": [registry.host()]})
}

/// The sources file of [`insecure`] in `dir`.
pub fn sources_file(dir: &Path, registry: &LocalRegistry) -> PathBuf {
    let path = dir.join("sources.json");
    std::fs::write(&path, serde_json::to_vec(&insecure(registry)).unwrap()).unwrap();
    path
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

/// Panics with stdout and stderr unless the command succeeded; returns stdout.
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
