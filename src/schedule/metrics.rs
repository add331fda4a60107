//! The daemon's metrics (`GET /metrics`, Prometheus text format).
//!
//! Recorded with the `metrics` macros into the process-wide recorder that
//! [`install`] sets up; `metrics-exporter-prometheus` renders them. Without
//! `--listen` no recorder is installed and every call here costs nothing.
//!
//! Every series is there from the first scrape: [`install`] registers each counter
//! and histogram at 0 (with every label value it can take) and the gauges at what
//! the mirror says at the start, so `rate()` has a starting point and `absent()`
//! alerts do not fire while a first sync runs. A gauge whose value cannot be known
//! (the mirror cannot be read at the start) is left out until a sync sets it:
//! absent means unknown.

use crate::api::Operation;
use crate::mirror::runs::RunStatus;
use crate::mirror::spec::TABLES;
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::path::Path;
use std::time::{Duration, SystemTime};

const BUILD_INFO: &str = "orgledger_build_info";
const UP: &str = "orgledger_up";
const SYNC_RUNS: &str = "orgledger_sync_runs_total";
const SYNC_DURATION: &str = "orgledger_sync_duration_seconds";
const SYNC_REQUESTS: &str = "orgledger_sync_requests_total";
const SYNC_BYTES: &str = "orgledger_sync_bytes_total";
const SYNC_ERRORS: &str = "orgledger_sync_errors_total";
const LAST_SUCCESS: &str = "orgledger_last_sync_success_timestamp_seconds";
const MIRROR_ROWS: &str = "orgledger_mirror_rows";
const REPORT_RUNS: &str = "orgledger_report_runs_total";
const REPORT_DURATION: &str = "orgledger_report_duration_seconds";
const EXPORT_RUNS: &str = "orgledger_export_runs_total";
/// Deliveries of the alerts outbox (one per event and webhook) per state (pending,
/// delivered, failed).
const ALERT_OUTBOX: &str = "orgledger_alert_outbox_events";
/// Messages tried by the mail server's answer: alert digests and report messages.
const EMAILS: &str = "orgledger_email_messages_total";

/// The `status` of a sync that could not run at all (beside the runs' own statuses).
const NOT_RUN: &str = "error";
/// The `operation` of failures of a whole run rather than of one request (an
/// outage given up on, a fetch task that failed), as the sync records them.
const WHOLE_RUN: &str = "sync";
/// The outcomes of report and export runs.
const OUTCOMES: [&str; 2] = ["ok", "failed"];
/// The states of the alerts outbox.
const OUTBOX_STATES: [&str; 3] = ["pending", "delivered", "failed"];
/// What an e-mail tried became: taken, still to send, refused for good (a 5xx).
const EMAIL_OUTCOMES: [&str; 3] = ["sent", "pending", "refused"];

/// What kind of message an e-mail was.
#[derive(Debug, Clone, Copy)]
pub enum EmailKind {
    /// An alert digest.
    Alerts,
    /// A report subscription's message.
    Report,
}

impl EmailKind {
    const ALL: [EmailKind; 2] = [EmailKind::Alerts, EmailKind::Report];

    fn as_str(self) -> &'static str {
        match self {
            EmailKind::Alerts => "alerts",
            EmailKind::Report => "report",
        }
    }
}

/// A sync takes seconds to many minutes.
const SYNC_BUCKETS: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];
/// Reports take well under a minute.
const REPORT_BUCKETS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0];

/// Why the metrics could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the metrics: {0}")]
pub struct MetricsError(String);

/// Installs the process-wide recorder; the handle renders what was recorded.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    let err = |e: metrics_exporter_prometheus::BuildError| MetricsError(e.to_string());
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(SYNC_DURATION.into()), SYNC_BUCKETS)
        .map_err(err)?
        .set_buckets_for_metric(Matcher::Full(REPORT_DURATION.into()), REPORT_BUCKETS)
        .map_err(err)?
        .install_recorder()
        .map_err(err)?;
    describe();
    register_at_zero();
    Ok(handle)
}

