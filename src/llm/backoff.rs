//! How long to wait before a model request goes out again: exponential
//! backoff with jitter, and a server's `Retry-After` (seconds or an HTTP
//! date), capped. Pure; `retry` decides whether to wait at all.

use std::time::Duration;

/// How long to wait between attempts.
///
/// Attempt `n` (1-based) that failed waits `base_delay * 2^(n-1)`, capped at
/// `max_delay`, times a random factor in `[0.5, 1.0]` (jitter), unless the
/// server sent `Retry-After`, which is honoured up to `retry_after_cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay after the first failed attempt, before jitter.
    pub base_delay: Duration,
    /// Upper bound of the exponential delay.
    pub max_delay: Duration,
    /// Upper bound of a server's `Retry-After`.
    pub retry_after_cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            retry_after_cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy with millisecond delays, for tests.
    pub fn fast() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(40),
            retry_after_cap: Duration::from_secs(60),
        }
    }

    /// The backoff after failed attempt `attempt` (1-based), with jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(16);
        let raw = self.base_delay.saturating_mul(1u32 << exponent);
        let capped = raw.min(self.max_delay);
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }

    /// How long to wait for a server that sent `Retry-After: value`.
    pub fn retry_after(&self, value: &str) -> Option<Duration> {
        parse_retry_after(value, chrono::Utc::now()).map(|wait| wait.min(self.retry_after_cap))
    }
}

/// Parses `Retry-After`: delta seconds, or an HTTP date (then the time left
/// until it, zero when it is past).
pub(crate) fn parse_retry_after(
    value: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Some(Duration::from_secs_f64(seconds.min(86_400.0)));
        }
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let left = date.with_timezone(&chrono::Utc) - now;
    Some(left.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        let now = chrono::DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .expect("valid date")
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.retry_after("3600"), Some(Duration::from_secs(60)));
    }

    #[test]
    fn backoff_grows_and_stays_capped() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            retry_after_cap: Duration::from_secs(60),
        };
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = policy.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            assert!(policy.backoff(30) <= Duration::from_millis(1000));
        }
    }
}
