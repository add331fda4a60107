//! Progress of a sync on a terminal: documents done out of documents known so far
//! (the total grows as discovery finds more), and megabytes received.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar that draws only when asked and when stderr is a terminal, so logs
/// and CI output stay clean.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    /// "waiting for the service since ..." while an outage is waited out.
    waiting: Option<String>,
    bytes: u64,
}

impl Progress {
    /// A bar if `wanted` and stderr is a terminal, otherwise a no-op.
    pub fn new(wanted: bool) -> Self {
        let bar = (wanted && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} documents  {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Progress {
            bar,
            waiting: None,
            bytes: 0,
        }
    }

    /// More documents became known.
    pub fn add(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(n);
        }
    }

    /// One document done; `bytes` received so far.
    pub fn done(&mut self, bytes: u64) {
        self.bytes = bytes;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.show();
    }

    /// The service is down since then (`None`: it answers again).
    pub fn waiting(&mut self, since: Option<chrono::DateTime<chrono::Utc>>) {
        self.waiting = since.map(|t| {
            format!(
                "waiting for the service since {}",
                t.format("%Y-%m-%d %H:%M:%S UTC")
            )
        });
        self.show();
    }

    fn show(&self) {
        if let Some(bar) = &self.bar {
            let received = format!("{:.1} MB", self.bytes as f64 / 1e6);
            bar.set_message(match &self.waiting {
                Some(waiting) => format!("{received}  {waiting}"),
                None => received,
            });
        }
    }

    /// Removes the bar (the summary line follows).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
