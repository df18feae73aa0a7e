//! When and how long to wait before sending a failed request again.
//!
//! Only failures before the first byte of the response are retried: after that, part of the
//! reply has been shown and a second attempt would show a different one.

use std::time::Duration;

/// Exponential backoff with jitter, honouring the server's `retry-after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each one after.
    pub base_delay: Duration,
    /// No single wait is longer; a `retry-after` beyond it fails at once instead, since a
    /// user watching a spinner is better served by the error.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// What to do before retry number `attempt` (1-based).
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<&RetryAfter>) -> Delay {
        if attempt > self.max_retries {
            return Delay::Exhausted;
        }
        if let Some(asked) = retry_after {
            if asked.wait > self.max_delay {
                return Delay::TooLong;
            }
            return Delay::Wait(asked.wait);
        }
        let exponential = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(self.max_delay);
        Delay::Wait(jitter(exponential))
    }
}

/// The decision before a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delay {
    /// Wait this long, then send again.
    Wait(Duration),
    /// No retry is left.
    Exhausted,
    /// The server asked for a longer wait than `max_delay`.
    TooLong,
}

/// A wait the server asked for, and how it said it (for the message when it is too long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RetryAfter {
    /// Saturated: a wait too long to represent is `Duration::MAX`.
    pub wait: Duration,
    /// As sent, with its unit: `1e30 s`, `250 ms`.
    pub shown: String,
}

/// Statuses worth another attempt: rate limits, overload (Anthropic's 529) and server errors.
pub(crate) fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status) && status != 501
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds; HTTP dates are rare for APIs and
/// fall back to the backoff. A value too large for a `Duration` (`1e30`) saturates: it is
/// still a request to wait, and far too long.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<RetryAfter> {
    let value = |name: &str| {
        let text = headers.get(name)?.to_str().ok()?.trim();
        let number = text.parse::<f64>().ok()?;
        (number.is_finite() && number >= 0.0).then(|| (number, text.to_string()))
    };
    let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
    if let Some((ms, text)) = value("retry-after-ms") {
        return Some(RetryAfter {
            wait: secs(ms / 1000.0),
            shown: format!("{text} ms"),
        });
    }
    value("retry-after").map(|(s, text)| RetryAfter {
        wait: secs(s),
        shown: format!("{text} s"),
    })
}

/// Scales `delay` by a random factor in [0.5, 1.0) so that many clients hitting the same
/// limit do not retry in lockstep.
fn jitter(delay: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // Each RandomState is seeded afresh: enough randomness for spreading retries, no extra
    // dependency.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor = 0.5 + (random % 1000) as f64 / 2000.0;
    delay.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stops_after_the_last_retry() {
        let policy = RetryPolicy::default();
        for attempt in 1..=3 {
            let full = Duration::from_secs(1 << (attempt - 1));
            let Delay::Wait(delay) = policy.delay(attempt, None) else {
                panic!("attempt {attempt} waits")
            };
            assert!(delay >= full / 2 && delay < full, "{attempt}: {delay:?}");
        }
        assert_eq!(policy.delay(4, None), Delay::Exhausted);
        assert_eq!(RetryPolicy::none().delay(1, None), Delay::Exhausted);
    }

    #[test]
    fn retry_after_wins_unless_it_is_too_long() {
        let policy = RetryPolicy::default();
        let asked = |secs| RetryAfter {
            wait: Duration::from_secs(secs),
            shown: format!("{secs} s"),
        };
        assert_eq!(
            policy.delay(1, Some(&asked(7))),
            Delay::Wait(Duration::from_secs(7))
        );
        assert_eq!(policy.delay(1, Some(&asked(3600))), Delay::TooLong);
    }

    #[test]
    fn retry_after_headers_are_read() {
        let mut headers = reqwest::header::HeaderMap::new();
        let wait = |headers: &reqwest::header::HeaderMap| retry_after(headers).map(|r| r.wait);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(wait(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(wait(&headers), Some(Duration::from_millis(250)));
        assert_eq!(retry_after(&headers).unwrap().shown, "250 ms");
        headers.insert("retry-after-ms", "1e30".parse().unwrap());
        assert_eq!(wait(&headers), Some(Duration::MAX), "saturates, no panic");
        headers.clear();
        headers.insert("retry-after", "1e300".parse().unwrap());
        assert_eq!(wait(&headers), Some(Duration::MAX));
        assert_eq!(retry_after(&headers).unwrap().shown, "1e300 s");
        headers.clear();
        headers.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        for status in [408, 429, 500, 502, 503, 504, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 501] {
            assert!(!retryable_status(status), "{status}");
        }
    }
}
