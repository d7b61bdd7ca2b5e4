//! Expiry times as the identity endpoints write them: RFC 3339 in UTC
//! (STS, the container credentials endpoint, IMDS) or seconds since the
//! epoch (ECR), turned into the time left.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time left until `epoch_seconds`; zero when past.
pub fn left_until_epoch(epoch_seconds: f64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let left = epoch_seconds - now;
    if left.is_finite() && left > 0.0 {
        Duration::try_from_secs_f64(left).unwrap_or_default()
    } else {
        Duration::ZERO
    }
}

/// Seconds since the epoch of an RFC 3339 UTC time
/// (`2026-11-28T19:20:43Z`, fractions and `+00:00` accepted).
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let text = text.trim();
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date = date.splitn(3, '-');
    let year: i64 = date.next()?.parse().ok()?;
    let month: u32 = date.next()?.parse().ok()?;
    let day: u32 = date.next()?.parse().ok()?;
    let time = time
        .strip_suffix('Z')
        .or_else(|| time.strip_suffix('z'))
        .or_else(|| time.strip_suffix("+00:00"))?;
    let mut parts = time.splitn(3, ':');
    let hour: u32 = parts.next()?.parse().ok()?;
    let minute: u32 = parts.next()?.parse().ok()?;
    let seconds: f64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if !(0.0..61.0).contains(&seconds) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days as f64 * 86_400.0 + f64::from(hour * 3600 + minute * 60) + seconds)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_as_the_epoch_counts_them() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        // `date -u -d 2026-11-28T19:20:43Z +%s`
        assert_eq!(parse_rfc3339("2026-11-28T19:20:43Z"), Some(1_795_893_643.0));
        assert_eq!(
            parse_rfc3339("2000-02-29T12:00:00.5+00:00"),
            Some(951_825_600.5)
        );
        assert_eq!(parse_rfc3339("2026-11-28T19:20:43"), None);
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn time_left_is_never_negative() {
        assert_eq!(left_until_epoch(0.0), Duration::ZERO);
        assert_eq!(left_until_epoch(f64::NAN), Duration::ZERO);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let left = left_until_epoch(now.as_secs_f64() + 100.0);
        assert!(left > Duration::from_secs(98) && left <= Duration::from_secs(100));
    }
}
