//! Telling a service that is down from documents that fail.
//!
//! When many requests in a row, to several different paths, fail the way a service
//! that is away fails (no connection, a timeout, 502/503/504), every request of the
//! client waits instead of spending its retries: one probe at a time (a path that
//! answered before) with backoff, until the service answers again or the limit
//! runs out. A single document that keeps failing never looks like an outage, as
//! it is one path.

use crate::api::pacing::Backoff;
use chrono::{DateTime, Utc};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// When an outage is declared and how long it is waited out.
#[derive(Debug, Clone, Copy)]
pub struct OutagePolicy {
    /// Failures in a row (with no answer in between) that declare an outage.
    pub streak: u32,
    /// Different paths among those failures, at least.
    pub paths: usize,
    /// Pause between probes (a `Retry-After` wins when longer, within a minute).
    pub probe: Backoff,
    /// How long to wait for the service before giving up the run.
    pub limit: Duration,
}

impl Default for OutagePolicy {
    fn default() -> Self {
        OutagePolicy {
            streak: 10,
            paths: 3,
            probe: Backoff {
                base: Duration::from_secs(1),
                cap: Duration::from_secs(30),
                max_retries: u32::MAX,
            },
            limit: Duration::from_secs(600),
        }
    }
}

/// Whether the service is there, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Requests go out.
    Up,
    /// Requests wait; only probes go out.
    Waiting {
        /// When the failures that declared the outage began.
        since: DateTime<Utc>,
    },
    /// The limit ran out: every request fails at once.
    GaveUp {
        /// When the outage began.
        since: DateTime<Utc>,
        /// How long it was waited out.
        waited: Duration,
        /// What the last probe met.
        last: String,
    },
}

/// What a request must do before it goes out.
#[derive(Debug)]
pub enum Turn<'a> {
    /// Go ahead.
    Go,
    /// Send a probe to this path and report with [`Probe::finish`].
    Probe(Probe<'a>),
    /// Wait for a change or until then, and ask again.
    Wait(Instant),
    /// The service was given up on.
    GaveUp(Phase),
}

/// The one probe in flight. Dropped unfinished (its task was cancelled), it lets
/// another request probe.
#[derive(Debug)]
pub struct Probe<'a> {
    gate: &'a Gate,
    /// The path to probe.
    pub path: String,
    finished: bool,
}

impl Probe<'_> {
    /// The probe's result: `Ok` when the service answered (any status but a
    /// gateway's or unavailable one), `Err` with what it met and the wait the
    /// service asked for.
    pub fn finish(mut self, result: Result<(), (String, Option<u64>)>) {
        self.finished = true;
        self.gate.probed(result);
    }
}

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.gate.update(|s| {
                if let State::Down { probing, .. } = s {
                    *probing = false;
                }
            });
        }
    }
}

#[derive(Debug)]
enum State {
    Up {
        streak: u32,
        paths: Vec<String>,
        first: Option<(Instant, DateTime<Utc>)>,
    },
    Down {
        began: Instant,
        since: DateTime<Utc>,
        probing: bool,
        probes: u32,
        next_probe: Instant,
        last: String,
    },
    GaveUp(Phase),
}

