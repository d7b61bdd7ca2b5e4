//! The real policy-server as the tests run it: its policies and sources
//! files written to a work directory, free ports, logs kept there, the
//! process killed and reaped on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::http::{http, post_json, wait_until};
use super::registry::free_port;
use crate::error::{write, Error, Result};

/// A running policy-server process.
pub struct PolicyServer {
    child: Child,
    port: u16,
    probe: u16,
    dir: PathBuf,
}

impl PolicyServer {
    /// Spawns `binary` serving `policies` (policy id → entry of its
    /// policies file) with two workers; `sources` is its sources file
    /// (e.g. `insecure_sources`). It is not waited for.
    pub fn spawn(
        binary: &Path,
        dir: &Path,
        policies: &Value,
        sources: Option<&Value>,
    ) -> Result<PolicyServer> {
        Self::spawn_with(binary, dir, policies, sources, &[])
    }

    /// [`PolicyServer::spawn`] with more arguments (e.g. `--verification-path`).
    pub fn spawn_with(
        binary: &Path,
        dir: &Path,
        policies: &Value,
        sources: Option<&Value>,
        extra: &[&std::ffi::OsStr],
    ) -> Result<PolicyServer> {
        Self::spawn_in(binary, dir, policies, sources, extra, None)
    }

    /// [`PolicyServer::spawn_with`] reaching the Kubernetes API server its
    /// `kubeconfig` names (KUBECONFIG), as context-aware policies need.
    pub fn spawn_with_kubeconfig(
        binary: &Path,
        dir: &Path,
        policies: &Value,
        sources: Option<&Value>,
        kubeconfig: &Path,
    ) -> Result<PolicyServer> {
        Self::spawn_in(binary, dir, policies, sources, &[], Some(kubeconfig))
    }

    /// [`PolicyServer::spawn_with_kubeconfig`] with `workers` workers (a
    /// benchmark measures one).
    pub fn spawn_workers(
        binary: &Path,
        dir: &Path,
        policies: &Value,
        kubeconfig: &Path,
        workers: u16,
    ) -> Result<PolicyServer> {
        let workers = workers.to_string();
        let extra = [
            std::ffi::OsStr::new("--workers"),
            std::ffi::OsStr::new(&workers),
        ];
        Self::spawn_in(binary, dir, policies, None, &extra, Some(kubeconfig))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn spawn_in(
        binary: &Path,
        dir: &Path,
        policies: &Value,
        sources: Option<&Value>,
        extra: &[&std::ffi::OsStr],
        kubeconfig: Option<&Path>,
    ) -> Result<PolicyServer> {
        let workers = match extra.iter().position(|a| *a == "--workers") {
            Some(at) => extra.get(at + 1).and_then(|w| w.to_str()).unwrap_or("2"),
            None => "2",
        };
        let policies_path = dir.join("policies.yml");
        write(&policies_path, json_bytes(policies))?;
        let downloads = dir.join("downloads");
        std::fs::create_dir_all(&downloads).map_err(Error::io(&downloads))?;
        let (port, probe) = (free_port()?, free_port()?);
        let log = |name: &str| {
            let path = dir.join(name);
            std::fs::File::create(&path).map_err(Error::io(path))
        };
        let mut command = Command::new(binary);
        command
            .arg("--policies")
            .arg(&policies_path)
            .arg("--policies-download-dir")
            .arg(&downloads)
            .args(["--addr", "127.0.0.1", "--port", &port.to_string()])
            .args(["--readiness-probe-port", &probe.to_string()])
            .args(["--workers", workers, "--log-no-color"])
            .arg("--ignore-kubernetes-connection-failure")
            .env("HOME", dir)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .stdin(Stdio::null())
            .stdout(log("policy-server.log")?)
            .stderr(log("policy-server.err")?);
        let mut rest = extra.iter();
        while let Some(arg) = rest.next() {
            if *arg == "--workers" {
                rest.next();
            } else {
                command.arg(arg);
            }
        }
        if let Some(kubeconfig) = kubeconfig {
            command.env("KUBECONFIG", kubeconfig);
        }
        if let Some(sources) = sources {
            let path = dir.join("sources.json");
            write(&path, json_bytes(sources))?;
            command.arg("--sources-path").arg(path);
        }
        let child = command.spawn().map_err(Error::io(binary))?;
        Ok(PolicyServer {
            child,
            port,
            probe,
            dir: dir.to_owned(),
        })
    }

    /// Waits until the readiness probe answers 200; an error with the logs
    /// when the process exits first or `limit` passes.
    pub fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let probe = self.probe;
        let child = &mut self.child;
        let mut exited = None;
        let ready = wait_until(limit, || {
            exited = child.try_wait().ok().flatten();
            exited.is_none()
                && http(probe, "GET", "/readiness", &[], b"").is_ok_and(|r| r.status == 200)
        });
        if ready {
            Ok(())
        } else {
            Err(Error::Process {
                what: "policy-server".to_owned(),
                message: format!("not ready ({exited:?}):\n{}", self.logs()),
            })
        }
    }

    /// Waits for the process to exit, up to `limit`; `None` if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let child = &mut self.child;
        let mut status = None;
        wait_until(limit, || {
            status = child.try_wait().ok().flatten();
            status.is_some()
        });
        status
    }

    /// The port it serves admission reviews on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the process wrote to stdout and stderr so far.
    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        read("policy-server.log") + &read("policy-server.err")
    }

    /// The AdmissionReview policy `id` answers for `review`.
    pub fn validate(&self, id: &str, review: &Value) -> Result<Value> {
        post_json(self.port, &format!("/validate/{id}"), review)
    }
}

/// `value` as JSON bytes (a `Value` always serialises).
fn json_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

impl Drop for PolicyServer {
    fn drop(&mut self) {
        // Best effort: the process may already be gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What two hosts must agree on in an AdmissionReview response: the
/// verdict, the message and code, the warnings and the decoded patch.
pub fn comparable(review: &Value) -> Value {
    let field = |pointer: &str| review.pointer(pointer).cloned().unwrap_or(Value::Null);
    let patch = review
        .pointer("/response/patch")
        .and_then(Value::as_str)
        .map(|p| {
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .unwrap_or_else(|| json!({"undecodable patch": p}))
        });
    json!({
        "uid": field("/response/uid"),
        "allowed": field("/response/allowed"),
        "message": field("/response/status/message"),
        "code": field("/response/status/code"),
        "warnings": field("/response/warnings").as_array().cloned().unwrap_or_default(),
        "patchType": field("/response/patchType"),
        "patch": patch,
    })
}
