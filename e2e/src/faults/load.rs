//! Concurrent admission requests against a policy-server, each with a
//! deadline, and what they measured: answer time, verdict and warnings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Whether a request's pod needs an image lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Its image is on the registry under test.
    Lookup,
    /// Its reference decides everything: no image lookup.
    Plain,
}

/// What one request got.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// An AdmissionReview answer.
    Answered {
        /// `response.allowed`.
        allowed: bool,
        /// `response.warnings`.
        warnings: Vec<String>,
        /// `response.status.message`.
        message: Option<String>,
    },
    /// Nothing within the deadline.
    NoAnswer,
    /// Something else: a refused connection, an HTTP error, not JSON.
    Failed(String),
}

/// One request's measurement.
#[derive(Debug, Clone)]
pub struct Probe {
    /// What the pod needed.
    pub need: Need,
    /// Until the answer, or the deadline.
    pub elapsed: Duration,
    /// What came back.
    pub outcome: Outcome,
}

/// Sends `review` to `/validate/<policy>` on 127.0.0.1:`port`, waiting at most `deadline`.
pub fn send(port: u16, policy: &str, review: &Value, deadline: Duration) -> (Duration, Outcome) {
    let started = Instant::now();
    let outcome = exchange(port, policy, review, deadline);
    (started.elapsed(), outcome)
}

fn exchange(port: u16, policy: &str, review: &Value, deadline: Duration) -> Outcome {
    let body = review.to_string();
    let request = format!(
        "POST /validate/{policy} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = match TcpStream::connect(("127.0.0.1", port)) {
        Ok(stream) => stream,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let started = Instant::now();
    if stream.set_read_timeout(Some(deadline)).is_err()
        || stream.write_all(request.as_bytes()).is_err()
    {
        return Outcome::Failed("cannot send".into());
    }
    let mut raw = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_sub(started.elapsed());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Outcome::NoAnswer;
        }
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(buffer.get(..n).unwrap_or_default()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Outcome::NoAnswer
            }
            Err(e) => return Outcome::Failed(e.to_string()),
        }
    }
    read_answer(&raw)
}

fn read_answer(raw: &[u8]) -> Outcome {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Outcome::Failed("no HTTP answer".into());
    };
    let (head, body) = raw.split_at(split);
    let head = String::from_utf8_lossy(head);
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        let status = head.lines().next().unwrap_or_default().to_string();
        return Outcome::Failed(status);
    }
    let Ok(review) = serde_json::from_slice::<Value>(body.get(4..).unwrap_or_default()) else {
        return Outcome::Failed("the answer is not JSON".into());
    };
    let response = review.get("response").unwrap_or(&Value::Null);
    Outcome::Answered {
        allowed: response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        message: response
            .pointer("/status/message")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// `rounds` rounds of concurrent requests: every `lookups` review, then,
/// 50 ms later (so they queue behind the lookups), every `plains` review.
/// After a round with a request unanswered the load stops: the server is
/// stalled, and more requests would only wait for the deadline too.
pub fn load(
    port: u16,
    policy: &str,
    lookups: &[Value],
    plains: &[Value],
    rounds: usize,
    deadline: Duration,
) -> Vec<Probe> {
    let mut probes = Vec::new();
    for _ in 0..rounds {
        let round = one_round(port, policy, lookups, plains, deadline);
        let stalled = round.iter().any(|p| p.outcome == Outcome::NoAnswer);
        probes.extend(round);
        if stalled {
            break;
        }
    }
    probes
}

fn one_round(
    port: u16,
    policy: &str,
    lookups: &[Value],
    plains: &[Value],
    deadline: Duration,
) -> Vec<Probe> {
    std::thread::scope(|scope| {
        let spawn = |need: Need, review: &Value| {
            let review = review.clone();
            scope.spawn(move || {
                let (elapsed, outcome) = send(port, policy, &review, deadline);
                Probe {
                    need,
                    elapsed,
                    outcome,
                }
            })
        };
        let mut handles: Vec<_> = lookups.iter().map(|r| spawn(Need::Lookup, r)).collect();
        std::thread::sleep(Duration::from_millis(50));
        handles.extend(plains.iter().map(|r| spawn(Need::Plain, r)));
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Answer times of one kind of request: p50, p99 and max, or `None` for a
/// statistic that falls on an unanswered request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Times {
    /// Median.
    pub p50: Option<Duration>,
    /// 99th percentile (nearest rank).
    pub p99: Option<Duration>,
    /// Slowest.
    pub max: Option<Duration>,
    /// Requests measured.
    pub count: usize,
    /// Of which unanswered within the deadline.
    pub unanswered: usize,
}

impl Times {
    /// The times of `probes` needing `need`; unanswered ones rank last.
    pub fn of(probes: &[Probe], need: Need) -> Times {
        let mut answered: Vec<Duration> = probes
            .iter()
            .filter(|p| p.need == need && matches!(p.outcome, Outcome::Answered { .. }))
            .map(|p| p.elapsed)
            .collect();
        answered.sort();
        let count = probes.iter().filter(|p| p.need == need).count();
        let unanswered = count - answered.len();
        let rank = |q: f64| -> Option<Duration> {
            if count == 0 {
                return None;
            }
            let index = ((q * count as f64).ceil() as usize).clamp(1, count) - 1;
            answered.get(index).copied()
        };
        Times {
            p50: rank(0.50),
            p99: rank(0.99),
            max: if unanswered > 0 {
                None
            } else {
                answered.last().copied()
            },
            count,
            unanswered,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn probe(need: Need, ms: u64, answered: bool) -> Probe {
        Probe {
            need,
            elapsed: Duration::from_millis(ms),
            outcome: if answered {
                Outcome::Answered {
                    allowed: true,
                    warnings: vec![],
                    message: None,
                }
            } else {
                Outcome::NoAnswer
            },
        }
    }

    #[test]
    fn percentiles_rank_unanswered_requests_last() {
        let probes: Vec<Probe> = (1..=10)
            .map(|i| probe(Need::Lookup, i * 10, true))
            .chain([probe(Need::Plain, 5, true)])
            .collect();
        let times = Times::of(&probes, Need::Lookup);
        assert_eq!(times.p50, Some(Duration::from_millis(50)));
        assert_eq!(times.p99, Some(Duration::from_millis(100)));
        assert_eq!(times.max, Some(Duration::from_millis(100)));
        assert_eq!((times.count, times.unanswered), (10, 0));
        let stalled = [
            probe(Need::Lookup, 12_000, false),
            probe(Need::Lookup, 20, true),
        ];
        let times = Times::of(&stalled, Need::Lookup);
        assert_eq!(times.p50, Some(Duration::from_millis(20)));
        assert_eq!((times.p99, times.max, times.unanswered), (None, None, 1));
    }

    #[test]
    fn an_admission_review_answer_is_read() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"response\":{\"allowed\":true,\"warnings\":[\"w\"]}}";
        assert_eq!(
            read_answer(raw),
            Outcome::Answered {
                allowed: true,
                warnings: vec!["w".into()],
                message: None
            }
        );
        assert!(
            matches!(read_answer(b"HTTP/1.1 500 Internal\r\n\r\n"), Outcome::Failed(s) if s.contains("500"))
        );
    }
}
