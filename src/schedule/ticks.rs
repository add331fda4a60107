//! The ticks of one daemon job. Jobs take turns on one lock, so a job's ticks can
//! fall due while the other job runs: those run the job once when the other is
//! done, not once per tick (a report due every few seconds during a long sync would
//! otherwise run back to back for as many ticks as the sync lasted). A tick that
//! falls due while the job itself runs is skipped: the run in progress is that
//! tick's run.

use std::sync::{Mutex, MutexGuard};

/// Where a job's ticks stand.
#[derive(Debug, Default)]
pub(crate) struct Ticks {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The job runs now.
    running: bool,
    /// A tick waits for the other job to finish.
    waiting: bool,
    /// Ticks that fell due while that one waited.
    folded: u64,
}

/// What a tick that fell due does.
#[derive(Debug)]
pub(crate) enum Tick<'a> {
    /// Waits for its turn, then runs the job.
    Run(Turn<'a>),
    /// Nothing: the job runs now.
    Running,
    /// Nothing: a tick of the job waits already, and runs it for this one too.
    Folded,
}

/// A tick that runs the job; dropping it ends the run (or the wait).
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    ticks: &'a Ticks,
}

impl Ticks {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A tick fell due.
    pub(crate) fn fell_due(&self) -> Tick<'_> {
        let mut state = self.lock();
        if state.running {
            Tick::Running
        } else if state.waiting {
            state.folded += 1;
            Tick::Folded
        } else {
            state.waiting = true;
            Tick::Run(Turn { ticks: self })
        }
    }
}

impl Turn<'_> {
    /// The job starts: returns how many ticks fell due while this one waited
    /// (run by this run, not on their own). Ticks from now on are skipped.
    pub(crate) fn start(&mut self) -> u64 {
        let mut state = self.ticks.lock();
        state.waiting = false;
        state.running = true;
        std::mem::take(&mut state.folded)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self.ticks.lock();
        state.waiting = false;
        state.running = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_while_one_waits_fold_into_it_and_ticks_while_it_runs_are_skipped() {
        let ticks = Ticks::default();
        let Tick::Run(mut turn) = ticks.fell_due() else {
            panic!("the first tick runs");
        };
        for _ in 0..7 {
            assert!(matches!(ticks.fell_due(), Tick::Folded));
        }
        assert_eq!(turn.start(), 7);
        assert!(matches!(ticks.fell_due(), Tick::Running));
        drop(turn);
        let Tick::Run(mut next) = ticks.fell_due() else {
            panic!("after the run, a tick runs again");
        };
        assert_eq!(next.start(), 0, "the folded ticks were counted once");
    }
}
