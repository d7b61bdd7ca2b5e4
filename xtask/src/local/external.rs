//! Programs and data from outside the repository that some tests need: the
//! real kwctl and policy-server (`$KUBEWARDEN_BIN`, else `../shared/kubewarden`
//! beside the repository), the registry server (`docker-registry` on the
//! PATH, or `$DOCKER_REGISTRY_BIN`) and other programs on the PATH (skopeo).
//! Under CI (`CI` set) a missing one is an error; elsewhere the caller
//! skips, saying what is missing.

use std::path::{Path, PathBuf};

use super::repo_root;
use crate::error::Error;

/// A program or data set, or `None` after a visible skip.
pub type Found = Result<Option<PathBuf>, Error>;

/// Where kwctl and policy-server are looked for.
pub fn kubewarden_dir() -> PathBuf {
    match std::env::var_os("KUBEWARDEN_BIN") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("../shared/kubewarden"),
    }
}

/// True when running under CI, where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// What to do about a missing program or data set: `Err` under CI, else
/// `Ok(None)` after printing a visible skip line on stderr.
pub fn missing(what: &str, how: &str) -> Found {
    let message = format!("{what} not found ({how})");
    if in_ci() {
        Err(Error::Missing(format!("{message}; CI must provide it")))
    } else {
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
        Ok(None)
    }
}

/// True for an executable file.
pub fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `kwctl` or `policy-server` from [`kubewarden_dir`].
pub fn kubewarden_tool(name: &str) -> Found {
    let path = kubewarden_dir().join(name);
    if executable(&path) {
        Ok(Some(path))
    } else {
        missing(
            &path.display().to_string(),
            "set KUBEWARDEN_BIN to the directory holding kwctl and policy-server",
        )
    }
}

/// `name` on the PATH, or what [`missing`] says, with `how` to install it.
pub fn on_path(name: &str, how: &str) -> Found {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| executable(p))
    });
    match found {
        Some(path) => Ok(Some(path)),
        None => missing(name, how),
    }
}

/// The registry server: `$DOCKER_REGISTRY_BIN`, else `docker-registry` on the PATH.
pub fn registry_server() -> Found {
    if let Some(path) = std::env::var_os("DOCKER_REGISTRY_BIN").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if executable(&path) {
            Ok(Some(path))
        } else {
            missing(&path.display().to_string(), "DOCKER_REGISTRY_BIN")
        };
    }
    on_path(
        "docker-registry",
        "install the Debian package docker-registry (`make deps` does)",
    )
}
