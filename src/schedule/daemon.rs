//! The daemon: two cron jobs (sync, report) on tokio-cron-scheduler.
//!
//! Rules users rely on:
//! - never two syncs at once: a sync tick that finds one running is skipped and logged
//!   (and so is a report tick that finds a report running);
//! - a job that falls due while the other runs waits for it (they queue on the same
//!   lock; a report after a short grace so a sync started in the same second gets the
//!   lock first), and ticks that fall due meanwhile run it once, not once per tick:
//!   the log says how many ticks it skipped (`ticks.rs`);
//! - a failed run is logged with its reason and the next tick tries again: the
//!   daemon never dies of a sync or report error;
//! - SIGINT/SIGTERM: no new work; a running sync stops requesting, writes what it
//!   has, marks its run `aborted`, and the process exits within 10 seconds.
//!
//! With `listen`, `GET /metrics` and `GET /healthz` are served (`endpoint.rs`); with
//! `export`, the mirror is exported to Parquet after each sync that stored data; with
//! `backup`, it is backed up after each such sync (`backups.rs`). With `email`, the
//! report subscriptions go out after each report job (or on their own schedule, a
//! report run of their own taking its turn like the report job) and the alerts'
//! e-mail digests after each evaluation.

use crate::api::Client;
use crate::email::{self, Mailer, RunView, Subscription};
use crate::report::ReportOptions;
use crate::schedule::health::Health;
use crate::schedule::ticks::{Tick, Ticks, Turn};
use crate::schedule::{cron, endpoint, metrics, retention};
use crate::shutdown::Shutdown;
use crate::sync::{self, SyncOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_cron_scheduler::{Job, JobScheduler};

/// Everything the daemon runs with.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Six-field cron expression of the sync job.
    pub sync_cron: String,
    /// Six-field cron expression of the report job.
    pub report_cron: String,
    /// The API client (shared by every sync run).
    pub client: Client,
    /// Sync options.
    pub sync: SyncOptions,
    /// Report options; `as_of` is replaced by today (UTC) at each run.
    pub report: ReportOptions,
    /// Keep report folders of this many days (None: keep all).
    pub retention_days: Option<u32>,
    /// Serve `/metrics` and `/healthz` on this address (None: off).
    pub listen: Option<std::net::SocketAddr>,
    /// `/healthz` fails after this many sync periods without a sync that stored data.
    pub stale_after_periods: u32,
    /// Export the mirror after each sync that stored data (None: off).
    pub export: Option<crate::export::ExportOptions>,
    /// Back the mirror up after each sync that stored data (None: off).
    pub backup: Option<crate::schedule::backups::BackupOptions>,
    /// Alerts evaluated after each report job (`[alerts]` configured); `as_of` is
    /// replaced by the report's.
    pub alerts: Option<crate::alerts::AlertOptions>,
    /// Sync once at start, before the first tick.
    pub sync_at_start: bool,
    /// E-mail (`[email]` configured).
    pub email: Option<EmailJobs>,
}

/// What the daemon e-mails.
#[derive(Debug, Clone)]
pub struct EmailJobs {
    pub mailer: Mailer,
    /// Report subscriptions; those without a cron go out after each report job.
    pub subscriptions: Vec<Subscription>,
    /// `report.base_url`.
    pub base_url: Option<String>,
}