/// Every counter and histogram, with each label value it can take, at 0; the
/// build and `up` at 1.
fn register_at_zero() {
    gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    gauge!(UP).set(1.0);
    let statuses = RunStatus::ALL.map(RunStatus::as_str);
    for status in statuses.into_iter().chain([NOT_RUN]) {
        counter!(SYNC_RUNS, "status" => status).absolute(0);
    }
    // Creating a histogram renders it empty: every bucket, its sum and count at 0.
    let _ = histogram!(SYNC_DURATION);
    counter!(SYNC_REQUESTS).absolute(0);
    counter!(SYNC_BYTES).absolute(0);
    // A sync never creates projects.
    let fetched = Operation::ALL
        .into_iter()
        .filter(|op| *op != Operation::CreateProject)
        .map(Operation::name);
    for operation in fetched.chain([WHOLE_RUN]) {
        counter!(SYNC_ERRORS, "operation" => operation).absolute(0);
    }
    for outcome in OUTCOMES {
        counter!(REPORT_RUNS, "status" => outcome).absolute(0);
        counter!(EXPORT_RUNS, "status" => outcome).absolute(0);
    }
    let _ = histogram!(REPORT_DURATION);
    for kind in EmailKind::ALL {
        for outcome in EMAIL_OUTCOMES {
            counter!(EMAILS, "kind" => kind.as_str(), "status" => outcome).absolute(0);
        }
    }
}

/// The gauges at what the mirror says at the daemon's start: the time of its last
/// sync that stored data (0 when it has none), its rows per table and its alerts
/// outbox (all 0 for a mirror not created yet). A mirror that cannot be read leaves
/// them out (unknown) until a sync sets them; the log says why.
pub fn start_from_mirror(db: &Path) {
    let read = || -> Result<(), String> {
        let conn = match crate::mirror::open_ro(db) {
            Ok(conn) => conn,
            Err(crate::mirror::MirrorError::Missing(_)) => {
                empty_mirror();
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        };
        mirror_rows(&conn).map_err(|e| crate::cause::sqlite(&e))?;
        let outbox = crate::alerts::outbox::counts(&conn).map_err(|e| crate::cause::sqlite(&e))?;
        alert_outbox_counts(&outbox);
        last_success(crate::schedule::health::last_success(db).unwrap_or(SystemTime::UNIX_EPOCH));
        Ok(())
    };
    if let Err(e) = read() {
        tracing::warn!(error = %e, "cannot read the mirror's figures for the metrics: they are left out until a sync");
    }
}

/// The gauges of a mirror that does not exist yet: no rows, no sync, no alerts.
fn empty_mirror() {
    for table in TABLES {
        gauge!(MIRROR_ROWS, "table" => table.name).set(0.0);
    }
    alert_outbox_counts(&crate::alerts::Counts::default());
    last_success(SystemTime::UNIX_EPOCH);
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(SYNC_RUNS, "Sync runs by final status");
    describe_histogram!(SYNC_DURATION, Unit::Seconds, "Wall time of a sync run");
    describe_counter!(SYNC_REQUESTS, "HTTP requests made by sync runs");
    describe_counter!(
        SYNC_BYTES,
        Unit::Bytes,
        "Response bytes received by sync runs"
    );
    describe_counter!(SYNC_ERRORS, "Failed fetches by API operation");
    describe_gauge!(
        LAST_SUCCESS,
        Unit::Seconds,
        "Unix time the last sync that stored data (succeeded or partial) finished"
    );
    describe_gauge!(MIRROR_ROWS, "Current rows per mirror table");
    describe_counter!(REPORT_RUNS, "Report runs by outcome (ok, failed)");
    describe_histogram!(REPORT_DURATION, Unit::Seconds, "Wall time of a report run");
    describe_counter!(
        EXPORT_RUNS,
        "Parquet exports after a sync by outcome (ok, failed)"
    );
    describe_gauge!(
        ALERT_OUTBOX,
        "Alert deliveries (one per event and webhook) in the outbox by state"
    );
    describe_counter!(
        EMAILS,
        "E-mails tried by kind (alerts, report) and outcome (sent, pending, refused)"
    );
    describe_gauge!(BUILD_INFO, "Always 1; the label says the version running");
    describe_gauge!(UP, "Always 1 while the daemon serves its metrics");
}

/// What one finished sync run did.
pub struct SyncFigures {
    /// Final status.
    pub status: RunStatus,
    /// Wall time.
    pub elapsed: Duration,
    /// Requests made.
    pub requests: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Failures by operation (from `sync_errors`).
    pub errors_by_operation: Vec<(String, u64)>,
}

/// Records a finished sync run.
pub fn sync_finished(run: &SyncFigures) {
    counter!(SYNC_RUNS, "status" => run.status.as_str()).increment(1);
    histogram!(SYNC_DURATION).record(run.elapsed.as_secs_f64());
    counter!(SYNC_REQUESTS).increment(run.requests);
    counter!(SYNC_BYTES).increment(run.bytes);
    for (operation, n) in &run.errors_by_operation {
        counter!(SYNC_ERRORS, "operation" => operation.clone()).increment(*n);
    }
    if matches!(run.status, RunStatus::Succeeded | RunStatus::Partial) {
        last_success(SystemTime::now());
    }
}

/// A sync that could not run at all (the mirror could not be opened or locked).
pub fn sync_not_run() {
    counter!(SYNC_RUNS, "status" => NOT_RUN).increment(1);
}

/// Sets the time of the last sync that stored data (the epoch: none yet).
pub fn last_success(at: SystemTime) {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    gauge!(LAST_SUCCESS).set(secs);
}

/// Records a report run.
pub fn report_finished(ok: bool, elapsed: Duration) {
    counter!(REPORT_RUNS, "status" => outcome(ok)).increment(1);
    histogram!(REPORT_DURATION).record(elapsed.as_secs_f64());
}

/// Records an export after a sync.
pub fn export_finished(ok: bool) {
    counter!(EXPORT_RUNS, "status" => outcome(ok)).increment(1);
}

fn outcome(ok: bool) -> &'static str {
    OUTCOMES[usize::from(!ok)]
}

