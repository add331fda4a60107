//! Fault injection for `/v1/api` routes: seeded so that a run repeats.
//!
//! Each request draws one number from a SplitMix64 seeded by (seed, request counter)
//! and falls into at most one fault; the rates are per request and must add up to at
//! most 1. Besides the rates, two whole-service conditions: an outage (every request
//! answered 503 for a window of time) and a requests-per-second limit (429 with
//! `Retry-After` past it), both checked before the per-request draw.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::rng::SplitMix64;

/// Per-request rates (0..=1) of each fault kind. `Default` injects nothing.
///
/// Parsed from `"5xx=0.1,429=0.05,slow=0.02,malformed=0.02,truncated=0.02,envelope=0.01"`
/// plus `latency=MS`, `outage=START..END` and `rps=N` (any subset, any order; an empty
/// string means no faults).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FaultSpec {
    /// HTTP 500, 502 or 503 with a `success: false` envelope.
    pub server_error: f64,
    /// HTTP 429 with `Retry-After: 1`.
    pub too_many_requests: f64,
    /// The correct answer after a 1-2 s pause.
    pub slow: f64,
    /// Status 200 with a body that is not JSON.
    pub malformed: f64,
    /// Status 200 with the first half of the correct body.
    pub truncated: f64,
    /// Status 200 with `{"success": false, "error": "transient failure"}`.
    pub envelope: f64,
    /// Milliseconds added to every answer (`latency=20`): a network round trip, so
    /// benchmarks can measure a sync the way it meets a real service.
    pub latency_ms: u64,
    /// Seconds since the sandbox started during which every request is answered 503
    /// (`outage=30..90`: from second 30 up to, not including, second 90).
    pub outage: Option<(u64, u64)>,
    /// Requests per second served at most (`rps=20`); requests past it within the same
    /// second are answered 429 with `Retry-After: 1`.
    pub rps: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultSpecError {
    #[error(
        "unknown fault kind `{0}` (expected 5xx, 429, slow, malformed, truncated, envelope, latency, outage or rps)"
    )]
    UnknownKind(String),
    #[error("bad rate `{value}` for fault `{kind}` (expected a number from 0 to 1)")]
    BadRate { kind: String, value: String },
    #[error("bad latency `{0}` (expected whole milliseconds, at most 60000)")]
    BadLatency(String),
    #[error("bad outage window `{0}` (expected START..END in whole seconds, START < END)")]
    BadOutage(String),
    #[error("bad requests-per-second limit `{0}` (expected a whole number from 1)")]
    BadRps(String),
    #[error("`{0}` is not of the form kind=rate")]
    Syntax(String),
    #[error("fault rates add up to {0}, more than 1")]
    TooMuch(f64),
}

const KINDS: [&str; 6] = ["5xx", "429", "slow", "malformed", "truncated", "envelope"];

impl FaultSpec {
    fn rates(&self) -> [f64; 6] {
        [
            self.server_error,
            self.too_many_requests,
            self.slow,
            self.malformed,
            self.truncated,
            self.envelope,
        ]
    }

    fn rate_mut(&mut self, kind: &str) -> Option<&mut f64> {
        Some(match kind {
            "5xx" => &mut self.server_error,
            "429" => &mut self.too_many_requests,
            "slow" => &mut self.slow,
            "malformed" => &mut self.malformed,
            "truncated" => &mut self.truncated,
            "envelope" => &mut self.envelope,
            _ => return None,
        })
    }

    pub fn is_none(&self) -> bool {
        self.rates().iter().all(|r| *r <= 0.0)
    }
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut spec = FaultSpec::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (kind, value) = item
                .split_once('=')
                .ok_or_else(|| FaultSpecError::Syntax(item.to_string()))?;
            let (kind, value) = (kind.trim(), value.trim());
            match kind {
                "latency" => {
                    spec.latency_ms = value
                        .parse()
                        .ok()
                        .filter(|ms| *ms <= 60_000)
                        .ok_or_else(|| FaultSpecError::BadLatency(value.to_string()))?;
                    continue;
                }
                "outage" => {
                    spec.outage = Some(
                        parse_window(value)
                            .ok_or_else(|| FaultSpecError::BadOutage(value.to_string()))?,
                    );
                    continue;
                }
                "rps" => {
                    spec.rps = Some(
                        value
                            .parse()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| FaultSpecError::BadRps(value.to_string()))?,
                    );
                    continue;
                }
                _ => {}
            }
            let slot = spec
                .rate_mut(kind)
                .ok_or_else(|| FaultSpecError::UnknownKind(kind.to_string()))?;
            let rate: f64 = value
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && (0.0..=1.0).contains(r))
                .ok_or_else(|| FaultSpecError::BadRate {
                    kind: kind.to_string(),
                    value: value.to_string(),
                })?;
            *slot = rate;
        }
        let total: f64 = spec.rates().iter().sum();
        if total > 1.0 + 1e-9 {
            return Err(FaultSpecError::TooMuch(total));
        }
        Ok(spec)
    }
}

