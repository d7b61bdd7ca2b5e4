//! A tiny HTTP/1.0 client for the local test servers (registry,
//! policy-server): one request per connection, to 127.0.0.1 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};

/// An HTTP response: status code, headers (lower-case names), body.
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
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
    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).map_err(|e| Error::Document {
            what: "HTTP body".to_owned(),
            message: format!("{e}: {}", String::from_utf8_lossy(&self.body)),
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
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
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
    let (head, rest) = raw.split_at(split);
    let head = String::from_utf8_lossy(head).into_owned();
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
        body: rest.get(4..).unwrap_or_default().to_vec(),
    })
}

/// POSTs `body` as JSON and reads a 200 answer's body as JSON.
pub fn post_json(port: u16, path: &str, body: &Value) -> Result<Value> {
    let failed = |message: String| Error::Process {
        what: format!("POST 127.0.0.1:{port}{path}"),
        message,
    };
    let body = serde_json::to_vec(body).map_err(|e| failed(e.to_string()))?;
    let response = http(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        &body,
    )
    .map_err(|e| failed(e.to_string()))?;
    if response.status != 200 {
        return Err(failed(format!(
            "HTTP {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )));
    }
    response.json()
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
