//! The report threads: jobs start one after another in the order given, each once
//! the cores it keeps busy are free. A job that reads with threads of its own
//! (`compute_trends`: two readers and its writer) has both cores of a small machine
//! to itself, so it never holds its working set beside another job's: the run's
//! peak memory is its largest job's, not the sum of the two largest (over xlarge,
//! docs/performance.md), and the CPU stays as busy as before since that job alone
//! fills the cores.

use std::sync::{Condvar, Mutex};

/// One job to run: its index (results are keyed by it) and the threads it keeps
/// busy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub index: usize,
    pub threads: usize,
}

/// Which job starts next and how many cores are free; a failed job stops the
/// starting of any other.
struct State {
    next: usize,
    free: usize,
    failed: bool,
}

struct Gate<'s> {
    slots: &'s [Slot],
    cores: usize,
    state: Mutex<State>,
    freed: Condvar,
}

impl Gate<'_> {
    /// The next job and the cores it takes, once they are free; None when every
    /// job has started or one failed.
    fn admit(&self) -> Option<(usize, usize)> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let slot = self.slots.get(state.next).filter(|_| !state.failed)?;
            // A job wider than the machine takes all of it, and starts.
            let takes = slot.threads.clamp(1, self.cores);
            if state.free >= takes {
                state.free -= takes;
                state.next += 1;
                return Some((slot.index, takes));
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn release(&self, cores: usize, failed: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free += cores;
        state.failed |= failed;
        self.freed.notify_all();
    }
}

/// Runs `work` for every slot on up to `cores` threads named `<name>-<n>`, in the
/// order of `slots`, a job starting once its threads fit in the free cores. Returns
/// the results by index, or the first error (no job starts after it).
///
/// `work` must not panic (the report jobs are wrapped in `catch_unwind`); a panic
/// is resumed on the calling thread.
pub(crate) fn run<T: Send, E: Send>(
    name: &str,
    cores: usize,
    slots: &[Slot],
    work: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<(usize, T)>, E> {
    let cores = cores.max(1);
    let gate = Gate {
        slots,
        cores,
        state: Mutex::new(State {
            next: 0,
            free: cores,
            failed: false,
        }),
        freed: Condvar::new(),
    };
    let (gate, work) = (&gate, &work);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..cores.min(slots.len()))
            .map(|n| {
                std::thread::Builder::new()
                    .name(format!("{name}-{n}"))
                    .spawn_scoped(scope, move || worker(gate, work))
            })
            .collect();
        let mut done = Vec::with_capacity(slots.len());
        let mut first_error = None;
        for spawned in workers {
            // A thread that cannot start leaves its share to the others.
            let Ok(handle) = spawned else { continue };
            match handle.join() {
                Ok(Ok(results)) => done.extend(results),
                Ok(Err(e)) => first_error = first_error.or(Some(e)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(done),
        }
    })
}

fn worker<T, E>(
    gate: &Gate<'_>,
    work: &impl Fn(usize) -> Result<T, E>,
) -> Result<Vec<(usize, T)>, E> {
    let mut done = Vec::new();
    while let Some((index, cores)) = gate.admit() {
        let result = work(index);
        gate.release(cores, result.is_err());
        done.push((index, result?));
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Runs `threads` per job on `cores`, recording the most cores in use at once
    /// and the order the jobs started in.
    fn schedule(cores: usize, threads: &[usize]) -> (usize, Vec<usize>) {
        let slots: Vec<Slot> = threads
            .iter()
            .enumerate()
            .map(|(index, &threads)| Slot { index, threads })
            .collect();
        let (busy, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let started = Mutex::new(Vec::new());
        let results = run("test", cores, &slots, |i| -> Result<usize, ()> {
            let takes = threads[i].clamp(1, cores);
            let now = busy.fetch_add(takes, Ordering::SeqCst) + takes;
            most.fetch_max(now, Ordering::SeqCst);
            started.lock().expect("order").push(i);
            std::thread::sleep(std::time::Duration::from_millis(20));
            busy.fetch_sub(takes, Ordering::SeqCst);
            Ok(i * 10)
        })
        .expect("no job fails");
        for (i, value) in &results {
            assert_eq!(*value, i * 10, "each result is keyed by its job");
        }
        let mut indexes: Vec<usize> = results.iter().map(|(i, _)| *i).collect();
        indexes.sort_unstable();
        assert_eq!(indexes, (0..threads.len()).collect::<Vec<_>>());
        let order = started.into_inner().expect("order");
        (most.into_inner(), order)
    }

    #[test]
    fn a_job_as_wide_as_the_machine_runs_alone_and_the_others_share_it() {
        let (most, order) = schedule(2, &[3, 1, 1, 1]);
        assert_eq!(most, 2, "never more cores busy than the machine has");
        assert_eq!(order[0], 0, "jobs start in the order given");
    }

    #[test]
    fn narrow_jobs_use_every_core() {
        let (most, _) = schedule(2, &[1, 1, 1, 1]);
        assert_eq!(most, 2);
    }

    #[test]
    fn a_wide_job_at_the_end_waits_for_the_machine() {
        let (most, order) = schedule(2, &[1, 1, 1, 2]);
        assert_eq!(most, 2);
        assert_eq!(order.last(), Some(&3));
    }

    #[test]
    fn no_job_starts_after_one_fails() {
        let slots: Vec<Slot> = (0..6).map(|index| Slot { index, threads: 1 }).collect();
        let ran = AtomicUsize::new(0);
        let outcome = run("test", 1, &slots, |i| {
            ran.fetch_add(1, Ordering::SeqCst);
            if i == 1 {
                Err(format!("job {i}"))
            } else {
                Ok(i)
            }
        });
        assert_eq!(outcome, Err("job 1".to_string()));
        assert_eq!(ran.into_inner(), 2, "jobs 0 and 1 ran, none after");
    }
}
