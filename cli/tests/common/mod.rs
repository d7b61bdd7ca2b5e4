//! Running the built `os-placement` binary, and finding data outside the repository.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The cli crate's folder: fixtures and expected outputs are relative to it.
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    crate_dir().parent().unwrap().to_path_buf()
}

/// Runs `os-placement ARGS` in the cli crate's folder, with `stdin` piped in.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    run_in(crate_dir(), args, stdin)
}

pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_os-placement"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("os-placement runs");
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

pub fn code(output: &Output) -> i32 {
    output.status.code().expect("exited, not killed")
}

/// Data beside the repository (`../shared/...`), or an env override. Missing
/// data fails under CI and is a visible skip elsewhere (None).
pub fn shared_dir(env: &str, relative: &str, what: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os(env) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => repo_root().join("..").join(relative),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    let message = format!("{what} not found at {} (set {env})", dir.display());
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
    None
}

/// The corpus of real manifests.
pub fn corpus() -> Option<PathBuf> {
    shared_dir("OS_PLACEMENT_CORPUS", "shared/corpus", "the shared corpus")
}

/// Compares with `tests/expected/NAME`; `UPDATE_EXPECT=1` rewrites it.
pub fn assert_snapshot(name: &str, actual: &str) {
    let path = crate_dir().join("tests/expected").join(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_EXPECT=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name} differs from {}; if the change is intended, rerun with UPDATE_EXPECT=1 and review the diff\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}
