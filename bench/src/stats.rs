//! Order statistics of timed samples.

use std::time::Duration;

/// Median and p99 of a sample, in µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The median.
    pub median: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
}

/// Median and p99 in µs (nearest rank); NaN for no samples.
pub fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort();
    let at = |q: f64| {
        let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len().max(1));
        samples
            .get(rank - 1)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
    };
    Stats {
        median: at(0.5),
        p99: at(0.99),
    }
}

/// Median and mean of a sample.
pub fn median_and_mean(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let median = samples.get(samples.len() / 2).copied().unwrap_or_default();
    let total: Duration = samples.iter().sum();
    (
        median,
        total / u32::try_from(samples.len().max(1)).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let s = stats(&mut samples);
        assert_eq!((s.median, s.p99), (50.0, 99.0));
        assert!(stats(&mut []).median.is_nan());
        let mut three = [3, 1, 2].map(Duration::from_micros);
        assert_eq!(
            median_and_mean(&mut three),
            (Duration::from_micros(2), Duration::from_micros(2))
        );
        assert_eq!(median_and_mean(&mut []), (Duration::ZERO, Duration::ZERO));
    }
}
