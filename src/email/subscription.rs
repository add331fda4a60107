//! Report subscriptions (`[[report.subscriptions]]`): a run's report e-mailed to a
//! list of addresses, one message each, once per as-of date.
//!
//! The message is read from what the run produced, through the report API that
//! renders it (`render::run`'s outcome: the folder, the files written, the rows
//! that need action): [`RunView`] takes those, so the outcome itself goes on to the
//! alerts. Each recipient's message of a date is recorded in the mirror
//! ([`crate::email::sends`]) and not sent again once sent or refused for good.

use crate::config::SubscriptionConfig;
use crate::email::attach::{self, Links};
use crate::email::message;
use crate::email::report_mail;
use crate::email::sends::{self, Standing};
use crate::email::smtp::{Mailer, Sent};
use crate::email::{EmailError, Tally};
use crate::mirror;
use crate::render::{ReportOutcome, WrittenFile};
use crate::report::Format;
use crate::report::attention::Attention;
use chrono::NaiveDate;
use lettre::Address;
use lettre::message::Mailbox;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a subscription attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// The run's workbook, `orgledger-<as-of>.xlsx`.
    Workbook,
    /// The run's CSV files in one zip.
    Csv,
}

/// Attachments stay under this many megabytes unless the subscription says.
pub const DEFAULT_MAX_ATTACHMENT_MB: f64 = 10.0;

/// One `[[report.subscriptions]]`, checked.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub name: String,
    /// Each gets a message of their own, addressed with their name when given.
    pub recipients: Vec<Mailbox>,
    pub attach: Vec<Attach>,
    /// Only these organizations' rows.
    pub organizations: Option<BTreeSet<i64>>,
    /// Its own cron schedule (as written; the daemon checks it); None: after each
    /// report job.
    pub cron: Option<String>,
    pub max_attachment_bytes: u64,
}

