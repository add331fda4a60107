//! E-mail (docs/email.md): alerts and reports to people's inboxes through the SMTP
//! server of `[email]`.
//!
//! - [`smtp`]: the server, TLS and login; each send step by step, so a failure says
//!   which step failed; retries with the webhooks' backoff.
//! - [`message`]: a message's headers and parts (plain text and HTML, attachments).
//! - [`routing`] and [`digest`]: alerts, routed by kind and organization, queued in
//!   the alerts' outbox, sent as one digest per address and run.
//! - [`subscription`], [`report_mail`], [`attach`], [`sends`]: a run's report to a
//!   list of addresses, once per as-of date, recorded in the mirror.
//! - [`layout`]: the HTML part's frame.
//!
//! The room reads the reports through `render::run`'s outcome and the alerts through
//! their outbox's API; it sits above both, below the daemon and the commands.

pub mod attach;
pub mod digest;
pub mod layout;
pub mod message;
pub mod report_mail;
pub mod routing;
pub mod sends;
pub mod smtp;
pub mod subscription;

pub use smtp::{Mailer, MailerSettings};
pub use subscription::{RunView, Subscription};

use crate::alerts::outbox::Delivery;
use crate::mirror::MirrorError;
use std::path::PathBuf;

/// Why e-mail could not be set up or recorded. Causes are said inline, not as
/// `source()`s (the crate's rule, `crate::cause`). A message the server did not
/// take is not an error: its outcome is recorded.
#[derive(Debug, thiserror::Error)]
pub enum EmailError {
    /// A setting that cannot be used; the text names the key and what to write.
    #[error("{0}")]
    Setup(String),
    /// Opening or upgrading the mirror.
    #[error("{0}")]
    Mirror(MirrorError),
    /// Reading or writing the records.
    #[error("cannot read or write the e-mail records of {db}: {}", crate::cause::sqlite(.cause))]
    Sql {
        /// The mirror.
        db: PathBuf,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
    /// A report file to attach.
    #[error("cannot attach {}: {}", .path.display(), crate::cause::io(.cause))]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        cause: std::io::Error,
    },
    /// A message that cannot be put together.
    #[error("cannot build the message to {to}: {why}")]
    Message {
        /// Its recipient.
        to: String,
        /// What is wrong.
        why: String,
    },
}

impl From<MirrorError> for EmailError {
    fn from(e: MirrorError) -> Self {
        EmailError::Mirror(e)
    }
}

/// Messages tried in a run, by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Taken by the server.
    pub sent: u64,
    /// To be tried again.
    pub pending: u64,
    /// Refused for good.
    pub failed: u64,
}

impl Tally {
    fn add(&mut self, outcome: &Delivery) {
        match outcome {
            Delivery::Delivered(_) => self.sent += 1,
            Delivery::Pending { .. } => self.pending += 1,
            Delivery::Failed { .. } => self.failed += 1,
        }
    }
}
