//! A real OCI registry on 127.0.0.1 for tests: Debian's `docker-registry`
//! (the CNCF distribution server), with its own port and storage, stopped
//! when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::external;

/// A running registry; killed and reaped on drop, so a failing test stops it too.
#[derive(Debug)]
pub struct LocalRegistry {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl LocalRegistry {
    /// Starts a registry. `Ok(None)` after a visible skip when docker-registry
    /// is not installed; an error under CI (see [`external::registry_server`]).
    pub fn start() -> Result<Option<Self>> {
        let Some(binary) = external::registry_server().map_err(|e| anyhow!(e))? else {
            return Ok(None);
        };
        let dir = tempfile::tempdir().context("cannot create the registry's directory")?;
        let port = free_port()?;
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("storage").display()
            ),
        )?;
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("registry.log"))?)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut registry = Self { child, port, dir };
        let started = Instant::now();
        while !registry.answers() {
            if started.elapsed() > Duration::from_secs(20) || registry.child.try_wait()?.is_some() {
                let log = std::fs::read_to_string(registry.log_path()).unwrap_or_default();
                bail!("the registry did not answer on 127.0.0.1:{port}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(100));
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

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("registry.log")
    }

    /// True when `GET /v2/` answers 200.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let request = format!("GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", self.port);
        let mut head = [0_u8; 12];
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_exact(&mut head).is_ok()
            && head.ends_with(b" 200")
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
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
