//! The syncer's HTTP endpoints, on one port (`--metrics-address`):
//! `/healthz` answers 200 while the syncer's loop turns (liveness),
//! `/readyz` 200 once every watch is synced, leader or standby
//! (readiness), `/metrics` the Prometheus metrics. Served by hyper, with a
//! bound on connections, header size and header time, so a client can
//! hold little of the syncer's memory.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::metrics::Metrics;

/// A loop that has not turned for this long is stuck: `/healthz` fails.
/// It turns every second, or after a publish (at most a minute).
pub const STUCK_AFTER: Duration = Duration::from_secs(90);

/// Connections served at once; more wait to be accepted.
const CONNECTIONS: usize = 16;

/// What the endpoints report, shared with the loop that updates it.
pub struct Status {
    started: Instant,
    /// Milliseconds since `started` at the loop's last turn.
    turned: AtomicU64,
    ready: AtomicBool,
    /// The metrics.
    pub metrics: Metrics,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            started: Instant::now(),
            turned: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            metrics: Metrics::new(),
        }
    }
}

impl Status {
    /// The loop turned now.
    pub fn turn(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.turned.store(now, Ordering::Relaxed);
    }

    /// Whether every watch is synced.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
        self.metrics.watches_synced.set(i64::from(ready));
    }

    fn live(&self) -> bool {
        let turned = Duration::from_millis(self.turned.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(turned) < STUCK_AFTER
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

/// Binds `address` (port 0: a free one), so a port in use stops the syncer at start.
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

/// Serves the endpoints on `listener` until the runtime stops.
pub async fn serve(listener: TcpListener, status: Arc<Status>) {
    let permits = Arc::new(Semaphore::new(CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("os-placement facts sync: /metrics: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let status = status.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, status.clone()));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .max_buf_size(16 * 1024)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    status: Arc<Status>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (code, content_type, body) = match request.uri().path() {
        "/healthz" if status.live() => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        "/healthz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!("the sync loop has not turned for {STUCK_AFTER:?}\n"),
        ),
        "/readyz" if status.ready() => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "the watches of the cluster are not synced\n".to_string(),
        ),
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            status.metrics.encode(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = code;
    if let Ok(value) = content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    Ok(response)
}

/// The address a listener got (port 0 asked for any).
pub fn local_address(listener: &TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use os_placement_e2e::http::http;

    /// Serves `status` on a free port from a thread of its own.
    fn serving(status: Arc<Status>) -> u16 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(bind("127.0.0.1:0".parse().unwrap()))
            .unwrap();
        let port = local_address(&listener).unwrap().port();
        std::thread::spawn(move || runtime.block_on(serve(listener, status)));
        port
    }

    fn get(port: u16, path: &str) -> (u16, String) {
        let answer = http(port, "GET", path, &[], b"").unwrap();
        (
            answer.status,
            String::from_utf8_lossy(&answer.body).into_owned(),
        )
    }

    #[test]
    fn probes_say_whether_the_loop_turns_and_the_watches_are_synced() {
        let status = Arc::new(Status::default());
        let port = serving(status.clone());
        status.turn();
        assert_eq!(get(port, "/healthz").0, 200);
        assert_eq!(get(port, "/readyz").0, 503);
        status.set_ready(true);
        assert_eq!(get(port, "/readyz").0, 200);
        let (code, metrics) = get(port, "/metrics");
        assert_eq!(code, 200);
        assert!(
            metrics.contains("\nos_placement_sync_watches_synced 1\n"),
            "{metrics}"
        );
        assert_eq!(get(port, "/other").0, 404);
        // A loop that has not turned for longer than STUCK_AFTER is not live.
        let stuck = Arc::new(Status {
            started: Instant::now().checked_sub(STUCK_AFTER * 2).unwrap(),
            ..Status::default()
        });
        let port = serving(stuck);
        assert_eq!(get(port, "/healthz").0, 503);
    }
}
