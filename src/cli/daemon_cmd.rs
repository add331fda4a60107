//! `orgledger daemon`: resolve schedules and options, run until SIGINT/SIGTERM.

use crate::cli::Exit;
use crate::cli::UsageError;
use crate::cli::args::{DaemonArgs, ExportArgs, ReportArgs};
use crate::cli::settings::Settings;
use crate::cli::{alerts_cmd, export_cmd, report_cmd, sync_cmd};
use crate::report::Format;
use crate::schedule::{cron, daemon};
use crate::shutdown::Shutdown;
use anyhow::Result;

/// Default sync schedule: 05:00 UTC daily.
pub const DEFAULT_SYNC_CRON: &str = "0 0 5 * * *";
/// Default report schedule: 05:30 UTC daily.
pub const DEFAULT_REPORT_CRON: &str = "0 30 5 * * *";

/// `/healthz` fails after this many sync periods without a sync that stored data.
pub const DEFAULT_STALE_AFTER_PERIODS: u32 = 3;

/// `--listen`, else `[daemon] listen`; None when neither is given.
fn listen_address(settings: &Settings, args: &DaemonArgs) -> Result<Option<std::net::SocketAddr>> {
    if let Some(addr) = args.listen {
        return Ok(Some(addr));
    }
    match &settings.config.daemon.listen {
        Some(text) => text.parse().map(Some).map_err(|_| {
            UsageError(format!(
                "config [daemon] listen: {text:?} is not an address; write it as IP:PORT, such as \"127.0.0.1:9464\""
            ))
            .into()
        }),
        None => Ok(None),
    }
}

/// `[backup]` with `after_sync = true`; its `dir` is then required.
fn backup_options(settings: &Settings) -> Result<Option<crate::schedule::backups::BackupOptions>> {
    let section = &settings.config.backup;
    if !section.after_sync.unwrap_or(false) {
        return Ok(None);
    }
    let dir = section.dir.clone().ok_or_else(|| {
        UsageError(
            "config [backup] after_sync = true needs dir = \"FOLDER\" for the backups".into(),
        )
    })?;
    Ok(Some(crate::schedule::backups::BackupOptions {
        dir,
        keep: section.keep,
    }))
}

/// The report subscriptions and the mailer, checked at start (password file and
/// schedules included); the report job writes what the subscriptions it sends
/// after attach.
fn email_jobs(
    settings: &Settings,
    report: &mut crate::report::ReportOptions,
) -> Result<Option<daemon::EmailJobs>> {
    let mut subscriptions = settings.subscriptions()?;
    let mailer = match settings.mailer()? {
        Some(mailer) => mailer,
        None if subscriptions.is_empty() => return Ok(None),
        None => {
            return Err(UsageError(
                "[[report.subscriptions]] need the config file's [email] section: smtp_url, from, username and password_file (docs/email.md)".into(),
            )
            .into());
        }
    };
    for sub in &mut subscriptions {
        report_cmd::check_attachable(report, sub)?;
        match &sub.cron {
            Some(cron) => {
                let what = format!("subscription {:?}", sub.name);
                sub.cron = Some(cron::normalize(cron, &what).map_err(UsageError)?);
            }
            None => {
                for format in sub.formats() {
                    if !report.formats.contains(&format) {
                        report.formats.push(format);
                    }
                }
            }
        }
    }
    Ok(Some(daemon::EmailJobs {
        mailer,
        subscriptions,
        base_url: settings.config.report.base_url.clone(),
    }))
}

/// Runs the command.
pub async fn run(settings: &Settings, args: &DaemonArgs) -> Result<Exit> {
    let schedule = &settings.config.schedule;
    let sync_cron = args
        .sync_cron
        .clone()
        .or_else(|| schedule.sync.clone())
        .unwrap_or_else(|| DEFAULT_SYNC_CRON.into());
    let report_cron = args
        .report_cron
        .clone()
        .or_else(|| schedule.report.clone())
        .unwrap_or_else(|| DEFAULT_REPORT_CRON.into());
    let sync_cron = cron::normalize(&sync_cron, "sync").map_err(UsageError)?;
    let report_cron = cron::normalize(&report_cron, "report").map_err(UsageError)?;
    let (client, mut sync) = sync_cmd::prepare(settings, &args.sync)?;
    sync.progress = false;
    let report_args = ReportArgs {
        out: args.out.clone(),
        ..ReportArgs::default()
    };
    let mut report = report_cmd::options(settings, &report_args)?;
    report.formats = report_cmd::formats(
        &args.format,
        settings.config.report.formats.as_ref(),
        &[Format::Csv, Format::Json, Format::Html],
    )?;
    let listen = listen_address(settings, args)?;
    let export = if settings.config.export.after_sync.unwrap_or(false) {
        Some(export_cmd::options(settings, &ExportArgs::default())?)
    } else {
        None
    };
    let backup = backup_options(settings)?;
    // Checked (secret file included) at start, so a mistake stops the daemon now
    // rather than failing every night.
    let alerts = match &settings.config.alerts {
        Some(_) => Some(alerts_cmd::options(settings, &Default::default())?),
        None => None,
    };
    let email = email_jobs(settings, &mut report)?;
    let cfg = daemon::DaemonConfig {
        sync_cron,
        report_cron,
        client,
        sync,
        report,
        retention_days: settings.config.report.retention_days,
        listen,
        stale_after_periods: settings
            .config
            .daemon
            .stale_after_periods
            .unwrap_or(DEFAULT_STALE_AFTER_PERIODS),
        export,
        backup,
        alerts,
        // A new mirror would otherwise wait for the first tick (05:00 UTC by
        // default) with nothing to report or serve.
        sync_at_start: args.sync_now
            || schedule
                .sync_at_start
                .unwrap_or_else(|| crate::schedule::health::last_success(&settings.db).is_none()),
        email,
    };
    // The daemon's normal end is a signal, so it exits 0 on one.
    daemon::run(cfg, Shutdown::on_signals()?).await?;
    Ok(Exit::Ok)
}
