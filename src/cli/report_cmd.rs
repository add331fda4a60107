//! `orgledger report`: build reports from the mirror (offline).

use crate::cli::args::{ReportArgs, ReportFormat};
use crate::cli::settings::Settings;
use crate::cli::{Exit, UsageError};
use crate::email::subscription::Outcome;
use crate::email::{self, Mailer, RunView, Subscription};
use crate::report::{self, Format, ReportOptions};
use anyhow::Result;

/// Default output root.
pub const DEFAULT_OUT: &str = "reports";

/// Maps CLI formats to report formats.
pub fn formats(
    chosen: &[ReportFormat],
    config: Option<&Vec<String>>,
    default: &[Format],
) -> Result<Vec<Format>> {
    if !chosen.is_empty() {
        return Ok(chosen
            .iter()
            .map(|f| match f {
                ReportFormat::Csv => Format::Csv,
                ReportFormat::Json => Format::Json,
                ReportFormat::Html => Format::Html,
                ReportFormat::Parquet => Format::Parquet,
                ReportFormat::Xlsx => Format::Xlsx,
            })
            .collect());
    }
    match config {
        Some(names) => names
            .iter()
            .map(|n| {
                n.parse::<Format>()
                    .map_err(|e| anyhow::anyhow!("config [report] formats: {e}"))
            })
            .collect(),
        None => Ok(default.to_vec()),
    }
}

/// Report options from flags and config.
pub fn options(settings: &Settings, args: &ReportArgs) -> Result<ReportOptions> {
    let cfg = &settings.config.report;
    let (out_root, store) =
        crate::cli::dest::resolve(args.out.as_ref(), cfg.out.as_ref(), DEFAULT_OUT)?;
    Ok(ReportOptions {
        db: settings.db.clone(),
        names: args.names.clone(),
        as_of: args
            .as_of
            .unwrap_or_else(|| chrono::Utc::now().date_naive()),
        formats: formats(
            &args.format,
            cfg.formats.as_ref(),
            &[Format::Csv, Format::Json],
        )?,
        out_root,
        store,
        memory_per_table: memory_per_table()?,
        queries_dir: args.queries.clone().or_else(|| cfg.queries.clone()),
        redact_pii: args.redact_pii || cfg.redact_pii.unwrap_or(false),
        thresholds: settings.thresholds()?,
        file_mode: settings.file_mode(args.file_mode),
    })
}

/// `ORGLEDGER_MEMORY_PER_TABLE`: the bytes a table the run keeps for its later
/// steps may take in memory before it waits on disk (a tuning knob for small
/// hosts; docs/operations.md).
fn memory_per_table() -> Result<usize> {
    const VAR: &str = "ORGLEDGER_MEMORY_PER_TABLE";
    match std::env::var(VAR) {
        Ok(text) => text.trim().parse().map_err(|_| {
            anyhow::anyhow!("{VAR}={text:?}: expected a number of bytes, such as 8388608")
        }),
        Err(_) => Ok(crate::report::kept::MEMORY_PER_TABLE),
    }
}

/// Runs the command: the reports, then with `--send` the subscription's messages.
pub async fn run(settings: &Settings, args: &ReportArgs) -> Result<Exit> {
    let mut opts = options(settings, args)?;
    let send = match &args.send {
        Some(name) => Some(prepare_send(settings, name, &mut opts)?),
        None => None,
    };
    let view = tokio::task::spawn_blocking(move || -> Result<RunView> {
        let outcome = crate::render::run(&opts).map_err(suggest_a_name)?;
        print_outcome(&outcome)?;
        Ok(RunView::of(&outcome))
    })
    .await??;
    let Some((sub, mailer)) = send else {
        return Ok(Exit::Ok);
    };
    let base_url = settings.config.report.base_url.as_deref();
    let report = email::subscription::send(&settings.db, &view, &sub, &mailer, base_url).await?;
    let mut all_sent = true;
    for (to, outcome) in &report.recipients {
        let line = match outcome {
            Outcome::AlreadySent(at) => format!(
                "{} as of {}: {to} was sent it at {at}; not sent again",
                sub.name, view.as_of
            ),
            Outcome::AlreadyRefused(why) => {
                format!(
                    "{} as of {}: {to} was refused for good earlier ({why})",
                    sub.name, view.as_of
                )
            }
            Outcome::Tried(sent) => match &sent.failure {
                None => format!(
                    "{} as of {}: sent to {to} through {}",
                    sub.name,
                    view.as_of,
                    mailer.describe()
                ),
                Some(failure) => {
                    all_sent = false;
                    let next = if failure.is_final() {
                        "not retried"
                    } else {
                        "the next run for this date tries again"
                    };
                    format!(
                        "{} as of {}: not sent to {to}: {failure} ({next})",
                        sub.name, view.as_of
                    )
                }
            },
        };
        crate::outln!("{line}");
    }
    Ok(if all_sent { Exit::Ok } else { Exit::Failure })
}

