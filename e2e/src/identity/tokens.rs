//! Tokens as the fake identity services issue them: fresh each time, and
//! recorded with when they were issued and when they expire, so a test can
//! tell a renewal that came in time from one that came too late.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One credential a fake service issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The token; for AWS keys, the access key id.
    pub token: String,
    /// When it was issued.
    pub issued_at: SystemTime,
    /// When it stops working.
    pub expires_at: SystemTime,
}

impl Issued {
    /// Whether it still works at `at`.
    pub fn valid_at(&self, at: SystemTime) -> bool {
        at < self.expires_at
    }
}

/// Whether every credential after the first was issued before the one
/// before it expired: the client renewed in time, never ran on an
/// expired one. True for fewer than two.
pub fn renewed_in_time(issued: &[Issued]) -> bool {
    issued
        .windows(2)
        .all(|pair| matches!(pair, [before, after] if after.issued_at < before.expires_at))
}

static ISSUED: AtomicU64 = AtomicU64::new(0);

/// `tok-<n>-<16 hex digits>`: numbered, so a log reads in order, and random,
/// so no two runs share one. Short enough for bcrypt, which reads 72 bytes.
pub fn fresh_token() -> String {
    let n = ISSUED.fetch_add(1, Ordering::SeqCst) + 1;
    format!("tok-{n}-{}", random_hex(16))
}

/// `chars` random lower-case hex digits (random enough for test secrets).
pub fn random_hex(chars: usize) -> String {
    let mut out = String::with_capacity(chars + 16);
    while out.len() < chars {
        // Each RandomState is keyed afresh from the process's random seed.
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(ISSUED.fetch_add(1, Ordering::SeqCst));
        hasher.write_u128(since_epoch(SystemTime::now()).as_nanos());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out.truncate(chars);
    out
}

/// A request id in AWS's shape (a UUID).
pub fn request_id() -> String {
    let hex = random_hex(32);
    let part = |from: usize, to: usize| hex.get(from..to).unwrap_or_default().to_string();
    format!(
        "{}-{}-{}-{}-{}",
        part(0, 8),
        part(8, 12),
        part(12, 16),
        part(16, 20),
        part(20, 32)
    )
}

/// `2015-08-30T12:36:00Z`: ISO 8601 in UTC, to the second.
pub fn iso8601(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Seconds since the epoch, with milliseconds, as ECR's `expiresAt` has them.
pub fn epoch_seconds(at: SystemTime) -> f64 {
    since_epoch(at).as_millis() as f64 / 1000.0
}

fn since_epoch(at: SystemTime) -> Duration {
    at.duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// The pairs of a `application/x-www-form-urlencoded` body, decoded.
pub fn form(body: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                crate::faults::http::decode(name),
                crate::faults::http::decode(value),
            )
        })
        .collect()
}

/// The value of `name` in decoded form pairs.
pub fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A lock that survives a panicking holder (a failed assertion in a handler
/// must not hide what the service recorded).
pub(crate) fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_numbered() {
        let (a, b) = (fresh_token(), fresh_token());
        assert_ne!(a, b);
        assert!(a.starts_with("tok-") && a.len() < 72, "{a}");
        assert_eq!(random_hex(40).len(), 40);
        assert_eq!(request_id().len(), 36);
    }

    #[test]
    fn a_renewal_counts_only_before_the_expiry() {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        let token = |issued: u64, expires: u64| Issued {
            token: String::new(),
            issued_at: at(issued),
            expires_at: at(expires),
        };
        assert!(renewed_in_time(&[
            token(0, 10),
            token(5, 15),
            token(12, 20)
        ]));
        assert!(!renewed_in_time(&[token(0, 10), token(10, 20)]));
        assert!(renewed_in_time(&[token(0, 10)]));
    }

    #[test]
    fn times_read_as_aws_writes_them() {
        let at = UNIX_EPOCH + Duration::from_millis(1_440_938_160_250);
        assert_eq!(iso8601(at), "2015-08-30T12:36:00Z");
        assert_eq!(epoch_seconds(at), 1_440_938_160.25);
        assert_eq!(
            form(b"a=1&b=x%2By+z&c"),
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "x+y z".to_string()),
                ("c".to_string(), String::new())
            ]
        );
    }
}
