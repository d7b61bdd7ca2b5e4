//! OCI registries that misbehave, on 127.0.0.1, for the fault-injection
//! suite: each serves one image index (`GET /v2/` and
//! `GET /v2/<name>/manifests/<tag>`) the way its [`Fault`] says; and
//! [`Scripted`] servers that answer as a test's function says (redirects,
//! challenges, token services, oversized bodies) and record every request,
//! headers included. Every connection runs on its own thread and every
//! wait is bounded: the server stops, and its held connections close, when
//! it is dropped.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use super::http::{chunk, listen, read_request, respond, respond_with, start_chunked, Request};
use crate::error::Error;

/// How a registry misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers at once, with a valid Windows index: the control case.
    Healthy,
    /// Accepts connections and never answers (an overloaded registry, or
    /// one behind a firewall that drops packets after the handshake).
    Hang,
    /// Answers manifests after this long.
    Slow(Duration),
    /// Resets every connection.
    Reset,
    /// Answers 500 to everything.
    ServerError,
    /// Serves a manifest that is not JSON.
    Malformed,
    /// Serves an index of this many entries (megabytes of JSON).
    Huge(usize),
}

impl Fault {
    /// A short name for the report.
    pub fn name(&self) -> String {
        match self {
            Fault::Healthy => "healthy".into(),
            Fault::Hang => "hangs".into(),
            Fault::Slow(after) => format!("answers after {}s", after.as_secs()),
            Fault::Reset => "resets connections".into(),
            Fault::ServerError => "answers 500".into(),
            Fault::Malformed => "malformed index".into(),
            Fault::Huge(entries) => format!("huge index ({entries} entries)"),
        }
    }
}

/// A misbehaving registry.
pub struct FaultRegistry {
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

const INDEX: &str = "application/vnd.oci.image.index.v1+json";

impl FaultRegistry {
    /// Starts a registry with `fault` on a free port.
    pub fn start(fault: Fault) -> Result<FaultRegistry, Error> {
        let (listener, port) = listen("a fault registry")?;
        let stop = Arc::new(AtomicBool::new(false));
        let body = Arc::new(body_of(fault));
        let accept = {
            let stop = stop.clone();
            std::thread::spawn(move || accept_loop(&listener, fault, &body, &stop))
        };
        Ok(FaultRegistry {
            port,
            stop,
            accept: Some(accept),
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The image reference it serves.
    pub fn image(&self) -> String {
        format!("{}/corp/app:1", self.host())
    }
}

impl Drop for FaultRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, fault: Fault, body: &Arc<Vec<u8>>, stop: &Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let (body, stop) = (body.clone(), stop.clone());
                std::thread::spawn(move || serve(&stream, fault, &body, &stop));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Waits for `stop`, or `limit`, whichever comes first.
fn hold(stop: &AtomicBool, limit: Duration) {
    let started = Instant::now();
    while !stop.load(Ordering::SeqCst) && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve(stream: &TcpStream, fault: Fault, body: &[u8], stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    match fault {
        // Reads nothing, answers nothing, until the suite ends.
        Fault::Hang => return hold(stop, Duration::from_secs(600)),
        Fault::Reset => {
            // Closing with the request unread makes the kernel send RST, not FIN.
            std::thread::sleep(Duration::from_millis(20));
            return;
        }
        _ => {}
    }
    let Some(request) = read_request(stream) else {
        let _ = stream.shutdown(Shutdown::Both);
        return;
    };
    if fault == Fault::ServerError {
        return respond(
            stream,
            500,
            "application/json",
            br#"{"errors":[{"code":"UNKNOWN","message":"internal error"}]}"#,
        );
    }
    if request.path == "/v2/" || request.path == "/v2" {
        return respond(stream, 200, "application/json", b"{}");
    }
    if !request.path.contains("/manifests/") {
        return respond(
            stream,
            404,
            "application/json",
            br#"{"errors":[{"code":"NAME_UNKNOWN"}]}"#,
        );
    }
    if let Fault::Slow(after) = fault {
        hold(stop, after);
    }
    respond(stream, 200, INDEX, body);
}

/// What the manifest endpoint serves.
fn body_of(fault: Fault) -> Vec<u8> {
    let entry = |i: usize| {
        json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
               "digest": format!("sha256:{i:064x}"), "size": 500,
               "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.2700"}})
    };
    match fault {
        Fault::Malformed => br#"{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{"digest": "#.to_vec(),
        Fault::Huge(entries) => {
            let manifests: Vec<_> = (0..entries).map(entry).collect();
            json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests})
                .to_string()
                .into_bytes()
        }
        _ => json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": [entry(1)]})
            .to_string()
            .into_bytes(),
    }
}

/// What a [`Scripted`] server answers to one request.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// Headers besides the length.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Sent in chunks, without a length.
    pub chunked: bool,
}

impl Answer {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            chunked: false,
        }
    }

    /// 200 with `body` as `content_type`.
    pub fn ok(content_type: &str, body: Vec<u8>) -> Answer {
        Answer {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
            chunked: false,
        }
    }

    /// 307 to `location`.
    pub fn redirect(location: &str) -> Answer {
        Answer {
            status: 307,
            headers: vec![("Location".into(), location.into())],
            ..Answer::default()
        }
    }

    /// 401 with `WWW-Authenticate: challenge`.
    pub fn challenge(challenge: &str) -> Answer {
        Answer {
            status: 401,
            headers: vec![("WWW-Authenticate".into(), challenge.into())],
            body: br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#
                .to_vec(),
            chunked: false,
        }
    }
}

type Handler = dyn Fn(&Request) -> Answer + Send + Sync;

/// A tiny HTTP server on 127.0.0.1 that answers each request as its
/// handler says, and records every connection and request.
pub struct Scripted {
    port: u16,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

impl Scripted {
    /// Starts a server answering with `handler`.
    pub fn start(
        handler: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    ) -> Result<Scripted, Error> {
        let (listener, port) = listen("a scripted server")?;
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let accept = {
            let (stop, seen, connections) = (stop.clone(), seen.clone(), connections.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            let (handler, seen) = (handler.clone(), seen.clone());
                            std::thread::spawn(move || answer(&stream, &*handler, &seen));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Ok(Scripted {
            port,
            stop,
            seen,
            connections,
            accept: Some(accept),
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The requests it answered so far.
    pub fn seen(&self) -> Vec<Request> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The connections it accepted so far (HTTP or not).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn answer(stream: &TcpStream, handler: &Handler, seen: &Mutex<Vec<Request>>) {
    let _ = stream.set_nonblocking(false);
    let Some(request) = read_request(stream) else {
        return;
    };
    let answer = handler(&request);
    if let Ok(mut seen) = seen.lock() {
        seen.push(request);
    }
    let headers: Vec<(&str, &str)> = answer
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    if answer.chunked {
        let content_type = answer
            .headers
            .first()
            .map_or("application/json", |(_, v)| v.as_str());
        if start_chunked(stream, content_type).is_ok() {
            for part in answer.body.chunks(64 * 1024) {
                if chunk(stream, part).is_err() {
                    return;
                }
            }
            let _ = chunk(stream, b"");
        }
        return;
    }
    respond_with(stream, answer.status, &headers, &answer.body);
}