/// The subscription `name` and the mailer for `--send`, checked before the reports
/// are built; the run writes what its attachments need.
fn prepare_send(
    settings: &Settings,
    name: &str,
    opts: &mut ReportOptions,
) -> Result<(Subscription, Mailer)> {
    let subscriptions = settings.subscriptions()?;
    let Some(sub) = subscriptions.iter().find(|s| s.name == name).cloned() else {
        let names: Vec<&str> = subscriptions.iter().map(|s| s.name.as_str()).collect();
        let known = if names.is_empty() {
            "the config file has no [[report.subscriptions]]".to_string()
        } else {
            format!("subscriptions: {}", names.join(", "))
        };
        return Err(UsageError(format!("--send {name:?}: no such subscription; {known}")).into());
    };
    check_attachable(opts, &sub)?;
    let mailer = settings.require_mailer("report --send")?;
    for format in sub.formats() {
        if !opts.formats.contains(&format) {
            opts.formats.push(format);
        }
    }
    Ok((sub, mailer))
}

/// A subscription's attachments are read from the run's folder on this machine:
/// refused when the reports go to an object store.
pub fn check_attachable(opts: &ReportOptions, sub: &Subscription) -> Result<()> {
    if opts.store.is_some() && !sub.attach.is_empty() {
        return Err(UsageError(format!(
            "subscription {:?}: its attachments are read from a local report folder, and the reports go to an \
             object store; write them to a folder, or link them with [report] base_url and no attach",
            sub.name
        ))
        .into());
    }
    Ok(())
}

/// The files written and where, as the command prints them.
fn print_outcome(outcome: &crate::render::ReportOutcome) -> Result<()> {
    // What this run cost; `orgledger bench` reads it from its report children.
    tracing::debug!(
        peak_rss_mb = crate::cli::bench_cmd::peak_rss_mb(),
        cpu_seconds = crate::cli::bench_cmd::cpu_seconds(),
        "report process resources"
    );
    // Paths under the location the user asked for (a store's files were staged).
    let shown = |path: &std::path::Path| {
        let relative = path.strip_prefix(&outcome.dir).unwrap_or(path);
        format!("{}/{}", outcome.location, relative.display())
    };
    for file in &outcome.files {
        crate::outln!("{:>18}  {}", file.holds, shown(&file.path));
    }
    if let Some(first) = outcome.pages.first() {
        let folder = first.path.parent().unwrap_or(&outcome.dir);
        let pages = format!("{} pages", outcome.pages.len());
        crate::outln!("{pages:>18}  {} (one per organization)", shown(folder));
    }
    crate::outln!(
        "reports as of {} (sync run {}) in {}",
        outcome.as_of,
        outcome
            .run_id
            .map_or("none".to_string(), |id| id.to_string()),
        outcome.location
    );
    if let Some(published) = &outcome.published {
        crate::outln!("{published}");
    }
    Ok(())
}

/// An unknown report name, with the valid one it most likely meant.
fn suggest_a_name(e: report::ReportError) -> anyhow::Error {
    match e {
        report::ReportError::UnknownReport { name, valid } => {
            match crate::cli::suggest::closest(&name, valid.split(", ")) {
                Some(meant) => crate::cli::UsageError(format!(
                    "unknown report {name:?}; did you mean {meant:?}? valid reports: {valid}"
                ))
                .into(),
                None => report::ReportError::UnknownReport { name, valid }.into(),
            }
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_formats_take_every_format_and_name_a_wrong_one() {
        let names = ["csv", "HTML", "xlsx", "parquet", "json"]
            .map(str::to_string)
            .to_vec();
        assert_eq!(
            formats(&[], Some(&names), &[]).expect("valid"),
            [
                Format::Csv,
                Format::Html,
                Format::Xlsx,
                Format::Parquet,
                Format::Json
            ]
        );
        let err = formats(&[], Some(&vec!["xls".to_string()]), &[]).expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "config [report] formats: unknown format \"xls\"; valid formats: csv, json, html, parquet, xlsx"
        );
        assert_eq!(
            formats(&[ReportFormat::Xlsx], Some(&names), &[]).expect("flag wins"),
            [Format::Xlsx]
        );
    }
}
