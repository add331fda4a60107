//! Alerts: events for the moment an entitlement crosses a threshold, a trial nears
//! its end, or syncs keep failing; sent to webhooks (signed Standard Webhooks, Slack
//! or Microsoft Teams messages) and/or as JSON lines.
//!
//! One evaluation: read the `entitlements` and `trials` tables (built by the report
//! code, or handed over by the daemon's report job) and the sync runs as of a date
//! ([`events`]), compare them with the state stored in the mirror ([`state`]), store
//! the new crossings and queue them for each webhook ([`outbox`]), append them to a
//! JSON Lines file ([`jsonl`]), then deliver whatever is pending, webhook by webhook,
//! each in its format ([`webhook`], [`format`]).
//!
//! As-of dates: only an evaluation as of the latest evaluated date or later
//! advances the state. An earlier date is evaluated read-only: it lists the
//! conditions that held on that day (ids derived from the day), changes nothing in
//! the mirror and sends nothing. docs/alerts.md describes every event.

pub mod events;
pub mod format;
pub mod held;
pub mod jsonl;
pub mod outbox;
pub(crate) mod state;
pub mod webhook;

pub use events::Event;
pub use format::Format;
pub use jsonl::Jsonl;
pub use outbox::{Counts, MailRoute};
pub use webhook::{Retry, SigningKey, Webhook};

use crate::mirror::{self, MirrorError};
use crate::report::{
    self, KeptTables, ReportError, ReportOptions, Thresholds, entitlements, trials,
};
use chrono::NaiveDate;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An (organization, metric) reached a threshold percentage of its limit.
    EntitlementThreshold,
    /// A trial expires within the configured days.
    TrialExpiring,
    /// A trial expired.
    TrialExpired,
    /// An expired trial's organization is due for deletion within the configured days.
    TrialDeletionDue,
    /// The last K syncs failed or were partial.
    SyncFailing,
    /// A sync succeeded after `sync.failing`.
    SyncRecovered,
}

impl Kind {
    /// Every type, in documentation order.
    pub const ALL: [Kind; 6] = [
        Kind::EntitlementThreshold,
        Kind::TrialExpiring,
        Kind::TrialExpired,
        Kind::TrialDeletionDue,
        Kind::SyncFailing,
        Kind::SyncRecovered,
    ];

    /// The `type` of its events.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::EntitlementThreshold => "entitlement.threshold",
            Kind::TrialExpiring => "trial.expiring",
            Kind::TrialExpired => "trial.expired",
            Kind::TrialDeletionDue => "trial.deletion_due",
            Kind::SyncFailing => "sync.failing",
            Kind::SyncRecovered => "sync.recovered",
        }
    }

    /// The type named `text`.
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// What counts as an alert.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Percentages of a limit (default: the report's `warning` and `exceeded` bands,
    /// 80 and 100).
    pub thresholds: Vec<f64>,
    /// `trial.deletion_due` this many days ahead (default 7).
    pub trial_deletion_days: i64,
    /// `sync.failing` after this many failed or partial runs in a row (default 3).
    pub sync_failing_runs: u32,
    /// The types sent (default: all).
    pub kinds: HashSet<Kind>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            thresholds: {
                let bands = Thresholds::default();
                vec![bands.warning_pct, bands.exceeded_pct]
            },
            trial_deletion_days: 7,
            sync_failing_runs: 3,
            kinds: Kind::ALL.into_iter().collect(),
        }
    }
}

/// One evaluation's settings.
#[derive(Debug, Clone)]
pub struct AlertOptions {
    /// The mirror.
    pub db: PathBuf,
    /// Evaluate the mirror as it stood at the end of this day (UTC).
    pub as_of: NaiveDate,
    /// What counts.
    pub rules: Rules,
    /// The reports' thresholds (`[thresholds]`): a trial's `expiring` status is the
    /// report's, so the alert and the report never disagree.
    pub thresholds: Thresholds,
    /// The webhooks (names unique), each with its format.
    pub webhooks: Vec<Webhook>,
    /// Who gets which events by e-mail, if anyone: the events are queued for each
    /// address here and sent as digests by the e-mail room.
    pub mail: Option<Arc<dyn MailRoute>>,
    /// JSON lines, if any.
    pub jsonl: Option<Jsonl>,
    /// Evaluate and return the events; store, queue and send nothing.
    pub dry_run: bool,
    /// The reports' SQL folder (as `report --queries`).
    pub queries_dir: Option<PathBuf>,
    /// Pseudonymize names and e-mails (as `report --redact-pii`).
    pub redact_pii: bool,
}

