//! `orgledger daemon`: resolve schedules and options, run until SIGINT/SIGTERM.

use crate::cli::Exit;
use crate::cli::args::{DaemonArgs, ReportArgs};
use crate::cli::settings::Settings;
use crate::cli::{alerts_cmd, report_cmd, sync_cmd};
use crate::report::Format;
use crate::schedule::{cron, daemon};
use crate::shutdown::Shutdown;
use anyhow::{Result, anyhow};

/// Default sync schedule: 05:00 UTC daily.
pub const DEFAULT_SYNC_CRON: &str = "0 0 5 * * *";
/// Default report schedule: 05:30 UTC daily.
pub const DEFAULT_REPORT_CRON: &str = "0 30 5 * * *";

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
    let sync_cron = cron::normalize(&sync_cron, "sync").map_err(|e| anyhow!(e))?;
    let report_cron = cron::normalize(&report_cron, "report").map_err(|e| anyhow!(e))?;
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
    // Checked (secret file included) at start, so a mistake stops the daemon now
    // rather than failing every night.
    let alerts = match &settings.config.alerts {
        Some(_) => Some(alerts_cmd::options(settings, &Default::default())?),
        None => None,
    };
    let cfg = daemon::DaemonConfig {
        sync_cron,
        report_cron,
        client,
        sync,
        report,
        retention_days: settings.config.report.retention_days,
        alerts,
    };
    // The daemon's normal end is a signal, so it exits 0 on one.
    daemon::run(cfg, Shutdown::on_signals()?).await?;
    Ok(Exit::Ok)
}
