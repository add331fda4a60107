//! How fast and how often the client calls: exponential backoff with jitter between
//! retries (webhook deliveries use the same), and an optional requests-per-second cap
//! shared by all tasks.

use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// 429 answers one document may get in one pass. A 429 spends none of the
/// document's retries (its `Retry-After` is the throttle's to wait,
/// `crate::api::throttle`), but a service that answers one document 429 whatever
/// the pace refuses that document, not the pace: paced, under 5 % of answers are
/// 429, so ten to one document in one pass come once in 10^13, and at 10 % of
/// answers 429 at random (the heavy fault mix), once in 10^10.
pub const RATE_LIMITED_ATTEMPTS: u32 = 10;

/// Attempts a document gets while the service answers `success: false` on purpose
/// ([`crate::api::error::Retry::Refused`]): the first try and four retries, spaced by
/// the policy's first four delays (0.2 + 0.4 + 0.8 + 1.6 s by default, at most 4.5 s
/// with jitter), and no second pass at the end of a sync. Five is what a flaky
/// service needs: when 5 % of all answers are such refusals and 45 % are good (the
/// heavy fault mix of the tests, the rest transient failures that do not count
/// here), an answer that is not transient is a refusal one time in ten, so a
/// document that will be served gets five refusals before its answer with
/// probability 0.1^5 = 1e-5, once in 100,000 documents.
pub const REFUSED_ATTEMPTS: u32 = 5;

/// Retry policy: `base × 2^attempt`, capped, with ±50 % jitter so many tasks that
/// failed together do not come back together.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// Delay before the first retry.
    pub base: Duration,
    /// Longest delay between two attempts.
    pub cap: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(200),
            cap: Duration::from_secs(10),
            max_retries: 5,
        }
    }
}

impl Backoff {
    /// The policy of a document's second pass, at the end of a run: a five times
    /// longer first delay and twice the retries, so a failure that outlasted the
    /// first pass gets time to clear, while the number of attempts stays bounded
    /// (`max_retries + 1` first, `2 × max_retries + 1` then).
    pub fn second_pass(&self) -> Backoff {
        Backoff {
            base: self.base.saturating_mul(5),
            cap: self.cap.max(self.base.saturating_mul(5)),
            max_retries: self.max_retries.saturating_mul(2),
        }
    }

    /// Most attempts one document gets over both passes.
    pub fn most_attempts(&self) -> u32 {
        let second = self.second_pass();
        (self.max_retries + 1).saturating_add(second.max_retries + 1)
    }

    /// Delay before retry number `attempt` (0-based); a server's `Retry-After`
    /// wins when it is longer, within [`crate::api::throttle::MAX_RETRY_AFTER`].
    pub fn delay(&self, attempt: u32, retry_after: Option<u64>) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.cap);
        let jitter = 0.5 + random_unit();
        let delay = exp.mul_f64(jitter);
        match retry_after {
            Some(secs) => delay.max(crate::api::throttle::honoured(secs)),
            None => delay,
        }
    }
}

/// The whole seconds of a `Retry-After` header, if it has them (the HTTP-date form
/// is rare on APIs and webhooks, and is taken as absent).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// A uniform number in [0, 1) from the standard library's randomly keyed hasher:
/// jitter needs no reproducibility, and this avoids a dependency.
fn random_unit() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// Request starts spaced at least an interval apart: the one computation of the
/// next slot, for the `--rps` cap ([`RateLimiter`]) and the throttle's ceiling.
#[derive(Debug, Default)]
pub struct Spacing {
    next: Option<Instant>,
}

impl Spacing {
    /// The slot of a request that may start at `earliest`, `interval` after the
    /// previous one's; the next one's comes `interval` after it.
    pub fn slot(&mut self, earliest: Instant, interval: Duration) -> Instant {
        let slot = self.next.map_or(earliest, |n| n.max(earliest));
        self.next = Some(slot + interval);
        slot
    }

    /// Forgets the previous slot: the next request starts when it may.
    pub fn clear(&mut self) {
        self.next = None;
    }
}

/// Spaces request starts at least `1/rps` apart, across all tasks.
#[derive(Debug)]
pub struct RateLimiter {
    interval: Duration,
    spacing: Mutex<Spacing>,
}

impl RateLimiter {
    /// A limiter for `rps` requests per second (must be > 0).
    pub fn new(rps: f64) -> Self {
        RateLimiter {
            interval: Duration::from_secs_f64(1.0 / rps),
            spacing: Mutex::new(Spacing::default()),
        }
    }

    /// Waits for this request's slot.
    pub async fn wait(&self) {
        let slot = {
            let mut spacing = match self.spacing.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            spacing.slot(Instant::now(), self.interval)
        };
        tokio::time::sleep_until(slot).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let b = Backoff {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
            max_retries: 3,
        };
        let first = b.delay(0, None);
        assert!(first >= Duration::from_millis(50) && first < Duration::from_millis(150));
        let late = b.delay(10, None);
        assert!(late <= Duration::from_millis(1500), "capped: {late:?}");
        assert!(b.delay(0, Some(2)) >= Duration::from_secs(2));
        assert!(b.delay(0, Some(3600)) <= Duration::from_secs(60));
    }

    #[test]
    fn the_second_pass_waits_longer_and_tries_more_but_not_forever() {
        let first = Backoff::default();
        let second = first.second_pass();
        assert_eq!(second.base, Duration::from_secs(1));
        assert_eq!(second.cap, first.cap);
        assert_eq!(second.max_retries, 10);
        assert_eq!(first.most_attempts(), 17);
    }

    #[tokio::test]
    async fn rate_limiter_spaces_requests() {
        let limiter = RateLimiter::new(50.0);
        let start = Instant::now();
        for _ in 0..6 {
            limiter.wait().await;
        }
        // Five intervals of 20 ms between six starts.
        assert!(start.elapsed() >= Duration::from_millis(95));
    }
}