/// Daemon failures (only at start-up; runs never stop the daemon). The cause is
/// said in the message, so it is not a `source()` (the crate's rule, `crate::cause`).
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The scheduler refused a job or could not start.
    #[error("the scheduler refused a job or could not start: {0}")]
    Scheduler(tokio_cron_scheduler::JobSchedulerError),
    /// The metrics recorder could not be installed.
    #[error(transparent)]
    Metrics(#[from] crate::schedule::metrics::MetricsError),
    /// The `/metrics` address could not be bound.
    #[error(transparent)]
    Listen(#[from] crate::schedule::endpoint::ListenError),
}

impl From<tokio_cron_scheduler::JobSchedulerError> for DaemonError {
    fn from(e: tokio_cron_scheduler::JobSchedulerError) -> Self {
        DaemonError::Scheduler(e)
    }
}

/// Longest wait for a running job after a stop signal.
const STOP_GRACE: Duration = Duration::from_secs(9);

struct Shared {
    cfg: DaemonConfig,
    /// Held by a running sync, and by a report while it reads.
    busy: Mutex<()>,
    sync_ticks: Ticks,
    report_ticks: Ticks,
    /// One per subscription (those with a cron of their own use theirs).
    subscription_ticks: Vec<Ticks>,
    stop: Shutdown,
    /// Set when `/healthz` is served.
    health: Option<Arc<Health>>,
}

/// Runs until `stop` is broadcast. Returns once the current job (if any) has
/// finished or the grace period ran out.
pub async fn run(cfg: DaemonConfig, stop: Shutdown) -> Result<(), DaemonError> {
    let health = match cfg.listen {
        Some(addr) => Some(start_endpoint(&cfg, addr, stop.clone()).await?),
        None => None,
    };
    let subscriptions = cfg.email.as_ref().map_or(0, |e| e.subscriptions.len());
    let shared = Arc::new(Shared {
        busy: Mutex::new(()),
        sync_ticks: Ticks::default(),
        report_ticks: Ticks::default(),
        subscription_ticks: (0..subscriptions).map(|_| Ticks::default()).collect(),
        stop: stop.clone(),
        cfg,
        health,
    });
    let mut scheduler = JobScheduler::new().await?;
    let s = shared.clone();
    scheduler
        .add(Job::new_async(
            shared.cfg.sync_cron.as_str(),
            move |_, _| {
                let s = s.clone();
                Box::pin(async move { sync_job(&s).await })
            },
        )?)
        .await?;
    let s = shared.clone();
    scheduler
        .add(Job::new_async(
            shared.cfg.report_cron.as_str(),
            move |_, _| {
                let s = s.clone();
                Box::pin(async move {
                    if report_tick(&s).await {
                        tracing::info!(next_report = next(&s.cfg.report_cron), "report job done");
                    }
                })
            },
        )?)
        .await?;
    for (index, cron) in own_schedules(&shared.cfg) {
        let s = shared.clone();
        scheduler
            .add(Job::new_async(cron.as_str(), move |_, _| {
                let s = s.clone();
                Box::pin(async move {
                    subscription_tick(&s, index).await;
                })
            })?)
            .await?;
    }
    scheduler.start().await?;
    tracing::info!(
        sync = %shared.cfg.sync_cron,
        report = %shared.cfg.report_cron,
        db = %shared.cfg.sync.db.display(),
        next_sync = next(&shared.cfg.sync_cron),
        next_report = next(&shared.cfg.report_cron),
        "daemon started"
    );
    if shared.cfg.sync_at_start {
        tracing::info!("syncing now, before the first tick");
        let s = shared.clone();
        tokio::spawn(async move { sync_job(&s).await });
    }
    let signal = stop.clone().recv().await;
    tracing::info!(signal = signal.name(), "stop requested: taking no new work");
    let _ = scheduler.shutdown().await;
    // Waiting for the lock = waiting for the job in progress to finish its transaction.
    match tokio::time::timeout(STOP_GRACE, shared.busy.lock()).await {
        Ok(_) => tracing::info!("daemon stopped cleanly"),
        Err(_) => tracing::warn!("a job did not finish within the grace period; exiting anyway"),
    }
    Ok(())
}

/// The subscriptions with a cron of their own: (index, six-field cron).
fn own_schedules(cfg: &DaemonConfig) -> Vec<(usize, String)> {
    let Some(email) = &cfg.email else {
        return Vec::new();
    };
    email
        .subscriptions
        .iter()
        .enumerate()
        .filter_map(|(i, sub)| sub.cron.clone().map(|c| (i, c)))
        .collect()
}

/// When a job's schedule is next due, for the log.
fn next(six: &str) -> String {
    cron::next_due(six).unwrap_or_else(|| "never".to_string())
}

/// Installs the metrics and serves `/metrics` and `/healthz` on `addr`.
async fn start_endpoint(
    cfg: &DaemonConfig,
    addr: std::net::SocketAddr,
    stop: Shutdown,
) -> Result<Arc<Health>, DaemonError> {
    let handle = metrics::install()?;
    let db = cfg.sync.db.clone();
    // Counting the mirror's rows is blocking file I/O; done before listening, so the
    // first scrape has every series.
    if let Err(e) = tokio::task::spawn_blocking(move || metrics::start_from_mirror(&db)).await {
        tracing::warn!(error = %e, "cannot read the mirror's figures for the metrics");
    }
    let period = cron::period(&cfg.sync_cron).unwrap_or(Duration::from_secs(86_400));
    let health = Arc::new(Health::new(
        cfg.sync.db.clone(),
        period,
        cfg.stale_after_periods,
    ));
    let bound = endpoint::serve(addr, handle, health.clone(), stop).await?;
    tracing::info!("serving /metrics and /healthz on http://{bound}");
    Ok(health)
}

/// A verified backup after a sync that stored data; a failure is logged and the
/// older backups stay.
async fn backup_after_sync(s: &Shared) {
    let Some(opts) = s.cfg.backup.clone() else {
        return;
    };
    let db = s.cfg.sync.db.clone();
    let done =
        tokio::task::spawn_blocking(move || crate::schedule::backups::backup_into(&db, &opts))
            .await;
    match done {
        Ok(Ok((copied, removed))) => tracing::info!(
            file = %copied.path.display(),
            rows = copied.rows,
            removed = removed.len(),
            "mirror backed up and verified"
        ),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "backup failed; older backups are kept and the next sync tries again")
        }
        Err(e) => {
            tracing::error!(error = %e, "backup task failed; older backups are kept and the next sync tries again")
        }
    }
}

