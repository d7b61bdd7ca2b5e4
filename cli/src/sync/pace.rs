//! How soon to ask the API server again. A failing watch waits a jittered,
//! doubling delay ([`Backoff`]), never less than the API server asked for
//! with `Retry-After` on a 429 or 503 ([`Pace`], a layer of the kube
//! client that reads every answer's status and header), and is woken early
//! when another watch of the same client got an answer again, so a change
//! made during an outage is published within seconds of its end.
//! The layer also records each collection's last successful read, which
//! tells a re-established watch that sends no event from one still failing.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use tokio::sync::watch;

/// The first delay after an error. client-go's reflector starts at 800 ms
/// and doubles to 30 s; the lower cap here keeps a change made during an
/// outage to seconds after it (the load is bounded by the few kinds
/// watched, and by `Retry-After` where the server asks for more).
pub const FIRST_DELAY: Duration = Duration::from_millis(500);

/// The longest delay between two attempts of one watch, `Retry-After` aside.
pub const MAX_DELAY: Duration = Duration::from_secs(4);

/// The longest `Retry-After` honoured: a longer one (or an HTTP date far
/// ahead) is read as this, so a proxy's mistake cannot stop the syncer.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// A woken watch still waits up to this long, so that the watches of every
/// kind do not all ask at the same instant.
const WAKE_SPREAD: Duration = Duration::from_millis(500);

/// The doubling, jittered delay of one failing watch.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: FIRST_DELAY }
    }
}

impl Backoff {
    /// The delay before the next attempt: the current step with "equal
    /// jitter" (between half of it and all of it), so that two replicas,
    /// or two kinds, that failed together do not retry in step.
    pub fn delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(MAX_DELAY);
        jittered(step)
    }

    /// An attempt succeeded: the next failure starts from the first step.
    pub fn reset(&mut self) {
        self.next = FIRST_DELAY;
    }
}

/// Between half of `step` and all of it.
pub fn jittered(step: Duration) -> Duration {
    step / 2 + step.mul_f64(fastrand::f64() / 2.0)
}

/// What the API server's answers said, shared by every user of one client.
#[derive(Debug)]
pub struct Pace {
    state: Mutex<PaceState>,
    /// Bumped by [`Pace::wake`]: sleeping watches try again.
    answered: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct PaceState {
    /// No request before this, as the server's `Retry-After` said.
    not_before: Option<Instant>,
    /// By collection path: the last successful GET (list or watch).
    read_ok: HashMap<String, Instant>,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            state: Mutex::new(PaceState::default()),
            answered: watch::Sender::new(0),
        }
    }
}

impl Pace {
    fn lock(&self) -> MutexGuard<'_, PaceState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The server asked to wait `after` (a `Retry-After` or a Status's
    /// `retryAfterSeconds`).
    pub fn retry_after(&self, after: Duration) {
        let until = Instant::now() + after.min(MAX_RETRY_AFTER);
        let mut state = self.lock();
        state.not_before = Some(state.not_before.map_or(until, |at| at.max(until)));
    }

    /// How long the server asked to wait still.
    pub fn wait_asked(&self) -> Duration {
        self.lock().not_before.map_or(Duration::ZERO, |at| {
            at.saturating_duration_since(Instant::now())
        })
    }

    /// When a GET of the collection at `path` last succeeded.
    pub fn read_ok(&self, path: &str) -> Option<Instant> {
        self.lock().read_ok.get(path).copied()
    }

    /// Records the answer to a GET of `path`.
    fn answered(&self, path: &str, status: StatusCode) {
        if status.is_success() {
            self.lock().read_ok.insert(path.to_string(), Instant::now());
        }
    }

    /// A watch got an object again after failing: the API server answers,
    /// so the others waiting try again now. (A watch's 200 alone says
    /// little: a 410 comes as an event inside one.)
    pub fn wake(&self) {
        self.answered.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Waits `delay`, and at least as long as the server asked; cut short
    /// (to a spread of [`WAKE_SPREAD`]) when another read succeeds meanwhile.
    pub async fn wait(&self, delay: Duration) {
        let mut answered = self.answered.subscribe();
        answered.mark_unchanged();
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = answered.changed() => {
                tokio::time::sleep(WAKE_SPREAD.mul_f64(fastrand::f64())).await;
            }
        }
        let asked = self.wait_asked();
        if !asked.is_zero() {
            tokio::time::sleep(asked + jittered(WAKE_SPREAD)).await;
        }
    }
}

