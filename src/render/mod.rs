//! The renderers: how the reports' tables are shown. [`run`] asks the report engine
//! ([`crate::report::Plan`]) for the tables and writes, as each one is built, its
//! CSV, JSON and Parquet files ([`files`]); then the run's page ([`html`], with a
//! page per organization), its workbook ([`xlsx`]) and the manifest; [`summary`]
//! is what `demo` and `report` print. Renderers read the tables ([`crate::report::tables`])
//! and what the rooms below offer through their own API (the alert conditions
//! that held, from [`crate::alerts::held`]); they compute no figure of their own.

pub(crate) mod files;
pub(crate) mod html;
pub(crate) mod summary;
pub(crate) mod xlsx;

#[cfg(test)]
mod tests;

pub use summary::summary;

use crate::file_mode::FileMode;
use crate::report::{Format, Plan, ReportError, ReportOptions, attention, compute_trends, error};
use chrono::NaiveDate;
use polars::prelude::DataFrame;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One file written.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    /// The report it holds.
    pub report: String,
    /// Its format.
    pub format: Format,
    /// Where it is.
    pub path: PathBuf,
    /// Data rows.
    pub rows: usize,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// What a run produced.
#[derive(Debug)]
pub struct ReportOutcome {
    /// `out_root/<as_of>`; for a store, the staging folder (removed once published).
    pub dir: PathBuf,
    /// Where the reports are, as shown to the user: the folder, or the store URL.
    pub location: String,
    /// What was uploaded, for a store.
    pub published: Option<crate::output::Published>,
    /// The as-of date.
    pub as_of: NaiveDate,
    /// The sync run the data came from (the latest finished run observed before the
    /// end of the as-of day), if any.
    pub run_id: Option<i64>,
    /// Server time that run observed.
    pub observed_at: Option<String>,
    /// The report files, in report order (`manifest.json` is [`Self::manifest`]).
    pub files: Vec<WrittenFile>,
    /// With the HTML format, a page per organization (`orgs/<id>.html`), by name;
    /// `manifest.json` lists them after `files`.
    pub pages: Vec<WrittenFile>,
    /// `manifest.json`.
    pub manifest: PathBuf,
    /// Each report's table (pseudonymized when `redact_pii`).
    pub frames: BTreeMap<String, DataFrame>,
    /// The rows that need action, read from `frames` once (the summary and the HTML
    /// page both show these).
    pub attention: attention::Attention,
    /// The top compute users of the last 30 days, when `compute_trends` was built.
    pub top_users: Option<Vec<compute_trends::TopUser>>,
}

/// Builds the reports and writes their files; see [`ReportOptions`].
pub fn run(opts: &ReportOptions) -> Result<ReportOutcome, ReportError> {
    let day = opts.as_of.format("%Y-%m-%d").to_string();
    let Some(url) = &opts.store else {
        return write_into(opts, &opts.out_root.join(day));
    };
    let url = url.join(&day);
    // Opened first: a store that cannot be used fails before any report is built.
    let store = crate::output::Store::open(&url, opts.file_mode)?;
    let staging = tempfile::Builder::new()
        .prefix("orgledger-reports-")
        .tempdir()
        .map_err(|cause| ReportError::Io {
            path: std::env::temp_dir(),
            cause,
        })?;
    let mut outcome = write_into(opts, staging.path())?;
    // The day's prefix belongs to the run: everything the new manifest does not list
    // goes once it is in place.
    outcome.published =
        Some(store.publish(staging.path(), "manifest.json", &[String::new()], &[])?);
    outcome.location = url.to_string();
    Ok(outcome)
}

/// Builds the reports and writes them into `dir`; see [`run`].
fn write_into(opts: &ReportOptions, dir: &Path) -> Result<ReportOutcome, ReportError> {
    let dir = dir.to_path_buf();
    let plan = Plan::new(opts)?;
    let (formats, per_run) = output_formats(&opts.formats);
    let (cutoff, run) = (plan.cutoff.clone(), plan.run.clone());
    opts.file_mode
        .create_dir_all(&dir)
        .map_err(|source| ReportError::Io {
            path: dir.clone(),
            cause: source,
        })?;

    let built = plan.build(|name, df| write_formats(&dir, name, df, &formats, opts.file_mode))?;

    let mut files = Vec::new();
    let mut frames = BTreeMap::new();
    for (name, frame, written) in built {
        files.extend(written);
        frames.insert(name, frame);
    }
    let attention = attention::Attention::from_frames(&frames, opts.as_of)?;
    let top_users = frames
        .get("compute_trends")
        .map(compute_trends::top_users)
        .transpose()?;
    let generated_at = crate::mirror::now_text();
    let info = html::PageInfo {
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.as_ref().map(|(_, at)| at.as_str()),
        generated_at: &generated_at,
        redacted: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    let mut pages = Vec::new();
    // Built from `frames`, which `finish` has already pseudonymized.
    for format in per_run {
        let file = match format {
            Format::Xlsx => xlsx::write(&dir, &info, &frames, &attention, opts.file_mode)?,
            _ => {
                pages = html::org::write_all(opts, &info, &frames, &dir)?;
                html::write(&dir, &info, &frames, &attention, &files, opts.file_mode)?
            }
        };
        files.push(file);
    }
    let head = files::ManifestHead {
        as_of: opts.as_of,
        cutoff: &cutoff,
        run: run.clone(),
        generated_at: &generated_at,
        redacted_pii: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    let listed: Vec<WrittenFile> = files.iter().chain(&pages).cloned().collect();
    let manifest = files::write_manifest(&dir, &head, &listed, opts.file_mode)?;
    Ok(ReportOutcome {
        location: dir.display().to_string(),
        published: None,
        dir,
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.map(|(_, at)| at),
        files,
        pages,
        manifest,
        frames,
        attention,
        top_users,
    })
}

/// The per-report formats to write and the once-per-run ones (the HTML page, the
/// workbook: written after the report files), each without duplicates, in the
/// order asked.
fn output_formats(asked: &[Format]) -> (Vec<Format>, Vec<Format>) {
    let asked = if asked.is_empty() {
        &[Format::Csv, Format::Json][..]
    } else {
        asked
    };
    let (mut per_report, mut per_run) = (Vec::new(), Vec::new());
    for &f in asked {
        let out = if f.per_run() {
            &mut per_run
        } else {
            &mut per_report
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    (per_report, per_run)
}

/// Writes one report in every format; big reports write their formats in parallel.
fn write_formats(
    dir: &Path,
    name: &str,
    df: &DataFrame,
    formats: &[Format],
    mode: FileMode,
) -> Result<Vec<WrittenFile>, ReportError> {
    const PARALLEL_ABOVE: usize = 50_000;
    if formats.len() < 2 || df.height() < PARALLEL_ABOVE {
        return formats
            .iter()
            .map(|f| files::write_report(dir, name, df, *f, mode))
            .collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = formats
            .iter()
            .map(|f| scope.spawn(move || files::write_report(dir, name, df, *f, mode)))
            .collect();
        handles
            .into_iter()
            .map(|h| error::unpanicked(name, h.join()))
            .collect()
    })
}
