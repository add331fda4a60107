//! Stopping on SIGINT or SIGTERM, in the manner of tokio's mini-redis: one listener
//! owns the signals and broadcasts "stop now"; every long task holds a [`Shutdown`]
//! and awaits or checks it, stops requesting, and writes what it already has.

use tokio::sync::watch;

/// The signal that asked the process to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`kill`, service managers).
    Terminate,
}

impl Signal {
    /// The usual name, e.g. `SIGINT`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The exit status shells give a process this signal ended (128 + its number),
    /// so scripts see an interrupted command as interrupted.
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }
}

/// The signal handlers could not be installed. The cause is said in the message,
/// so it is not a `source()` (the crate's rule, `crate::cause`).
#[derive(Debug, thiserror::Error)]
#[error("cannot listen for SIGINT/SIGTERM: {0}")]
pub struct ShutdownError(std::io::Error);

impl From<std::io::Error> for ShutdownError {
    fn from(e: std::io::Error) -> Self {
        ShutdownError(e)
    }
}

/// One receiver of the stop broadcast. Cheap to clone; every clone sees the stop.
#[derive(Debug, Clone)]
pub struct Shutdown {
    notify: watch::Receiver<Option<Signal>>,
}

/// Sends the stop broadcast by hand (tests, and callers with their own reasons).
#[derive(Debug)]
pub struct Trigger(watch::Sender<Option<Signal>>);

impl Trigger {
    /// Tells every [`Shutdown`] to stop, as if `signal` had arrived.
    pub fn stop(&self, signal: Signal) {
        self.0.send_replace(Some(signal));
    }
}

impl Shutdown {
    /// Takes over SIGINT and SIGTERM from now on: the first one is broadcast, a
    /// second one ends the process at once (for a user whose patience ran out
    /// before the grace period did). Needs a running tokio runtime.
    pub fn on_signals() -> Result<Shutdown, ShutdownError> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let (trigger, shutdown) = Shutdown::manual();
        tokio::spawn(async move {
            let first = next_signal(&mut interrupt, &mut terminate).await;
            tracing::debug!(signal = first.name(), "stop requested");
            trigger.stop(first);
            let second = next_signal(&mut interrupt, &mut terminate).await;
            eprintln!("{} again: exiting now", second.name());
            std::process::exit(i32::from(second.exit_code()));
        });
        Ok(shutdown)
    }

    /// A shutdown that only the returned [`Trigger`] sets off.
    pub fn manual() -> (Trigger, Shutdown) {
        let (tx, rx) = watch::channel(None);
        (Trigger(tx), Shutdown { notify: rx })
    }

    /// The signal received, if any.
    pub fn signal(&self) -> Option<Signal> {
        *self.notify.borrow()
    }

    /// Whether a stop was requested.
    pub fn is_shutdown(&self) -> bool {
        self.signal().is_some()
    }

    /// Waits for the stop (at once if it was already requested). Never resolves
    /// when nothing can send it any more.
    pub async fn recv(&mut self) -> Signal {
        let received = self
            .notify
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|signal| *signal);
        match received {
            Some(signal) => signal,
            None => std::future::pending().await,
        }
    }
}

async fn next_signal(
    interrupt: &mut tokio::signal::unix::Signal,
    terminate: &mut tokio::signal::unix::Signal,
) -> Signal {
    tokio::select! {
        _ = interrupt.recv() => Signal::Interrupt,
        _ = terminate.recv() => Signal::Terminate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_the_stop_and_its_signal() {
        let (trigger, shutdown) = Shutdown::manual();
        let mut a = shutdown.clone();
        let mut b = shutdown;
        assert!(!a.is_shutdown());
        let waiter = tokio::spawn(async move { a.recv().await });
        trigger.stop(Signal::Interrupt);
        assert_eq!(waiter.await.expect("joined"), Signal::Interrupt);
        assert_eq!(b.recv().await, Signal::Interrupt, "a late receiver too");
        assert_eq!(b.signal().map(Signal::exit_code), Some(130));
        assert_eq!(Signal::Terminate.exit_code(), 143);
    }
}