/// Metrics, health, the export and the backup after a sync run.
async fn after_sync(s: &Shared, outcome: &sync::SyncOutcome) {
    use crate::mirror::runs::RunStatus;
    let stored = matches!(outcome.status, RunStatus::Succeeded | RunStatus::Partial);
    if let Some(health) = &s.health {
        if stored {
            health.synced();
        }
        let (db, run_id) = (s.cfg.sync.db.clone(), outcome.run_id);
        let errors = tokio::task::spawn_blocking(move || metrics::read_after_sync(&db, run_id))
            .await
            .unwrap_or_default();
        metrics::sync_finished(&metrics::SyncFigures {
            status: outcome.status,
            elapsed: outcome.elapsed,
            requests: outcome.totals.requests,
            bytes: outcome.totals.bytes,
            errors_by_operation: errors,
        });
    }
    if stored {
        backup_after_sync(s).await;
    }
    if let (true, Some(opts)) = (stored, s.cfg.export.clone()) {
        let done = tokio::task::spawn_blocking(move || crate::export::run(&opts)).await;
        match done {
            Ok(Ok(outcome)) => {
                metrics::export_finished(true);
                tracing::info!(to = %outcome.location, files = outcome.files.len(), rows = outcome.rows(), "mirror exported")
            }
            Ok(Err(e)) => {
                metrics::export_finished(false);
                tracing::error!(error = %e, "export failed; the next sync will try again")
            }
            Err(e) => {
                metrics::export_finished(false);
                tracing::error!(error = %e, "export task failed; the next sync will try again")
            }
        }
    }
}

/// A sync tick, then when the next one is due.
async fn sync_job(s: &Shared) {
    if sync_tick(s).await {
        tracing::info!(next_sync = next(&s.cfg.sync_cron), "sync job done");
    }
}

