//! `orgledger report`: build reports from the mirror (offline).

use crate::cli::Exit;
use crate::cli::args::{ReportArgs, ReportFormat};
use crate::cli::settings::Settings;
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

/// Runs the command.
pub fn run(settings: &Settings, args: &ReportArgs) -> Result<Exit> {
    let opts = options(settings, args)?;
    let outcome = crate::render::run(&opts).map_err(suggest_a_name)?;
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
        crate::outln!("{:>8} rows  {}", file.rows, shown(&file.path));
    }
    if let Some(first) = outcome.pages.first() {
        let folder = first.path.parent().unwrap_or(&outcome.dir);
        crate::outln!(
            "{:>8} pages {} (one per organization)",
            outcome.pages.len(),
            shown(folder)
        );
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
    Ok(Exit::Ok)
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
