//! Adapting to a service's rate limit: the pace of request starts backs off when the
//! service answers 429 and grows back slowly while it does not (additive increase,
//! multiplicative decrease, as TCP does with its window).
//!
//! The limit is on request starts per second rather than on requests in flight:
//! a service that allows N requests per second allows N whatever the round trip,
//! and with answers in a millisecond even one request in flight can send hundreds
//! a second. Until the first 429 nothing is paced, so a service without a limit is
//! fetched at full speed. `--rps` (`pacing::RateLimiter`) stays a hard cap on top.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The new ceiling after a 429, as a share of the pace that met it.
const DECREASE: f64 = 0.8;
/// Growth of the ceiling per second in which it held requests back.
const INCREASE: f64 = 0.05;
/// The ceiling never drops below this share of the pace the service accepted when
/// it first said 429. A 429 met at that floor shows that 429s come whatever the
/// pace (a service that sheds load at random): pacing stops for the run, and each
/// such 429 costs its request a retry, not a pause of all and an ever slower sync.
const FLOOR: f64 = 0.5;
/// Slowest pace, in requests per second: a limit is never taken to be zero.
const MIN_RATE: f64 = 0.5;
/// Wait after a 429 without a (valid) `Retry-After`.
const DEFAULT_PAUSE: Duration = Duration::from_secs(1);
/// Longest `Retry-After` honoured (as in `Backoff::delay`).
const MAX_PAUSE: Duration = Duration::from_secs(60);
const SECOND: Duration = Duration::from_secs(1);

/// The adaptive pace shared by all requests of a client.
#[derive(Debug, Default)]
pub struct Throttle {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests per second at most; `None` until the service first says 429.
    ceiling: Option<f64>,
    /// The lowest the ceiling goes (see [`FLOOR`]).
    floor: f64,
    /// When the next request may start under the ceiling.
    next: Option<Instant>,
    /// No request starts before this: the service's `Retry-After`.
    resume: Option<Instant>,
    /// When the ceiling last changed (after a cut: when the pause ends).
    changed: Option<Instant>,
    /// When it was last cut: a 429 to a request sent before that is part of the
    /// burst that caused the cut and cuts no further.
    cut: Option<Instant>,
    /// Whether the ceiling held a request back since it last changed (it only
    /// grows while it is what limits the pace).
    binding: bool,
    /// Answers other than 429 in the last second: the pace the service accepted.
    accepted: VecDeque<Instant>,
    /// 429 answers since the last reset.
    limited: u64,
    /// 429s went on at the floor: they come whatever the pace (a service that
    /// sheds load at random), so the rest of the run is not paced.
    unrelated: bool,
}

impl State {
    fn accepted_last_second(&mut self, now: Instant) -> usize {
        while self
            .accepted
            .front()
            .is_some_and(|t| now.duration_since(*t) >= SECOND)
        {
            self.accepted.pop_front();
        }
        self.accepted.len()
    }

    /// When a request asking now may start.
    fn slot(&mut self, now: Instant) -> Instant {
        if let (Some(ceiling), Some(changed)) = (self.ceiling, self.changed)
            && self.binding
            && now.duration_since(changed) >= SECOND
        {
            self.ceiling = Some(ceiling * (1.0 + INCREASE));
            self.changed = Some(now);
            self.binding = false;
        }
        let mut slot = self.resume.map_or(now, |r| r.max(now));
        if let Some(ceiling) = self.ceiling {
            let paced = self.next.map_or(slot, |n| n.max(slot));
            self.binding |= paced > slot;
            slot = paced;
            self.next = Some(slot + Duration::from_secs_f64(1.0 / ceiling));
        }
        slot
    }

    fn accepted(&mut self, now: Instant) {
        self.accepted.push_back(now);
        // Pruned here too, so a long run without 429s does not collect.
        self.accepted_last_second(now);
    }

    fn limited(&mut self, now: Instant, sent: Instant, retry_after: Option<u64>) {
        self.limited += 1;
        if self.unrelated || self.cut.is_some_and(|cut| sent < cut) {
            return;
        }
        let accepted = self.accepted_last_second(now) as f64;
        let ceiling = match self.ceiling {
            // 429s that go on at the floor are not the pace's doing: from now on
            // each waits its own Retry-After as a retry, and the others go on.
            Some(ceiling) if ceiling <= self.floor => {
                tracing::debug!("429s do not follow the pace; no longer paced");
                *self = State {
                    unrelated: true,
                    limited: self.limited,
                    ..State::default()
                };
                return;
            }
            Some(ceiling) => (ceiling * DECREASE).max(self.floor),
            None => {
                self.floor = (accepted * FLOOR).max(MIN_RATE);
                (accepted * DECREASE).max(MIN_RATE)
            }
        };
        let pause = retry_after.map_or(DEFAULT_PAUSE, |secs| {
            Duration::from_secs(secs).min(MAX_PAUSE)
        });
        self.resume = Some(self.resume.map_or(now + pause, |r| r.max(now + pause)));
        self.ceiling = Some(ceiling);
        // Growth is earned by seconds of sending, which start after the pause.
        self.changed = Some(now + pause);
        self.cut = Some(now);
        self.binding = false;
        self.next = None;
        tracing::debug!(ceiling, ?pause, "rate limited by the service");
    }
}