/// Waits for the lock on behalf of the job's tick, unless the job runs now or
/// another of its ticks waits already; `None` then, or when a stop came meanwhile.
/// Says how many ticks the run stands for.
async fn take_turn<'a>(
    s: &'a Shared,
    ticks: &'a Ticks,
    job: &'static str,
) -> Option<(Turn<'a>, tokio::sync::MutexGuard<'a, ()>)> {
    let mut turn = match ticks.fell_due() {
        Tick::Run(turn) => turn,
        Tick::Running => {
            tracing::warn!(
                job,
                "{job} tick skipped: the previous {job} is still running"
            );
            return None;
        }
        Tick::Folded => {
            tracing::debug!(job, "{job} tick folded into the one waiting for its turn");
            return None;
        }
    };
    let guard = s.busy.lock().await;
    let skipped = turn.start();
    if s.stop.is_shutdown() {
        return None;
    }
    if skipped > 0 {
        tracing::info!(
            job,
            skipped,
            "{job} job runs once for {} ticks: {skipped} fell due while another job ran",
            skipped + 1
        );
    }
    Some((turn, guard))
}

/// Runs the sync unless its tick is skipped; whether it ran.
async fn sync_tick(s: &Shared) -> bool {
    if s.stop.is_shutdown() {
        return false;
    }
    let Some((_turn, _guard)) = take_turn(s, &s.sync_ticks, "sync").await else {
        return false;
    };
    match sync::run(&s.cfg.client, &s.cfg.sync, Some(s.stop.clone())).await {
        Ok(outcome) => {
            tracing::info!(
                run = outcome.run_id,
                status = outcome.status.as_str(),
                "{}",
                outcome.summary_line()
            );
            // The message names the operation and the URL already.
            for err in outcome.errors.iter().take(10) {
                tracing::warn!(
                    entity = err.entity.as_deref().unwrap_or("-"),
                    "{}",
                    err.message
                );
            }
            if outcome.status == crate::mirror::runs::RunStatus::Failed {
                tracing::error!(
                    run = outcome.run_id,
                    "sync failed; the next tick will try again"
                );
            }
            after_sync(s, &outcome).await;
        }
        Err(e) => {
            metrics::sync_not_run();
            tracing::error!(error = %e, "sync failed; the next tick will try again")
        }
    }
    true
}

/// Runs the report job unless its tick is skipped; whether it ran.
async fn report_tick(s: &Shared) -> bool {
    // A sync due in the same second starts first and the report queues behind it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    if s.stop.is_shutdown() {
        return false;
    }
    let Some((_turn, _guard)) = take_turn(s, &s.report_ticks, "report").await else {
        return false;
    };
    let mut opts = s.cfg.report.clone();
    opts.as_of = chrono::Utc::now().date_naive();
    let out: PathBuf = opts.out_root.clone();
    let retention_days = s.cfg.retention_days;
    let started = std::time::Instant::now();
    let result = tokio::task::spawn_blocking(move || {
        let outcome = crate::render::run(&opts);
        // Retention removes local day folders; a store's are left to its lifecycle rules.
        let local = opts.store.is_none();
        if let (Ok(_), Some(keep), true) = (&outcome, retention_days, local) {
            match retention::prune(&out, opts.as_of, keep) {
                Ok(removed) if !removed.is_empty() => {
                    tracing::info!(?removed, "old report folders deleted")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot prune old report folders"),
            }
        }
        outcome
    })
    .await;
    metrics::report_finished(matches!(result, Ok(Ok(_))), started.elapsed());
    match result {
        Ok(Ok(outcome)) => {
            tracing::info!(to = %outcome.location, files = outcome.files.len(), "reports written");
            if let Some(jobs) = &s.cfg.email {
                let view = RunView::of(&outcome);
                for sub in jobs.subscriptions.iter().filter(|sub| sub.cron.is_none()) {
                    send_subscription(&s.cfg, jobs, &view, sub).await;
                }
            }
            if let Some(alerts) = &s.cfg.alerts {
                send_alerts(&s.cfg, alerts, outcome).await;
            }
        }
        Ok(Err(e)) => tracing::error!(error = %e, "report failed; the next tick will try again"),
        Err(e) => tracing::error!(error = %e, "report task failed; the next tick will try again"),
    }
    true
}

