//! Shared fixtures: the policy module, its annotated form, metadata.yml,
//! external programs, and a tiny HTTP/1.0 client for 127.0.0.1.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use os_placement_e2e::annotate::{
    annotate_bytes, embedded_metadata, load_metadata, protocol_version,
};
use os_placement_e2e::external;
use os_placement_e2e::{repo_root, wasm_path, PolicyModule};
use serde_json::Value;

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

/// The policy annotated with metadata.yml and README.md, as `make annotated-policy.wasm` builds it.
pub fn annotated_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let Value::Object(metadata) = metadata_yml() else {
            unreachable!()
        };
        let protocol = protocol_version(policy_bytes()).unwrap();
        let embedded = embedded_metadata(metadata, &protocol, Some(&readme()));
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

/// A free TCP port on 127.0.0.1 (bound then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// An HTTP response: status code, headers (lower-case names), body.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// One HTTP/1.0 request to 127.0.0.1:`port` (the connection closes after it).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of HTTP headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(HttpResponse {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// Waits until `ready` holds, up to `limit`.
pub fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ready()
}
