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

use crate::report::{
    Format, Kept, KeptTables, Plan, ReportError, ReportOptions, attention, compute_trends,
};
use chrono::NaiveDate;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// The tables the run keeps (pseudonymized when `redact_pii`): every report but
    /// `compute_trends`, whose rows went to its files batch by batch.
    pub tables: KeptTables,
    /// The rows that need action, read from `tables` once (the summary and the HTML
    /// page both show these).
    pub attention: attention::Attention,
    /// The top compute users of the last 30 days (the first ten), when
    /// `compute_trends` was built.
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

    let book = match per_run.contains(&Format::Xlsx) {
        true => Some(Arc::new(xlsx::Book::new(&dir, opts.as_of)?)),
        false => None,
    };
    let built = plan.build(|name| {
        files::ReportFiles::create(&dir, name, &formats, opts.file_mode, book.clone())
    })?;

    let mut files = Vec::new();
    let mut sheets = Vec::new();
    let mut tables = KeptTables::default();
    let mut trends = None;
    let mut incomplete = BTreeMap::new();
    for b in built {
        if let Some(rows) = b.incomplete {
            incomplete.insert(b.name.clone(), rows);
        }
        let (written, report_sheets) = b.sink.finish(b.rows)?;
        files.extend(written);
        sheets.extend(report_sheets);
        match b.kept {
            Kept::Table(df) => {
                tables.frames.insert(b.name, df);
            }
            Kept::Spilled(spill) => {
                tables.spilled.insert(b.name, spill);
            }
            Kept::Trends(digest) => trends = Some(*digest),
        }
    }
    let attention = attention::Attention::of_run(&tables, &incomplete, opts.as_of)?;
    let top_users = trends.as_ref().map(|d| d.top_users().to_vec());
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
    let mut book = book.map(Arc::try_unwrap);
    // Built from `tables` and `trends`, which the engine has already pseudonymized.
    for format in per_run {
        let file = match format {
            Format::Xlsx => match book.take() {
                Some(Ok(book)) => book.write(
                    &info,
                    std::mem::take(&mut sheets),
                    &attention,
                    opts.file_mode,
                )?,
                _ => {
                    return Err(ReportError::Panicked {
                        report: "workbook".to_string(),
                    });
                }
            },
            _ => {
                pages = html::org::write_all(opts, &info, &tables, &dir)?;
                let shown = html::Shown {
                    frames: &tables.frames,
                    trends: trends.as_ref(),
                    attention: &attention,
                };
                html::write(&dir, &info, &shown, &files, opts.file_mode)?
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
        tables,
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