/// Alerts from the tables the report job just built (nothing is computed twice),
/// then their e-mail digests.
async fn send_alerts(
    cfg: &DaemonConfig,
    opts: &crate::alerts::AlertOptions,
    outcome: crate::render::ReportOutcome,
) {
    let mut opts = opts.clone();
    opts.as_of = outcome.as_of;
    match crate::alerts::run(&opts, Some(outcome.tables)).await {
        Ok(done) => {
            let mut outbox = done.outbox;
            if let (Some(route), Some(jobs), crate::alerts::Mode::Advanced) =
                (&opts.mail, &cfg.email, done.mode)
            {
                mail_digests(&opts.db, &jobs.mailer, route.as_ref()).await;
                outbox = outbox_counts(&opts.db).await.or(outbox);
            }
            let outbox = outbox
                .inspect(metrics::alert_outbox_counts)
                .unwrap_or_default();
            tracing::info!(
                new = done.events.len(),
                delivered = outbox.delivered,
                pending = outbox.pending,
                failed = outbox.failed,
                "alerts evaluated"
            )
        }
        Err(e) => tracing::error!(error = %e, "alerts failed; the next report tick will try again"),
    }
}

/// The alerts' pending e-mails, a digest per recipient.
async fn mail_digests(db: &std::path::Path, mailer: &Mailer, route: &dyn crate::alerts::MailRoute) {
    match email::digest::deliver(db, mailer, route).await {
        Ok(tally) => metrics::emails(metrics::EmailKind::Alerts, &tally),
        Err(e) => {
            tracing::error!(error = %e, "alert e-mails failed; they stay pending for the next evaluation")
        }
    }
}

/// The outbox's deliveries by state (None when the mirror cannot be read: the
/// gauges keep what they had).
async fn outbox_counts(db: &std::path::Path) -> Option<crate::alerts::Counts> {
    let db = db.to_path_buf();
    let read = move || {
        let conn = crate::mirror::open_ro(&db).ok()?;
        crate::alerts::outbox::counts(&conn).ok()
    };
    tokio::task::spawn_blocking(read).await.ok().flatten()
}

/// One subscription's messages of a report run; a failure is logged and recorded,
/// and the next run of the same date tries what is still pending.
async fn send_subscription(
    cfg: &DaemonConfig,
    jobs: &EmailJobs,
    view: &RunView,
    sub: &Subscription,
) {
    let base_url = jobs.base_url.as_deref();
    match email::subscription::send(&cfg.sync.db, view, sub, &jobs.mailer, base_url).await {
        Ok(report) => metrics::emails(metrics::EmailKind::Report, &report.tally()),
        Err(e) => tracing::error!(
            subscription = sub.name.as_str(),
            error = %e,
            "report subscription failed; the next run of the same date tries again"
        ),
    }
}

/// A subscription's own tick: a report run (the daemon's report options, as of
/// today, with what its attachments need), then its messages. It takes its turn
/// like the report job.
async fn subscription_tick(s: &Shared, index: usize) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (Some(jobs), Some(ticks)) = (&s.cfg.email, s.subscription_ticks.get(index)) else {
        return;
    };
    let Some(sub) = jobs.subscriptions.get(index) else {
        return;
    };
    if s.stop.is_shutdown() {
        return;
    }
    let Some((_turn, _guard)) = take_turn(s, ticks, "subscription").await else {
        return;
    };
    let mut opts = s.cfg.report.clone();
    opts.as_of = chrono::Utc::now().date_naive();
    for format in sub.formats() {
        if !opts.formats.contains(&format) {
            opts.formats.push(format);
        }
    }
    let started = std::time::Instant::now();
    let built = tokio::task::spawn_blocking(move || {
        crate::render::run(&opts).map(|outcome| RunView::of(&outcome))
    })
    .await;
    metrics::report_finished(matches!(built, Ok(Ok(_))), started.elapsed());
    match built {
        Ok(Ok(view)) => send_subscription(&s.cfg, jobs, &view, sub).await,
        Ok(Err(e)) => {
            tracing::error!(subscription = sub.name.as_str(), error = %e, "the subscription's report failed; its next tick tries again")
        }
        Err(e) => {
            tracing::error!(subscription = sub.name.as_str(), error = %e, "the subscription's report task failed; its next tick tries again")
        }
    }
}