/// The alerts outbox: the number of deliveries in each state, set at the start and
/// after each alert evaluation of the daemon that delivered to a webhook.
pub fn alert_outbox_counts(counts: &crate::alerts::Counts) {
    let values = [counts.pending, counts.delivered, counts.failed];
    for (state, n) in OUTBOX_STATES.into_iter().zip(values) {
        gauge!(ALERT_OUTBOX, "state" => state).set(n as f64);
    }
}

/// Records the e-mails a run tried.
pub fn emails(kind: EmailKind, tally: &crate::email::Tally) {
    let values = [tally.sent, tally.pending, tally.failed];
    for (outcome, n) in EMAIL_OUTCOMES.into_iter().zip(values) {
        counter!(EMAILS, "kind" => kind.as_str(), "status" => outcome).increment(n);
    }
}

/// Sets the current rows of every mirror table (removed rows not counted).
pub fn mirror_rows(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    for table in TABLES {
        let sql = format!(
            "SELECT COUNT(*) FROM main.{} WHERE removed_at IS NULL",
            table.name
        );
        let n: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
        gauge!(MIRROR_ROWS, "table" => table.name).set(n as f64);
    }
    Ok(())
}

/// Failures of one run by operation.
pub fn errors_by_operation(
    conn: &rusqlite::Connection,
    run_id: i64,
) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare(
        "SELECT operation, COUNT(*) FROM sync_errors WHERE run_id = ?1 GROUP BY operation",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })?;
    rows.collect()
}

/// What the mirror says after a sync: failures by operation and rows per table,
/// read on a connection of its own. A mirror that cannot be read leaves the
/// figures out (the log says why) rather than failing the sync's bookkeeping.
pub fn read_after_sync(db: &Path, run_id: i64) -> Vec<(String, u64)> {
    let read = || -> Result<Vec<(String, u64)>, String> {
        let conn = crate::mirror::open_ro(db).map_err(|e| e.to_string())?;
        mirror_rows(&conn).map_err(|e| crate::cause::sqlite(&e))?;
        errors_by_operation(&conn, run_id).map_err(|e| crate::cause::sqlite(&e))
    };
    read().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the mirror's figures for the metrics");
        Vec::new()
    })
}