/// `START..END` in whole seconds, START < END.
fn parse_window(value: &str) -> Option<(u64, u64)> {
    let (start, end) = value.split_once("..")?;
    let (start, end): (u64, u64) = (start.trim().parse().ok()?, end.trim().parse().ok()?);
    (start < end).then_some((start, end))
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = KINDS
            .iter()
            .zip(self.rates())
            .filter(|(_, r)| *r > 0.0)
            .map(|(k, r)| format!("{k}={r}"))
            .chain((self.latency_ms > 0).then(|| format!("latency={}", self.latency_ms)))
            .chain(self.outage.map(|(a, b)| format!("outage={a}..{b}")))
            .chain(self.rps.map(|n| format!("rps={n}")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// What to do to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    ServerError(u16),
    TooManyRequests,
    Slow(Duration),
    Malformed,
    Truncated,
    Envelope,
}

/// Decides the fault of each request from (seed, request number), and keeps the
/// outage and rate-limit state.
#[derive(Debug)]
pub struct FaultInjector {
    spec: FaultSpec,
    seed: u64,
    counter: AtomicU64,
    started: Instant,
    /// An outage started through `POST /sandbox/outage`: it lasts until then.
    outage_until: Mutex<Option<Instant>>,
    /// The current one-second window of the rate limit and the requests it served.
    window: Mutex<(Instant, u32)>,
    /// `/v1/api` requests received, and those answered 429 (`GET /sandbox/stats`).
    received: AtomicU64,
    limited: AtomicU64,
}

/// What the service has answered so far (`GET /sandbox/stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// `/v1/api` requests received.
    pub requests: u64,
    /// Of those, answered 429 (the `rps=` limit or the `429=` rate).
    pub rate_limited: u64,
}

impl FaultInjector {
    pub fn new(spec: FaultSpec, seed: u64) -> Self {
        let started = Instant::now();
        Self {
            spec,
            seed,
            counter: AtomicU64::new(0),
            started,
            outage_until: Mutex::new(None),
            window: Mutex::new((started, 0)),
            received: AtomicU64::new(0),
            limited: AtomicU64::new(0),
        }
    }

    /// Counts a request received.
    pub fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a 429 answer.
    pub fn rate_limited(&self) {
        self.limited.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> Stats {
        Stats {
            requests: self.received.load(Ordering::Relaxed),
            rate_limited: self.limited.load(Ordering::Relaxed),
        }
    }

    /// Starts an outage now, lasting `length` (replacing one started earlier); a zero
    /// length ends it.
    pub fn start_outage(&self, length: Duration) {
        let mut until = self.outage_until.lock().unwrap_or_else(|e| e.into_inner());
        *until = (!length.is_zero()).then(|| Instant::now() + length);
    }

    /// Whether the service is down at this moment (the `outage=` window of `--faults`,
    /// or an outage started through the admin route).
    pub fn in_outage(&self) -> bool {
        let now = Instant::now();
        let in_window = self.spec.outage.is_some_and(|(start, end)| {
            let at = now.duration_since(self.started);
            at >= Duration::from_secs(start) && at < Duration::from_secs(end)
        });
        let started_now = self
            .outage_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| now < until);
        in_window || started_now
    }

    /// Counts a request against the requests-per-second limit; `false` when it is over
    /// the limit (the request is then refused and not counted).
    pub fn admit(&self) -> bool {
        let Some(limit) = self.spec.rps else {
            return true;
        };
        let now = Instant::now();
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        if now.duration_since(window.0) >= Duration::from_secs(1) {
            *window = (now, 0);
        }
        if window.1 >= limit {
            return false;
        }
        window.1 += 1;
        true
    }

    /// The fixed delay added to every answer.
    pub fn latency(&self) -> Duration {
        Duration::from_millis(self.spec.latency_ms)
    }

    pub fn decide(&self) -> Option<Fault> {
        if self.spec.is_none() {
            return None;
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut rng = SplitMix64::for_parts(&[self.seed, n, 0xfa17]);
        let mut x = rng.f64();
        for (i, rate) in self.spec.rates().into_iter().enumerate() {
            if x < rate {
                return Some(match i {
                    0 => Fault::ServerError([500, 502, 503][rng.index(3)]),
                    1 => Fault::TooManyRequests,
                    2 => Fault::Slow(Duration::from_millis(rng.range(1000, 2000) as u64)),
                    3 => Fault::Malformed,
                    4 => Fault::Truncated,
                    _ => Fault::Envelope,
                });
            }
            x -= rate;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_good_specs() {
        let s: FaultSpec = "5xx=0.1,429=0.05,slow=0.02,malformed=0.02,truncated=0.02,envelope=0.01"
            .parse()
            .expect("valid");
        assert_eq!(s.server_error, 0.1);
        assert_eq!(s.too_many_requests, 0.05);
        assert_eq!(s.slow, 0.02);
        assert_eq!(s.envelope, 0.01);
        assert_eq!(s.to_string().parse::<FaultSpec>(), Ok(s));
        assert_eq!("".parse::<FaultSpec>(), Ok(FaultSpec::default()));
        assert!(" 429 = 1 ".parse::<FaultSpec>().is_ok());
        assert!(FaultSpec::default().is_none());
    }

    #[test]
    fn rejects_bad_specs_naming_the_culprit() {
        let err = |s: &str| s.parse::<FaultSpec>().expect_err(s).to_string();
        assert!(err("5xx=0.1,timeout=0.2").contains("`timeout`"));
        assert!(err("5xx=abc").contains("`abc`") && err("5xx=abc").contains("`5xx`"));
        assert!(err("slow=1.5").contains("`1.5`"));
        assert!(err("slow=-0.1").contains("`-0.1`"));
        assert!(err("slow=NaN").contains("`NaN`"));
        assert!(err("slow").contains("`slow`"));
        assert!(err("latency=fast").contains("`fast`"));
        let with_latency: FaultSpec = "latency=25,5xx=0.1".parse().expect("latency parses");
        assert_eq!(with_latency.latency_ms, 25);
        assert_eq!(with_latency.to_string(), "5xx=0.1,latency=25");
        assert!(err("5xx=0.6,429=0.6").contains("more than 1"));
        assert!(err("outage=90..30").contains("`90..30`"));
        assert!(err("outage=30").contains("`30`"));
        assert!(err("rps=0").contains("`0`"));
        assert!(err("rps=fast").contains("`fast`"));
    }

    #[test]
    fn outage_and_rps_parse_and_print_back() {
        let s: FaultSpec = "outage=30..90, rps=20, 5xx=0.1".parse().expect("valid");
        assert_eq!(s.outage, Some((30, 90)));
        assert_eq!(s.rps, Some(20));
        assert_eq!(s.to_string(), "5xx=0.1,outage=30..90,rps=20");
        assert_eq!(s.to_string().parse::<FaultSpec>(), Ok(s));
    }

    #[test]
    fn outage_window_covers_its_seconds_only() {
        let now: FaultSpec = "outage=0..3600".parse().expect("valid");
        assert!(FaultInjector::new(now, 1).in_outage());
        let later: FaultSpec = "outage=3600..7200".parse().expect("valid");
        let faults = FaultInjector::new(later, 1);
        assert!(!faults.in_outage());
        faults.start_outage(Duration::from_secs(60));
        assert!(faults.in_outage(), "started through the admin route");
        faults.start_outage(Duration::ZERO);
        assert!(!faults.in_outage(), "a zero length ends it");
    }

    #[test]
    fn rate_limit_admits_n_requests_per_second() {
        let spec: FaultSpec = "rps=5".parse().expect("valid");
        let faults = FaultInjector::new(spec, 1);
        let admitted = (0..20).filter(|_| faults.admit()).count();
        assert_eq!(admitted, 5, "one second holds five requests");
        assert!(FaultInjector::new(FaultSpec::default(), 1).admit());
    }

    #[test]
    fn decisions_repeat_and_follow_rates() {
        let spec: FaultSpec = "5xx=0.2,envelope=0.1".parse().expect("valid");
        let a = FaultInjector::new(spec, 9);
        let b = FaultInjector::new(spec, 9);
        let xs: Vec<_> = (0..2000).map(|_| a.decide()).collect();
        let ys: Vec<_> = (0..2000).map(|_| b.decide()).collect();
        assert_eq!(xs, ys);
        let errors = xs
            .iter()
            .filter(|f| matches!(f, Some(Fault::ServerError(_))))
            .count();
        let envelopes = xs.iter().filter(|f| **f == Some(Fault::Envelope)).count();
        assert!((300..500).contains(&errors), "{errors}");
        assert!((130..270).contains(&envelopes), "{envelopes}");
        assert!(
            FaultInjector::new(FaultSpec::default(), 1)
                .decide()
                .is_none()
        );
    }
}
