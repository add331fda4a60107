//! How fast and how often the client calls: exponential backoff with jitter between
//! retries (webhook deliveries use the same), and an optional requests-per-second cap
//! shared by all tasks.

use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

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
    /// wins when it is longer, within one minute.
    pub fn delay(&self, attempt: u32, retry_after: Option<u64>) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.cap);
        let jitter = 0.5 + random_unit();
        let delay = exp.mul_f64(jitter);
        match retry_after {
            Some(secs) => delay.max(Duration::from_secs(secs.min(60))),
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

/// Spaces request starts at least `1/rps` apart, across all tasks.
#[derive(Debug)]
pub struct RateLimiter {
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// A limiter for `rps` requests per second (must be > 0).
    pub fn new(rps: f64) -> Self {
        RateLimiter {
            interval: Duration::from_secs_f64(1.0 / rps),
            next: Mutex::new(None),
        }
    }

    /// Waits for this request's slot.
    pub async fn wait(&self) {
        let slot = {
            let mut next = match self.next.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let now = Instant::now();
            let slot = next.map_or(now, |n| n.max(now));
            *next = Some(slot + self.interval);
            slot
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