impl Throttle {
    /// Forgets what was learnt: a daemon's next run starts at full speed again.
    pub fn reset(&self) {
        *self.lock() = State::default();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Waits until this request may start; returns when it starts.
    pub async fn wait(&self) -> Instant {
        let slot = self.lock().slot(Instant::now());
        tokio::time::sleep_until(slot).await;
        slot
    }

    /// The service answered, with anything but 429.
    pub fn accepted(&self) {
        self.lock().accepted(Instant::now());
    }

    /// The service answered 429 to a request sent at `sent`: the ceiling drops to a
    /// share of the pace (at the first 429, of the pace the service accepted in the
    /// last second) and every request waits for the `Retry-After`. The other 429s of
    /// the same burst (requests sent before the cut) change it no more; one met at
    /// the floor ends the pacing for the run.
    pub fn limited(&self, sent: Instant, retry_after: Option<u64>) {
        self.lock().limited(Instant::now(), sent, retry_after);
    }

    /// 429 answers since the last reset.
    pub fn limited_count(&self) -> u64 {
        self.lock().limited
    }

    /// The current ceiling in requests per second, once the service has limited.
    pub fn ceiling(&self) -> Option<f64> {
        self.lock().ceiling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Starts `n` requests as fast as the state allows from `at`, each answered at
    /// once; returns when the last one started.
    fn run(s: &mut State, at: Instant, n: usize) -> Instant {
        let mut now = at;
        for _ in 0..n {
            now = s.slot(now);
            s.accepted(now);
        }
        now
    }

    #[test]
    fn nothing_is_paced_until_the_first_429() {
        let mut s = State::default();
        let t0 = Instant::now();
        assert_eq!(run(&mut s, t0, 100), t0);
        assert_eq!(s.ceiling, None);
    }

    #[test]
    fn a_429_waits_out_retry_after_and_cuts_the_pace_once_per_burst() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 50);
        // A burst: three requests in flight (sent at t0) all meet the limit.
        for _ in 0..3 {
            s.limited(t0 + ms(10), t0, Some(2));
        }
        assert_eq!(s.ceiling, Some(40.0), "80 % of the 50 accepted");
        assert_eq!(s.limited, 3);
        let resumed = s.slot(t0 + ms(20));
        assert_eq!(resumed, t0 + ms(2010), "Retry-After");
        // Then 40 a second: the 40 starts after that one take a second.
        let last = run(&mut s, resumed, 40);
        assert_eq!(last.duration_since(resumed), Duration::from_secs(1));
        // A 429 to a request sent after the cut cuts again, by a fifth.
        s.limited(last, last, None);
        assert_eq!(s.ceiling, Some(32.0));
    }

    #[test]
    fn the_pace_grows_back_slowly_while_it_holds_requests_back() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 10);
        s.limited(t0, t0, None);
        assert_eq!(s.ceiling, Some(8.0));
        let last = run(&mut s, t0, 8 * 10);
        let grown = s.ceiling.expect("ceiling");
        assert!(grown > 8.0 * 1.3 && grown < 8.0 * 1.8, "{grown}");
        // A ceiling that holds nothing back does not grow (beyond the second that
        // was still running when the requests stopped).
        let later = last + Duration::from_secs(30);
        run(&mut s, later, 1);
        let idle = s.ceiling.expect("ceiling");
        assert!(idle <= grown * (1.0 + INCREASE) + 1e-9, "{idle}");
        run(&mut s, later + Duration::from_secs(30), 1);
        assert_eq!(s.ceiling, Some(idle));
    }

    #[test]
    fn the_ceiling_stops_at_half_the_first_pace_and_429s_there_end_the_pacing() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 100);
        let mut now = t0;
        for _ in 0..3 {
            s.limited(now, now, None);
            now += Duration::from_secs(2);
        }
        let third = s.ceiling.expect("ceiling");
        assert!((third - 51.2).abs() < 1e-9, "{third}");
        s.limited(now, now, None);
        assert_eq!(s.ceiling, Some(50.0), "80, 64, 51.2, then the floor");
        // Slower did not help: the 429s are not about the pace.
        now += Duration::from_secs(2);
        s.limited(now, now, Some(30));
        assert_eq!((s.ceiling, s.limited), (None, 5));
        assert_eq!(run(&mut s, now, 10), now, "neither paced nor paused");
        s.limited(now, now, Some(30));
        assert_eq!((s.ceiling, s.slot(now)), (None, now));
    }

    #[tokio::test]
    async fn the_shared_throttle_returns_the_start_and_counts_429s() {
        let throttle = Throttle::default();
        let sent = throttle.wait().await;
        throttle.accepted();
        throttle.limited(sent, Some(0));
        assert_eq!(throttle.limited_count(), 1);
        assert_eq!(throttle.ceiling(), Some(0.8));
        throttle.reset();
        assert_eq!((throttle.limited_count(), throttle.ceiling()), (0, None));
    }
}