impl AlertOptions {
    /// Whether the events have somewhere to go (a webhook, e-mail or a JSON Lines
    /// file).
    pub fn has_destination(&self) -> bool {
        !self.webhooks.is_empty() || self.mail.is_some() || self.jsonl.is_some()
    }

    /// Default rules, no sinks.
    pub fn new(db: impl Into<PathBuf>, as_of: NaiveDate) -> Self {
        AlertOptions {
            db: db.into(),
            as_of,
            rules: Rules::default(),
            thresholds: Thresholds::default(),
            webhooks: Vec::new(),
            mail: None,
            jsonl: None,
            dry_run: false,
            queries_dir: None,
            redact_pii: false,
        }
    }
}

/// How an evaluation treated the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// New crossings were stored, queued and sent.
    Advanced,
    /// An as-of date before the latest evaluated one: listed only.
    ReadOnly,
    /// `--dry-run`: listed only.
    DryRun,
}

/// What one evaluation did.
#[derive(Debug)]
pub struct AlertOutcome {
    /// How the state was treated.
    pub mode: Mode,
    /// The new events (in read-only mode: every condition that held).
    pub events: Vec<Event>,
    /// The latest as-of date that advanced the state (before this run).
    pub latest_before: Option<NaiveDate>,
    /// The deliveries after this run's (None without a webhook or when nothing was sent).
    pub outbox: Option<Counts>,
}