/// `Retry-After` as seconds or as an HTTP date, relative to now.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The kube client's layer that feeds a [`Pace`].
#[derive(Debug, Clone)]
pub struct PaceLayer(pub Arc<Pace>);

impl<S> tower::Layer<S> for PaceLayer {
    type Service = PaceService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PaceService {
            inner,
            pace: self.0.clone(),
        }
    }
}

/// The service [`PaceLayer`] makes.
#[derive(Debug, Clone)]
pub struct PaceService<S> {
    inner: S,
    pace: Arc<Pace>,
}

type Boxed<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B, RB> tower::Service<Request<B>> for PaceService<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = Boxed<Response<RB>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let read =
            (request.method() == http::Method::GET).then(|| request.uri().path().to_string());
        let pace = self.pace.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            let status = response.status();
            if matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
            ) {
                let asked = response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(retry_after);
                if let Some(asked) = asked {
                    pace.retry_after(asked);
                }
            }
            if let Some(path) = read {
                pace.answered(&path, status);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_to_its_cap_with_jitter_and_resets() {
        let mut backoff = Backoff::default();
        let delays: Vec<Duration> = (0..8).map(|_| backoff.delay()).collect();
        let steps = [500, 1000, 2000, 4000, 4000, 4000, 4000, 4000];
        for (delay, step) in delays.iter().zip(steps) {
            let step = Duration::from_millis(step);
            assert!(
                *delay >= step / 2 && *delay <= step,
                "{delay:?} for {step:?}"
            );
        }
        // Jittered: not every capped delay is the same.
        let many: std::collections::BTreeSet<Duration> = (0..32).map(|_| backoff.delay()).collect();
        assert!(many.len() > 1);
        backoff.reset();
        assert!(backoff.delay() <= FIRST_DELAY);
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_a_date_and_bounded() {
        assert_eq!(retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(" 0 "), Some(Duration::ZERO));
        let past = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(retry_after(past), Some(Duration::ZERO));
        let ahead = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        let read = retry_after(&ahead).unwrap();
        assert!(
            read > Duration::from_secs(27) && read <= Duration::from_secs(30),
            "{read:?}"
        );
        // Negative: neither a number nor a date.
        assert_eq!(retry_after("soon"), None);
        assert_eq!(retry_after("-3"), None);
        let pace = Pace::default();
        assert_eq!(pace.wait_asked(), Duration::ZERO);
        pace.retry_after(Duration::from_secs(3600));
        assert!(pace.wait_asked() <= MAX_RETRY_AFTER);
        assert!(pace.wait_asked() > MAX_RETRY_AFTER - Duration::from_secs(2));
    }

    #[test]
    fn reads_are_recorded_and_a_wake_cuts_waits_short() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let pace = Arc::new(Pace::default());
            pace.answered("/api/v1/pods", StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(pace.read_ok("/api/v1/pods"), None);
            pace.answered("/api/v1/nodes", StatusCode::OK);
            assert!(pace.read_ok("/api/v1/nodes").is_some());
            let waiting = {
                let pace = pace.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    pace.wait(Duration::from_secs(30)).await;
                    started.elapsed()
                })
            };
            tokio::time::sleep(Duration::from_millis(50)).await;
            pace.wake();
            let waited = waiting.await.unwrap();
            assert!(waited < Duration::from_secs(2), "{waited:?}");
            // Negative: without a wake, the whole delay; and a Retry-After
            // longer than the delay is waited out.
            pace.retry_after(Duration::from_millis(400));
            let started = Instant::now();
            pace.wait(Duration::from_millis(100)).await;
            assert!(started.elapsed() >= Duration::from_millis(400));
        });
    }
}
