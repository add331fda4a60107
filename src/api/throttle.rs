//! Adapting to a service's rate limit: the pace of request starts backs off when the
//! service answers 429 and grows back slowly while it does not (additive increase,
//! multiplicative decrease, as TCP does with its window).
//!
//! The limit is on request starts per second rather than on requests in flight:
//! a service that allows N requests per second allows N whatever the round trip,
//! and with answers in a millisecond even one request in flight can send hundreds
//! a second. Until the service shows a limit nothing is paced, so a service without
//! one is fetched at full speed. `--rps` (`pacing::RateLimiter`) stays a hard cap on
//! top.
//!
//! A 429 makes all requests wait its `Retry-After`, once: the throttle owns that
//! wait ([`MAX_RETRY_AFTER`] at most), and a document answered 429 is tried again
//! when it ends, with none of its retries spent (`api::client`). Only a 429 that
//! shows a limit changes the pace. A service past its limit refuses
//! everything until its window turns, so the requests in flight meet it together
//! ([`BURST`] 429s in a row), and once paced it refuses when the pace presses
//! against the ceiling. A gateway that sheds a request now and then answers one
//! 429 among many accepted answers, whatever the pace: lowering the pace for it
//! would turn each such 429 into seconds of crawl, so it costs its pause and
//! nothing more. And a pace measured while the service is failing (server errors
//! among its last answers, [`FAILING`]) is not its limit: the answers of that
//! second are what the failures, their retries' backoff and the pauses left, and
//! 429s that come among failures come at random. Such a 429 never paces, and
//! pauses only its own request: when one answer in ten is a 429, pausing every
//! request for each would hold a sync of eight requests in flight to about one
//! batch a second.

use crate::api::pacing::Spacing;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The new ceiling after a 429 that shows a limit, as a share of the pace that met it.
const DECREASE: f64 = 0.8;
/// Growth of the ceiling per second in which it held requests back.
const INCREASE: f64 = 0.05;
/// 429s in a row (no other answer between) that show a limit while unpaced. Two
/// would be one random refusal in fifty at 2 % random 429s; three is one in 2,500.
/// With fewer requests in flight than this, the pauses alone keep to a limit.
const BURST: u32 = 3;
/// The ceiling never drops below this share of the pace the service accepted when
/// it first showed a limit. A limit met at that floor is not the pace's doing (a
/// limit that fell, or 429s that come at random): pacing stops until the service
/// shows a limit again, measured afresh.
const FLOOR: f64 = 0.5;
/// Slowest pace, in requests per second: a limit is never taken to be zero.
const MIN_RATE: f64 = 0.5;
/// Answers (other than 429) the service's health is judged by: the last twenty.
const RECENT: usize = 20;
/// Server errors (5xx, or no answer) among the [`RECENT`] answers that say the
/// service is failing, so a 429 shows no limit. A service failing one answer in
/// three (the heavy fault mix: 30 % 5xx) shows fewer one time in 300; one failing
/// one answer in a hundred shows as many one time in 60, and then a limit it
/// meets is paused for, and measured at the next burst.
const FAILING: usize = 2;
/// Wait after a 429 without a (valid) `Retry-After`.
const DEFAULT_PAUSE: Duration = Duration::from_secs(1);
/// Longest `Retry-After` honoured, by the throttle's pauses and by every other
/// wait the service asks for (`Backoff::delay`: an outage's probes, webhooks).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const SECOND: Duration = Duration::from_secs(1);

/// A `Retry-After` of `secs` seconds as the wait it gets.
pub fn honoured(secs: u64) -> Duration {
    Duration::from_secs(secs).min(MAX_RETRY_AFTER)
}

