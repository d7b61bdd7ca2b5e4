//! A real OCI registry on 127.0.0.1: Debian's `docker-registry` (the CNCF
//! distribution server), with its own port and storage, stopped when dropped;
//! open to all, or behind an htpasswd file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::external;
use super::http::{http, wait_until};
use crate::error::{Error, Result};

/// The media type of an OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A running registry; killed and reaped on drop, so a failing test stops it too.
#[derive(Debug)]
pub struct LocalRegistry {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

fn failed(port: u16, message: String) -> Error {
    Error::Process {
        what: format!("registry on 127.0.0.1:{port}"),
        message,
    }
}

fn config(dir: &Path, port: u16, htpasswd: Option<&Path>) -> String {
    let auth = htpasswd.map_or(String::new(), |path| {
        format!(
            "auth:\n  htpasswd:\n    realm: os-placement-test\n    path: {}\n",
            path.display()
        )
    });
    format!(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}",
        dir.join("storage").display()
    )
}

impl LocalRegistry {
    /// Starts a registry. `Ok(None)` after a visible skip when docker-registry
    /// is not installed; an error under CI (see [`external::registry_server`]).
    pub fn start() -> Result<Option<Self>> {
        Self::start_with(None)
    }

    /// Starts a registry asking for Basic credentials of the users in
    /// `htpasswd` (bcrypt lines), a file it reads again whenever it changes.
    pub fn start_with_htpasswd(htpasswd: &Path) -> Result<Option<Self>> {
        Self::start_with(Some(htpasswd))
    }

    fn start_with(htpasswd: Option<&Path>) -> Result<Option<Self>> {
        let Some(binary) = external::registry_server()? else {
            return Ok(None);
        };
        let dir = tempfile::tempdir().map_err(Error::io("a temporary directory"))?;
        let port = free_port()?;
        let config_path = dir.path().join("config.yml");
        crate::error::write(&config_path, config(dir.path(), port, htpasswd))?;
        let log = dir.path().join("registry.log");
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(Error::io(&log))?)
            .spawn()
            .map_err(Error::io(&binary))?;
        let mut registry = Self { child, port, dir };
        // Behind htpasswd, an anonymous `/v2/` is challenged: up all the same.
        let up = wait_until(Duration::from_secs(20), || {
            http(port, "GET", "/v2/", &[], b"").is_ok_and(|r| r.status == 200 || r.status == 401)
        });
        if !up {
            let status = registry.child.try_wait();
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(failed(port, format!("no answer ({status:?}):\n{log}")));
        }
        Ok(Some(registry))
    }

    /// `127.0.0.1:PORT`, the registry part of its image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `registry://127.0.0.1:PORT/<path>`
    pub fn reference(&self, path: &str) -> String {
        format!("registry://{}/{path}", self.host())
    }

    /// The manifest at `repository:reference` as the registry returns it, with its digest header.
    pub fn manifest(&self, repository: &str, reference: &str) -> Result<(Value, String)> {
        let path = format!("/v2/{repository}/manifests/{reference}");
        let response = http(self.port, "GET", &path, &[("Accept", OCI_MANIFEST)], b"")
            .map_err(|e| failed(self.port, format!("GET {path}: {e}")))?;
        if response.status != 200 {
            let body = String::from_utf8_lossy(&response.body);
            return Err(failed(
                self.port,
                format!("GET {path}: HTTP {}: {body}", response.status),
            ));
        }
        let digest = response
            .header("docker-content-digest")
            .unwrap_or_default()
            .to_owned();
        Ok((response.json()?, digest))
    }

    /// The file holding blob `digest` (`sha256:<hex>`) in the registry's storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(hex.get(..2).unwrap_or_default())
            .join(hex)
            .join("data")
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        // Best effort: the process may already be gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port on 127.0.0.1 (bound then released).
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(Error::io("127.0.0.1:0"))?;
    let address = listener.local_addr().map_err(Error::io("127.0.0.1:0"))?;
    Ok(address.port())
}