/// Why an evaluation failed. Causes are said inline, not as `source()`s.
#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    /// Opening or upgrading the mirror.
    #[error("{0}")]
    Mirror(MirrorError),
    /// Building the report tables the alerts read.
    #[error("{0}")]
    Report(ReportError),
    /// Reading or writing the alert tables.
    #[error("cannot read or write the alert tables of {db}: {}", crate::cause::sqlite(.cause))]
    Sql {
        /// The mirror.
        db: PathBuf,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
    /// A webhook secret that is not `whsec_<base64>` (the secret itself is not shown).
    #[error("the webhook secret in {file} is not usable: {why}; write it as whsec_<base64 key>")]
    Secret {
        /// The secret file.
        file: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A webhook that cannot be set up.
    #[error("{0}")]
    Setup(String),
    /// The JSON Lines file.
    #[error("cannot append alerts to {}: {}", .0.display(), crate::cause::io(.1))]
    Jsonl(PathBuf, std::io::Error),
    /// The evaluation thread died.
    #[error("the alert evaluation stopped: {0}")]
    Task(String),
    /// An evaluation that would record its events has nowhere to send them: they
    /// would be marked alerted and reach no one.
    #[error("{NO_DESTINATION}")]
    NoDestination,
}

/// Why alerts are not evaluated without a destination, and what to give instead.
pub const NO_DESTINATION: &str = "alerts need a destination, or the events would be recorded as sent and reach no one: \
     pass --webhook URL with --webhook-secret-file FILE, or --jsonl FILE (- for standard output), \
     or set webhook_url, [[alerts.webhooks]], [[alerts.email]] (with [email]) or jsonl in the config's [alerts] \
     section; --dry-run shows the events without recording them";

impl From<MirrorError> for AlertError {
    fn from(e: MirrorError) -> Self {
        AlertError::Mirror(e)
    }
}

impl From<ReportError> for AlertError {
    fn from(e: ReportError) -> Self {
        AlertError::Report(e)
    }
}

/// Evaluates, stores and sends; see the module documentation. `tables` are the
/// report tables when the caller has built them already (the daemon's report job).
pub async fn run(
    opts: &AlertOptions,
    tables: Option<KeptTables>,
) -> Result<AlertOutcome, AlertError> {
    let eval_opts = opts.clone();
    let mut outcome = tokio::task::spawn_blocking(move || evaluate(&eval_opts, tables))
        .await
        .map_err(|e| AlertError::Task(e.to_string()))??;
    if outcome.mode == Mode::Advanced && !opts.webhooks.is_empty() {
        outcome.outbox = Some(deliver(&opts.db, &opts.webhooks).await?);
    }
    Ok(outcome)
}

/// The evaluation proper (blocking: SQLite and polars).
fn evaluate(opts: &AlertOptions, tables: Option<KeptTables>) -> Result<AlertOutcome, AlertError> {
    let sql = |cause| AlertError::Sql {
        db: opts.db.clone(),
        cause,
    };
    let mut conn = mirror::open_rw(&opts.db)?;
    let latest_before = state::latest_advanced(&conn).map_err(sql)?;
    let mode = if opts.dry_run {
        Mode::DryRun
    } else if latest_before.is_some_and(|latest| opts.as_of < latest) {
        Mode::ReadOnly
    } else {
        Mode::Advanced
    };
    if mode == Mode::Advanced && !opts.has_destination() {
        return Err(AlertError::NoDestination);
    }
    let tables = match tables {
        Some(t) => t,
        None => report_tables(opts)?,
    };
    let observations = observe(opts, &tables, &conn, &sql)?;
    let now = mirror::now_text();
    let events = if mode == Mode::ReadOnly {
        listed(opts.as_of, observations, &opts.rules.kinds, &now)
    } else {
        let stored = state::load(&conn).map_err(sql)?;
        let found = state::transitions(
            &stored,
            observations,
            &tracked(&opts.rules.kinds),
            &opts.rules.kinds,
            &now,
        );
        if mode == Mode::Advanced {
            // The lines first: if they cannot be written, nothing is marked
            // alerted; if the commit then fails, the next run sends them again
            // (a repeat, never a loss).
            if let Some(target) = &opts.jsonl {
                jsonl::append(target, &found.fired)?;
            }
            let tx = conn.transaction().map_err(sql)?;
            state::save(&tx, &found.changes, opts.as_of).map_err(sql)?;
            if !opts.webhooks.is_empty() || opts.mail.is_some() {
                let mail = opts.mail.as_deref();
                outbox::enqueue(&tx, &found.fired, &opts.webhooks, mail, &now).map_err(sql)?;
            }
            state::record_run(&tx, opts.as_of, "advanced", found.fired.len(), &now).map_err(sql)?;
            tx.commit().map_err(sql)?;
        }
        found.fired
    };
    Ok(AlertOutcome {
        mode,
        events,
        latest_before,
        outbox: None,
    })
}

/// The condition kinds evaluated for the event types sent: `sync.recovered` is the
/// end of `sync.failing`, so either needs the sync condition.
fn tracked(kinds: &HashSet<Kind>) -> HashSet<Kind> {
    kinds
        .iter()
        .map(|k| match k {
            Kind::SyncRecovered => Kind::SyncFailing,
            other => *other,
        })
        .collect()
}

/// The report tables the enabled kinds read, built without writing files.
fn report_tables(opts: &AlertOptions) -> Result<KeptTables, AlertError> {
    let kinds = &opts.rules.kinds;
    let mut names = Vec::new();
    if kinds.contains(&Kind::EntitlementThreshold) {
        names.push(entitlements::NAME.to_string());
    }
    if kinds.iter().any(|k| k.as_str().starts_with("trial.")) {
        names.push(trials::NAME.to_string());
    }
    if names.is_empty() {
        return Ok(KeptTables::default());
    }
    let mut ropts = ReportOptions::new(&opts.db, opts.as_of);
    ropts.names = names;
    ropts.queries_dir = opts.queries_dir.clone();
    ropts.redact_pii = opts.redact_pii;
    ropts.thresholds = opts.thresholds.clone();
    Ok(report::tables(&ropts)?)
}

/// Every observation of the tracked kinds.
fn observe(
    opts: &AlertOptions,
    tables: &KeptTables,
    conn: &rusqlite::Connection,
    sql: &dyn Fn(rusqlite::Error) -> AlertError,
) -> Result<Vec<events::Observation>, AlertError> {
    let kinds = tracked(&opts.rules.kinds);
    let mut out = Vec::new();
    if kinds.contains(&Kind::EntitlementThreshold)
        && let Some(table) = tables.get(entitlements::NAME)
    {
        out.extend(events::entitlements(
            &table.whole()?,
            &opts.rules.thresholds,
            opts.as_of,
        )?);
    }
    if let Some(table) = tables.get(trials::NAME) {
        out.extend(
            events::trials(&table.whole()?, &opts.rules, opts.as_of)?
                .into_iter()
                .filter(|o| kinds.contains(&o.kind)),
        );
    }
    if kinds.contains(&Kind::SyncFailing) {
        let cutoff = crate::mirror::asof::cutoff(opts.as_of);
        out.push(
            events::sync(conn, &cutoff, opts.rules.sync_failing_runs, opts.as_of).map_err(sql)?,
        );
    }
    Ok(out)
}

/// Read-only mode: the conditions that held on the day, each as an event whose id
/// is derived from the condition and the day.
fn listed(
    as_of: NaiveDate,
    observations: Vec<events::Observation>,
    kinds: &HashSet<Kind>,
    now: &str,
) -> Vec<Event> {
    observations
        .into_iter()
        .filter(|o| o.active && kinds.contains(&o.kind))
        .map(|o| {
            let id = state::event_id(&o.key, &as_of.to_string(), "as-of");
            let kind = o.kind;
            o.into_event(kind, id, now)
        })
        .collect()
}

/// Sends every pending delivery, webhook by webhook. A receiver that is still
/// failing after an event's retries is left alone for this run (its deliveries stay
/// pending for the next); the other webhooks still get theirs.
async fn deliver(db: &std::path::Path, hooks: &[Webhook]) -> Result<Counts, AlertError> {
    let sql = |cause| AlertError::Sql {
        db: db.to_path_buf(),
        cause,
    };
    let mut conn = mirror::open_rw(db)?;
    for hook in hooks {
        deliver_to(&mut conn, hook).await.map_err(sql)?;
    }
    outbox::counts(&conn).map_err(sql)
}

/// Sends one webhook's pending deliveries, oldest first, until it stops answering.
/// (`&mut`: a connection is `Send` but not `Sync`, and the future holds it across
/// the sends.)
async fn deliver_to(conn: &mut rusqlite::Connection, hook: &Webhook) -> rusqlite::Result<()> {
    let webhook = hook.name();
    for event in outbox::pending(conn, webhook)? {
        let (outcome, attempts) = hook.deliver(&event.id, &event.body).await;
        let id = event.id.as_str();
        outbox::record(conn, (id, webhook), &outcome, attempts, &mirror::now_text())?;
        match &outcome {
            outbox::Delivery::Delivered(_) => tracing::debug!(id, webhook, "alert delivered"),
            outbox::Delivery::Failed { status, excerpt } => {
                tracing::warn!(id, webhook, status, body = %excerpt, "the webhook refused an alert; it is marked failed")
            }
            outbox::Delivery::Pending { error, .. } => {
                tracing::warn!(
                    id,
                    webhook,
                    attempts,
                    "the webhook is not taking alerts ({error}); pending ones are retried on the next run"
                );
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::{ORGANIZATIONS, TRIALS};
    use crate::report::testkit::*;

    /// `trial.expiring` fires exactly for a trial whose `trials` status is
    /// `expiring`, whatever `[thresholds] trial_expiring_days` says.
    #[test]
    fn trial_expiring_is_the_reports_expiring_status_at_every_setting() {
        let mut m = TestMirror::new();
        m.run("2025-03-31T06:00:00.000Z", |w| {
            w.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("Org"))]);
            w.scope(
                &TRIALS,
                &[i(1)],
                &[&[
                    ("id", i(5)),
                    ("user_id", i(1)),
                    ("organization_id", i(1)),
                    ("expiration_date", t("2025-04-20T00:00:00.000Z")),
                ]],
            );
        });
        m.close();
        let day = NaiveDate::from_ymd_opt(2025, 3, 31).expect("date");
        // 20 days left: active at 14, expiring at 30.
        for (days, expiring) in [(14, false), (30, true)] {
            let mut ropts = m.options("2025-03-31", &["trials"]);
            ropts.thresholds.expiring_days = days;
            let tables = report::tables(&ropts).expect("trials");
            let trials = tables.get(trials::NAME).expect("kept").whole();
            let status = txt(&trials.expect("read back"), 0, "status");
            assert_eq!(
                status.as_deref() == Some("expiring"),
                expiring,
                "{days} days"
            );
            let mut opts = AlertOptions::new(&m.path, day);
            opts.dry_run = true;
            opts.thresholds.expiring_days = days;
            let events = evaluate(&opts, None).expect("evaluation").events;
            let fired = events.iter().any(|e| e.kind == "trial.expiring");
            assert_eq!(fired, expiring, "{days} days: {events:?}");
        }
    }
}