impl Subscription {
    /// Checks an entry of the config.
    pub(crate) fn from_config(cfg: &SubscriptionConfig) -> Result<Subscription, EmailError> {
        let key = format!("config [[report.subscriptions]] {:?}", cfg.name);
        let bad = |why: String| EmailError::Setup(format!("{key}: {why}"));
        let name_ok = !cfg.name.is_empty()
            && cfg
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !name_ok {
            return Err(bad(
                "a name is letters, digits, '-', '_' or '.' (it is typed in `report --send NAME`)"
                    .into(),
            ));
        }
        if cfg.recipients.is_empty() {
            return Err(bad("it has no recipients".into()));
        }
        let recipients = cfg
            .recipients
            .iter()
            .map(|r| message::mailbox(r, &format!("{key} recipients")))
            .collect::<Result<Vec<_>, _>>()?;
        let attach = cfg
            .attach
            .iter()
            .flatten()
            .map(|what| match what.as_str() {
                "workbook" => Ok(Attach::Workbook),
                "csv" => Ok(Attach::Csv),
                other => Err(bad(format!(
                    "attach {other:?} is not \"workbook\" or \"csv\""
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let organizations: Option<BTreeSet<i64>> = cfg
            .organizations
            .as_ref()
            .map(|o| o.iter().copied().collect());
        if organizations.is_some() && attach.contains(&Attach::Workbook) {
            return Err(bad(
                "the workbook holds every organization, so a subscription with organizations cannot attach it; \
                 attach \"csv\" (only their rows) instead"
                    .into(),
            ));
        }
        let mb = cfg.max_attachment_mb.unwrap_or(DEFAULT_MAX_ATTACHMENT_MB);
        if !(mb.is_finite() && mb >= 0.0) {
            return Err(bad(format!(
                "max_attachment_mb {mb} is not a size in megabytes"
            )));
        }
        Ok(Subscription {
            name: cfg.name.clone(),
            recipients,
            attach,
            organizations,
            cron: cfg.cron.clone(),
            max_attachment_bytes: (mb * 1_000_000.0) as u64,
        })
    }

    /// The formats the report run must write for the attachments.
    pub fn formats(&self) -> Vec<Format> {
        self.attach
            .iter()
            .map(|a| match a {
                Attach::Workbook => Format::Xlsx,
                Attach::Csv => Format::Csv,
            })
            .collect()
    }
}

/// What a subscription reads of a report run (`render::run`'s outcome).
#[derive(Debug, Clone)]
pub struct RunView {
    pub as_of: NaiveDate,
    /// The sync run the data came from.
    pub run_id: Option<i64>,
    /// The run's folder.
    pub dir: PathBuf,
    pub files: Vec<WrittenFile>,
    /// The rows that need action (already pseudonymized under `redact_pii`).
    pub attention: Attention,
}

impl RunView {
    pub fn of(outcome: &ReportOutcome) -> RunView {
        RunView {
            as_of: outcome.as_of,
            run_id: outcome.run_id,
            dir: outcome.dir.clone(),
            files: outcome.files.clone(),
            attention: outcome.attention.clone(),
        }
    }
}

/// How one recipient's message of the date went.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Sent by an earlier run, at this time: not sent again.
    AlreadySent(String),
    /// Refused for good by an earlier run: not tried again.
    AlreadyRefused(String),
    /// Tried now.
    Tried(Sent),
}

/// The subscription's messages of the run's date, recipient by recipient.
#[derive(Debug)]
pub struct Report {
    pub recipients: Vec<(Address, Outcome)>,
}

impl Report {
    /// The messages tried now, by outcome.
    pub fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for (_, outcome) in &self.recipients {
            if let Outcome::Tried(sent) = outcome {
                tally.add(&sent.outcome);
            }
        }
        tally
    }
}

/// Sends the subscription's message of the run to each recipient it has not
/// reached yet for that date; `base_url` is `report.base_url`.
pub async fn send(
    db: &Path,
    view: &RunView,
    sub: &Subscription,
    mailer: &Mailer,
    base_url: Option<&str>,
) -> Result<Report, EmailError> {
    let sql = |cause| EmailError::Sql {
        db: db.to_path_buf(),
        cause,
    };
    let mut conn = mirror::open_rw(db)?;
    let as_of = view.as_of.to_string();
    let mut due = Vec::new();
    let mut report = Report {
        recipients: Vec::new(),
    };
    for to in &sub.recipients {
        let key = (sub.name.as_str(), as_of.as_str(), to.email.as_ref());
        let address = to.email.clone();
        match sends::standing(&conn, key).map_err(sql)? {
            Standing::Due => due.push(to.clone()),
            Standing::Sent(at) => report.recipients.push((address, Outcome::AlreadySent(at))),
            Standing::Failed(why) => report
                .recipients
                .push((address, Outcome::AlreadyRefused(why))),
        }
    }
    if due.is_empty() {
        return Ok(report);
    }
    let links = Links {
        base: base_url.map(|b| b.trim_end_matches('/').to_string()),
        as_of: as_of.clone(),
        dir: view.dir.display().to_string(),
    };
    let attached = attach::attachments(view, sub, &links)?;
    let content = report_mail::compose(view, sub, &links, attached);
    let mut stopped = false;
    for to in due {
        if stopped {
            break;
        }
        let address = to.email.clone();
        let key = format!("report/{}/{as_of}/{address}", sub.name);
        let bytes = message::build(mailer.from(), &to, &key, &content)?;
        let sent = mailer.send(&address, &bytes).await;
        let record = (sub.name.as_str(), as_of.as_str(), address.as_ref());
        sends::record(
            &mut conn,
            record,
            &sent.outcome,
            sent.attempts,
            &mirror::now_text(),
        )
        .map_err(sql)?;
        log(sub, &address, &sent, bytes.len());
        stopped = sent.failure.as_ref().is_some_and(|f| f.stops_the_run());
        report.recipients.push((address, Outcome::Tried(sent)));
    }
    Ok(report)
}

fn log(sub: &Subscription, to: &Address, sent: &Sent, bytes: usize) {
    let (name, attempts) = (sub.name.as_str(), sent.attempts);
    match &sent.failure {
        None => tracing::info!(subscription = name, to = %to, bytes, attempts, "report e-mailed"),
        Some(f) if f.is_final() => {
            tracing::warn!(subscription = name, to = %to, "the mail server refused the report for good: {f}")
        }
        Some(f) => tracing::warn!(
            subscription = name,
            to = %to,
            attempts,
            "report not e-mailed ({f}); the next run of the same date tries again"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> SubscriptionConfig {
        toml::from_str(text).expect("subscription parses")
    }

    #[test]
    fn a_subscription_is_checked_and_says_what_its_run_must_write() {
        let sub = Subscription::from_config(&config(
            "name = \"weekly\"\nrecipients = [\"Finance <finance@example.com>\"]\nattach = [\"workbook\", \"csv\"]\n",
        ))
        .expect("valid");
        assert_eq!(sub.formats(), [Format::Xlsx, Format::Csv]);
        assert_eq!(sub.max_attachment_bytes, 10_000_000);
        assert_eq!(sub.recipients[0].email.to_string(), "finance@example.com");
        let err = Subscription::from_config(&config(
            "name = \"am\"\nrecipients = [\"a@example.com\"]\nattach = [\"workbook\"]\norganizations = [12]\n",
        ))
        .expect_err("workbook with a filter");
        assert!(err.to_string().contains("attach \"csv\""), "{err}");
        let err = Subscription::from_config(&config(
            "name = \"w\"\nrecipients = [\"a@example.com\"]\nattach = [\"pdf\"]\n",
        ))
        .expect_err("pdf");
        assert!(err.to_string().contains("\"pdf\""), "{err}");
        assert!(
            Subscription::from_config(&config(
                "name = \"a b\"\nrecipients = [\"a@example.com\"]\n"
            ))
            .is_err()
        );
        assert!(Subscription::from_config(&config("name = \"w\"\nrecipients = []\n")).is_err());
    }
}