/// The adaptive pace shared by all requests of a client.
#[derive(Debug, Default)]
pub struct Throttle {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests per second at most; `None` until the service shows a limit.
    ceiling: Option<f64>,
    /// The lowest the ceiling goes (see [`FLOOR`]).
    floor: f64,
    /// The starts under the ceiling.
    spacing: Spacing,
    /// No request starts before this: the service's `Retry-After`.
    resume: Option<Instant>,
    /// When the ceiling last changed (after a pause: when the pause ends).
    changed: Option<Instant>,
    /// When the last pause began: a 429 to a request sent before that is part of
    /// the burst that caused it and pauses no further.
    paused: Option<Instant>,
    /// Whether the burst of the last pause already changed the ceiling.
    cut: bool,
    /// Whether the ceiling held a request back since it last changed (it only
    /// grows while it is what limits the pace).
    binding: bool,
    /// Answers other than 429 in the last second: the pace the service accepted.
    accepted: VecDeque<Instant>,
    /// Whether each of the last [`RECENT`] answers other than 429 was a server
    /// error (or none came).
    recent: VecDeque<bool>,
    /// 429 answers since the last other answer.
    in_a_row: u32,
    /// 429 answers since the last reset.
    limited: u64,
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
        let free = self.resume.map_or(now, |r| r.max(now));
        let Some(ceiling) = self.ceiling else {
            return free;
        };
        let slot = self
            .spacing
            .slot(free, Duration::from_secs_f64(1.0 / ceiling));
        self.binding |= slot > free;
        slot
    }

    /// Whether a pause that began after `slot` was handed out must hold its
    /// request back.
    fn paused_since(&self, slot: Instant) -> bool {
        self.resume.is_some_and(|r| r > slot)
    }

    /// Notes whether the service failed, in the last [`RECENT`] answers.
    fn health(&mut self, failed: bool) {
        self.recent.push_back(failed);
        if self.recent.len() > RECENT {
            self.recent.pop_front();
        }
    }

    /// Whether the service is failing (see [`FAILING`]).
    fn failing(&self) -> bool {
        self.recent.iter().filter(|failed| **failed).count() >= FAILING
    }

    /// An answer other than 429; `failed`: a server error.
    fn answered(&mut self, now: Instant, failed: bool) {
        self.in_a_row = 0;
        self.accepted.push_back(now);
        // Pruned here too, so a long run without 429s does not collect.
        self.accepted_last_second(now);
        self.health(failed);
    }

    fn limited(&mut self, now: Instant, sent: Instant, retry_after: Option<u64>) {
        self.limited += 1;
        self.in_a_row += 1;
        if self.failing() {
            tracing::debug!("a 429 amid failures: its request waits, the others go on");
            return;
        }
        if self.paused.is_none_or(|paused| sent >= paused) {
            self.pause(now, retry_after);
        }
        if self.cut {
            return;
        }
        let accepted = self.accepted_last_second(now) as f64;
        let shows_limit = self.in_a_row >= BURST
            || self
                .ceiling
                .is_some_and(|ceiling| accepted >= ceiling * DECREASE);
        if !shows_limit {
            tracing::debug!(accepted, "a lone 429: paused, the pace is kept");
            return;
        }
        self.cut = true;
        match self.ceiling {
            // The limit is lower than the one measured, or the 429s are not the
            // pace's doing: measured again at the next burst.
            Some(ceiling) if ceiling <= self.floor => {
                tracing::debug!(ceiling, "429s at the floor of the pace; no longer paced");
                self.ceiling = None;
                self.spacing.clear();
            }
            Some(ceiling) => self.ceiling = Some((ceiling * DECREASE).max(self.floor)),
            None => {
                self.floor = (accepted * FLOOR).max(MIN_RATE);
                self.ceiling = Some((accepted * DECREASE).max(MIN_RATE));
            }
        }
        tracing::debug!(ceiling = ?self.ceiling, "rate limited by the service");
    }

    /// What a request answered 429 at `now` waits on its own: nothing while a
    /// pause holds every request (it waits that in [`Throttle::wait`]), else its
    /// `Retry-After` (a 429 amid failures paused no one else).
    fn own_wait(&self, now: Instant, retry_after: Option<u64>) -> Duration {
        match self.resume {
            Some(resume) if resume > now => Duration::ZERO,
            _ => retry_after.map_or(DEFAULT_PAUSE, honoured),
        }
    }

    /// Every request waits the 429's `Retry-After`; the pace starts again after it.
    fn pause(&mut self, now: Instant, retry_after: Option<u64>) {
        let pause = retry_after.map_or(DEFAULT_PAUSE, honoured);
        self.resume = Some(self.resume.map_or(now + pause, |r| r.max(now + pause)));
        self.paused = Some(now);
        self.cut = false;
        // Growth is earned by seconds of sending, which start after the pause.
        self.changed = Some(now + pause);
        self.binding = false;
        self.spacing.clear();
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

    /// Waits until this request may start; returns when it starts. A pause that
    /// began while it waited for its slot holds it back too: sent into the pause,
    /// it would only meet another 429.
    pub async fn wait(&self) -> Instant {
        loop {
            let slot = self.lock().slot(Instant::now());
            tokio::time::sleep_until(slot).await;
            if !self.lock().paused_since(slot) {
                return slot;
            }
        }
    }

    /// The service answered with `status`, anything but 429.
    pub fn answered(&self, status: u16) {
        self.lock().answered(Instant::now(), status >= 500);
    }

    /// No answer came (no connection, a timeout): the service is failing.
    pub fn unanswered(&self) {
        self.lock().health(true);
    }

    /// The service answered 429 to a request sent at `sent`: every request waits
    /// for the `Retry-After` (once per burst: 429s to requests sent before the
    /// pause began extend it no further). When the 429 shows a limit ([`BURST`]
    /// in a row, or paced and at the ceiling), the ceiling drops to a share of the
    /// pace, once per burst; any other 429 leaves the pace as it was. While the
    /// service is failing, a 429 changes nothing: only its request waits
    /// ([`Throttle::own_wait`]).
    pub fn limited(&self, sent: Instant, retry_after: Option<u64>) {
        self.lock().limited(Instant::now(), sent, retry_after);
    }

    /// What a request answered 429 waits before it is tried again, besides
    /// [`Throttle::wait`]: nothing when the 429 paused every request, its own
    /// `Retry-After` when it came amid failures and paused no one else.
    pub fn own_wait(&self, retry_after: Option<u64>) -> Duration {
        self.lock().own_wait(Instant::now(), retry_after)
    }

    /// 429 answers since the last reset.
    pub fn limited_count(&self) -> u64 {
        self.lock().limited
    }

    /// The current ceiling in requests per second, while the service's limit
    /// paces the requests.
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
            s.answered(now, false);
        }
        now
    }

    /// The requests in flight at `sent` all meet a limit at `at`.
    fn burst(s: &mut State, at: Instant, sent: Instant, retry_after: Option<u64>) {
        for _ in 0..BURST {
            s.limited(at, sent, retry_after);
        }
    }

    #[test]
    fn nothing_is_paced_until_the_first_429() {
        let mut s = State::default();
        let t0 = Instant::now();
        assert_eq!(run(&mut s, t0, 100), t0);
        assert_eq!(s.ceiling, None);
    }

    #[test]
    fn a_lone_429_costs_its_pause_and_leaves_the_pace() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 3);
        // One 429 among accepted answers, just after a start with few answers:
        // nothing to measure a limit by, and nothing shows one.
        s.limited(t0 + ms(5), t0, Some(1));
        assert_eq!((s.ceiling, s.limited), (None, 1));
        assert_eq!(
            s.own_wait(t0 + ms(6), Some(1)),
            Duration::ZERO,
            "all wait it"
        );
        let resumed = s.slot(t0 + ms(6));
        assert_eq!(resumed, t0 + ms(1005), "Retry-After");
        assert_eq!(run(&mut s, resumed, 500), resumed, "full speed after it");
        // Many such 429s, one at a time: each a pause, never a pace.
        let mut now = resumed;
        for _ in 0..20 {
            s.limited(now, now, Some(1));
            now = s.slot(now);
            now = run(&mut s, now, 50);
        }
        assert_eq!((s.ceiling, s.limited), (None, 21));
    }

    #[test]
    fn a_burst_waits_out_retry_after_and_cuts_the_pace_once() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 50);
        // The requests in flight (sent at t0) all meet the limit.
        burst(&mut s, t0 + ms(10), t0, Some(2));
        s.limited(t0 + ms(10), t0, Some(2));
        assert_eq!(s.ceiling, Some(40.0), "80 % of the 50 accepted");
        assert_eq!(s.limited, u64::from(BURST) + 1);
        let resumed = s.slot(t0 + ms(20));
        assert_eq!(resumed, t0 + ms(2010), "Retry-After, from the first 429");
        // Then 40 a second: the 40 starts after that one take a second.
        let last = run(&mut s, resumed, 40);
        assert_eq!(last.duration_since(resumed), Duration::from_secs(1));
        // Paced and pressing against the ceiling: one 429 cuts it by a fifth.
        s.limited(last, last, None);
        assert_eq!(s.ceiling, Some(32.0));
    }

    /// A hundred answers at `t0`, then the limit: paced at 80 a second.
    fn paced_at_80(s: &mut State, t0: Instant) {
        run(s, t0, 100);
        burst(s, t0, t0, Some(1));
        assert_eq!(s.ceiling, Some(80.0));
    }

    #[test]
    fn paced_a_429_below_the_ceiling_only_pauses() {
        let mut s = State::default();
        let t0 = Instant::now();
        paced_at_80(&mut s, t0);
        // Ten answers since the pause, far below 80 a second: not the pace's doing.
        let resumed = s.slot(t0);
        let last = run(&mut s, resumed, 10);
        s.limited(last, last, Some(1));
        assert_eq!(s.ceiling, Some(80.0));
        assert_eq!(s.slot(last), last + SECOND, "but it waits");
    }

    #[test]
    fn the_pace_grows_back_slowly_while_it_holds_requests_back() {
        let mut s = State::default();
        let t0 = Instant::now();
        run(&mut s, t0, 10);
        burst(&mut s, t0, t0, None);
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
    fn the_ceiling_stops_at_half_the_first_pace_and_a_limit_there_is_measured_again() {
        let mut s = State::default();
        let t0 = Instant::now();
        paced_at_80(&mut s, t0);
        // Each time, a second's worth at the ceiling, then a 429 at its end.
        let mut now = t0;
        let mut ceilings = Vec::new();
        for _ in 0..4 {
            now += SECOND;
            let ceiling = s.ceiling.expect("paced");
            ceilings.push(ceiling);
            now = run(&mut s, now, ceiling as usize);
            s.limited(now, now, Some(1));
        }
        let expected = [80.0, 64.0, 51.2, 50.0];
        for (got, want) in ceilings.iter().zip(expected) {
            assert!((got - want).abs() < 1e-9, "{ceilings:?}");
        }
        // Refused at the floor: the limit is not the one measured.
        assert_eq!((s.ceiling, s.limited), (None, u64::from(BURST) + 4));
        let resumed = s.slot(now);
        assert_eq!(resumed, now + SECOND, "the pause stands");
        assert_eq!(run(&mut s, resumed, 10), resumed, "unpaced after it");
        // The next burst measures the limit afresh.
        burst(&mut s, resumed, resumed, None);
        assert_eq!(s.ceiling, Some(8.0));
    }

    /// Answers from `at`, `n` of them, one in three a server error.
    fn failing(s: &mut State, at: Instant, n: usize) -> Instant {
        let mut now = at;
        for i in 0..n {
            now = s.slot(now);
            s.answered(now, i % 3 == 0);
        }
        now
    }

    #[test]
    fn a_burst_of_429s_amid_server_errors_holds_back_only_its_requests_and_never_paces() {
        let mut s = State::default();
        let t0 = Instant::now();
        let last = failing(&mut s, t0, 30);
        burst(&mut s, last, last, Some(1));
        assert_eq!(s.ceiling, None, "not a limit: the service is failing");
        assert_eq!(s.slot(last), last, "the others go on");
        assert_eq!(s.own_wait(last, Some(1)), SECOND, "its request waits");
        assert_eq!(s.own_wait(last, None), DEFAULT_PAUSE);
        // Paced by a limit measured while healthy, then failing: a 429 at the
        // ceiling leaves the pace.
        let mut s = State::default();
        paced_at_80(&mut s, t0);
        let now = failing(&mut s, t0 + SECOND, 80);
        s.limited(now, now, Some(1));
        assert_eq!(s.ceiling, Some(80.0));
    }

    #[test]
    fn a_limit_is_measured_once_the_service_answers_well_again() {
        let mut s = State::default();
        let t0 = Instant::now();
        failing(&mut s, t0, 30);
        // Twenty good answers push the failures out of the recent ones.
        let last = run(&mut s, t0 + SECOND, RECENT);
        burst(&mut s, last, last, None);
        assert_eq!(
            s.ceiling,
            Some(16.0),
            "80 % of the 20 accepted in the second"
        );
        // One failure among twenty answers is a healthy service.
        let mut s = State::default();
        let last = run(&mut s, t0, RECENT - 1);
        s.answered(last, true);
        burst(&mut s, last, last, None);
        assert!(s.ceiling.is_some());
    }

    #[test]
    fn no_answer_at_all_counts_as_a_failure() {
        let mut s = State::default();
        let t0 = Instant::now();
        let last = run(&mut s, t0, 50);
        s.health(true);
        s.health(true);
        burst(&mut s, last, last, None);
        assert_eq!(s.ceiling, None);
    }

    #[test]
    fn the_longest_retry_after_honoured_is_one_cap_for_pauses_and_retries() {
        let mut s = State::default();
        let t0 = Instant::now();
        s.limited(t0, t0, Some(3600));
        assert_eq!(s.slot(t0), t0 + MAX_RETRY_AFTER);
        assert_eq!(honoured(3600), MAX_RETRY_AFTER);
        let backoff = crate::api::pacing::Backoff::default();
        assert!(backoff.delay(0, Some(3600)) <= MAX_RETRY_AFTER);
        assert!(backoff.delay(0, Some(2)) >= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn the_shared_throttle_returns_the_start_and_counts_429s() {
        let throttle = Throttle::default();
        let sent = throttle.wait().await;
        throttle.answered(200);
        for _ in 0..BURST {
            throttle.limited(sent, Some(0));
        }
        assert_eq!(throttle.limited_count(), u64::from(BURST));
        assert_eq!(throttle.ceiling(), Some(0.8));
        throttle.reset();
        assert_eq!((throttle.limited_count(), throttle.ceiling()), (0, None));
    }
}