impl State {
    fn up() -> State {
        State::Up {
            streak: 0,
            paths: Vec::new(),
            first: None,
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: State,
    /// The smallest document that answered: what probes ask for.
    probe_path: Option<(String, usize)>,
    /// Outages ridden out, and the time spent waiting in them.
    ridden: (u32, Duration),
}

/// The shared outage state of one client.
#[derive(Debug)]
pub struct Gate {
    policy: OutagePolicy,
    inner: Mutex<Inner>,
    phase: watch::Sender<Phase>,
}

impl Gate {
    /// A gate with the service up.
    pub fn new(policy: OutagePolicy) -> Self {
        Gate {
            policy,
            inner: Mutex::new(Inner {
                state: State::up(),
                probe_path: None,
                ridden: (0, Duration::ZERO),
            }),
            phase: watch::Sender::new(Phase::Up),
        }
    }

    /// Follows the phase (for a progress bar).
    pub fn subscribe(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Outages ridden out since [`Gate::reset`], and the time waited in them.
    pub fn ridden(&self) -> (u32, Duration) {
        self.lock().ridden
    }

    /// Forgets everything but the probe path: a new run starts trusting the service.
    pub fn reset(&self) {
        self.update(|s| *s = State::up());
        self.lock().ridden = (0, Duration::ZERO);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Changes the state and publishes the phase it implies.
    fn update(&self, change: impl FnOnce(&mut State)) {
        let mut inner = self.lock();
        change(&mut inner.state);
        let phase = match &inner.state {
            State::Up { .. } => Phase::Up,
            State::Down { since, .. } => Phase::Waiting { since: *since },
            State::GaveUp(phase) => phase.clone(),
        };
        self.phase.send_if_modified(|current| {
            let changed = *current != phase;
            *current = phase;
            changed
        });
    }

    /// The service answered a request on `path` (`size`: its body's bytes, when
    /// the answer was a good one).
    pub fn answered(&self, path: &str, size: Option<usize>) {
        {
            let mut inner = self.lock();
            if let Some(size) = size
                && inner.probe_path.as_ref().is_none_or(|(_, s)| size <= *s)
            {
                inner.probe_path = Some((path.to_string(), size));
            }
        }
        self.back_up();
    }

    fn back_up(&self) {
        let mut recovered = None;
        self.update(|s| match s {
            State::Up { streak, .. } if *streak == 0 => {}
            State::Up { .. } => *s = State::up(),
            State::Down { began, since, .. } => {
                recovered = Some((began.elapsed(), *since));
                *s = State::up();
            }
            State::GaveUp(_) => {}
        });
        if let Some((waited, since)) = recovered {
            let mut inner = self.lock();
            inner.ridden.0 += 1;
            inner.ridden.1 += waited;
            tracing::info!(
                "the service answers again after {} (waiting since {}); resuming",
                span(waited),
                since.format("%Y-%m-%d %H:%M:%S UTC")
            );
        }
    }

    /// A request on `path` failed the way an unreachable service fails. Returns
    /// whether the service is now taken to be down (the failure is then the
    /// outage's, not the request's).
    pub fn failed(&self, path: &str, what: &str) -> bool {
        let policy = self.policy;
        let mut declared = None;
        self.update(|s| match s {
            State::Up {
                streak,
                paths,
                first,
            } => {
                *streak += 1;
                let (began, since) = *first.get_or_insert((Instant::now(), Utc::now()));
                if paths.len() < policy.paths && !paths.iter().any(|p| p == path) {
                    paths.push(path.to_string());
                }
                if *streak >= policy.streak && paths.len() >= policy.paths {
                    declared = Some((*streak, since));
                    *s = State::Down {
                        began,
                        since,
                        probing: false,
                        probes: 0,
                        next_probe: Instant::now() + policy.probe.delay(0, None),
                        last: what.to_string(),
                    };
                }
            }
            State::Down { .. } | State::GaveUp(_) => {}
        });
        if let Some((streak, since)) = declared {
            tracing::warn!(
                "waiting for the service since {}: {streak} requests in a row failed, the last with {what}; fetching is paused and one probe at a time checks for the service, for up to {}",
                since.format("%Y-%m-%d %H:%M:%S UTC"),
                span(policy.limit)
            );
        }
        !matches!(self.lock().state, State::Up { .. })
    }

    /// Whether a request may go out now.
    pub fn turn(&self) -> Turn<'_> {
        let limit = self.policy.limit;
        let mut turn = Turn::Go;
        let probe_path = self.lock().probe_path.as_ref().map(|(p, _)| p.clone());
        self.update(|s| {
            let State::Down {
                began,
                since,
                probing,
                next_probe,
                last,
                ..
            } = s
            else {
                if let State::GaveUp(phase) = s {
                    turn = Turn::GaveUp(phase.clone());
                }
                return;
            };
            let deadline = *began + limit;
            let now = Instant::now();
            if now >= deadline {
                let phase = Phase::GaveUp {
                    since: *since,
                    waited: began.elapsed(),
                    last: last.clone(),
                };
                turn = Turn::GaveUp(phase.clone());
                *s = State::GaveUp(phase);
            } else if !*probing && now >= *next_probe {
                match probe_path {
                    Some(path) => {
                        *probing = true;
                        turn = Turn::Probe(Probe {
                            gate: self,
                            path,
                            finished: false,
                        });
                    }
                    // Nothing answered yet in this client: the waiting requests
                    // themselves are the probes.
                    None => {
                        *next_probe = now + self.policy.probe.delay(0, None);
                        turn = Turn::Go;
                    }
                }
            } else if *probing {
                turn = Turn::Wait(deadline);
            } else {
                turn = Turn::Wait((*next_probe).min(deadline));
            }
        });
        if let Turn::GaveUp(phase) = &turn {
            tracing::debug!(?phase, "the service was given up on");
        }
        turn
    }

    fn probed(&self, result: Result<(), (String, Option<u64>)>) {
        match result {
            Ok(()) => self.back_up(),
            Err((what, retry_after)) => {
                let probe = self.policy.probe;
                self.update(|s| {
                    if let State::Down {
                        probing,
                        probes,
                        next_probe,
                        last,
                        ..
                    } = s
                    {
                        *probing = false;
                        *probes += 1;
                        *next_probe = Instant::now() + probe.delay(*probes, retry_after);
                        *last = what;
                    }
                });
            }
        }
    }
}

/// A duration in the unit a reader expects: seconds up to two minutes, then minutes.
pub fn span(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 120 {
        format!("{secs} s")
    } else {
        format!("{} minutes", (secs + 30) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(limit: Duration) -> OutagePolicy {
        OutagePolicy {
            streak: 4,
            paths: 2,
            probe: Backoff {
                base: Duration::from_millis(10),
                cap: Duration::from_millis(20),
                max_retries: u32::MAX,
            },
            limit,
        }
    }

    #[tokio::test]
    async fn one_failing_path_is_no_outage_but_several_are() {
        let gate = Gate::new(quick(Duration::from_secs(60)));
        gate.answered("/ok", Some(10));
        for _ in 0..10 {
            assert!(!gate.failed("/broken", "HTTP 503"), "one path only");
        }
        assert!(matches!(gate.turn(), Turn::Go));
        assert!(gate.failed("/other", "HTTP 503"), "a second path: down");
        assert!(matches!(*gate.subscribe().borrow(), Phase::Waiting { .. }));
        assert!(matches!(gate.turn(), Turn::Wait(_)));
        tokio::time::sleep(Duration::from_millis(40)).await;
        let Turn::Probe(probe) = gate.turn() else {
            panic!("a probe is due")
        };
        assert_eq!(probe.path, "/ok", "probes ask for a path that answered");
        assert!(matches!(gate.turn(), Turn::Wait(_)), "one probe at a time");
        probe.finish(Ok(()));
        assert!(matches!(gate.turn(), Turn::Go));
        assert_eq!(gate.ridden().0, 1);
    }

    #[tokio::test]
    async fn an_answer_breaks_the_streak_and_the_limit_gives_up() {
        let gate = Gate::new(quick(Duration::from_millis(30)));
        for i in 0..3 {
            gate.failed(&format!("/{i}"), "HTTP 502");
        }
        gate.answered("/x", Some(5));
        assert!(!gate.failed("/3", "HTTP 502"), "the streak started again");
        for i in 0..3 {
            gate.failed(&format!("/{i}"), "connection refused");
        }
        let Turn::Probe(probe) = ({
            tokio::time::sleep(Duration::from_millis(25)).await;
            gate.turn()
        }) else {
            panic!("a probe is due")
        };
        drop(probe);
        tokio::time::sleep(Duration::from_millis(40)).await;
        let Turn::GaveUp(Phase::GaveUp { last, .. }) = gate.turn() else {
            panic!("the limit ran out")
        };
        assert_eq!(last, "connection refused");
        gate.reset();
        assert!(matches!(gate.turn(), Turn::Go), "a new run trusts again");
    }

    #[test]
    fn spans_read_as_seconds_then_minutes() {
        assert_eq!(span(Duration::from_secs(5)), "5 s");
        assert_eq!(span(Duration::from_secs(600)), "10 minutes");
    }
}
