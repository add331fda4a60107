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

use crate::report::compute_trends::{self, Digest};
use crate::report::{Built, Format, Keep, KeptTables, Plan, ReportError, ReportOptions, attention};
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
    /// Data rows (the manifest's `rows`).
    pub rows: usize,
    /// What it holds, as a person is told.
    pub holds: Holds,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// What a file holds, as `orgledger report` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// A report's rows (an organization's page: its limits).
    Rows(usize),
    /// The workbook's sheets.
    Sheets(usize),
    /// `index.html`: the organizations it links a page of.
    Organizations(usize),
}

impl std::fmt::Display for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, what) = match *self {
            Holds::Rows(n) => (n, "row"),
            Holds::Sheets(n) => (n, "sheet"),
            Holds::Organizations(n) => (n, "organization"),
        };
        let plural = if n == 1 { "" } else { "s" };
        f.pad(&format!("{n} {what}{plural}"))
    }
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
    /// The tables the run keeps for the steps after its files (pseudonymized when
    /// `redact_pii`): the reports whose declaration says they are read back, and
    /// custom reports.
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
    let staging =
        crate::output::staging::Staging::beside(&opts.db).map_err(|cause| ReportError::Io {
            path: crate::output::staging::root(&opts.db),
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
    // The page and the summary show `compute_trends` through its digest, gathered
    // as its rows go to the files.
    let built = plan.build(Keep::Declared, |name| {
        let files = files::ReportFiles::create(&dir, name, &formats, opts.file_mode, book.clone())?;
        Ok((files, (*name == compute_trends::NAME).then(Digest::default)))
    })?;
    let mut finished = Finished::of(built)?;
    let attention =
        attention::Attention::of_run(&finished.tables, &finished.incomplete, opts.as_of)?;
    let generated_at = crate::mirror::now_text();
    let info = html::PageInfo {
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.as_ref().map(|(_, at)| at.as_str()),
        generated_at: &generated_at,
        redacted: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    // Built from what the engine has already pseudonymized.
    let shown = PerRun {
        opts,
        info: &info,
        dir: &dir,
        attention: &attention,
    };
    let pages = shown.write(&per_run, &mut finished, book)?;
    let head = files::ManifestHead {
        as_of: opts.as_of,
        cutoff: &cutoff,
        run: run.clone(),
        generated_at: &generated_at,
        redacted_pii: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    let listed: Vec<WrittenFile> = finished.files.iter().chain(&pages).cloned().collect();
    let manifest = files::write_manifest(&dir, &head, &listed, opts.file_mode)?;
    Ok(ReportOutcome {
        location: dir.display().to_string(),
        published: None,
        dir,
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.map(|(_, at)| at),
        files: finished.files,
        pages,
        manifest,
        tables: finished.tables,
        attention,
        top_users: finished.digest.as_ref().map(|d| d.top_users().to_vec()),
    })
}

/// What the report files leave for the once-per-run outputs.
struct Finished {
    /// The report files written, in report order.
    files: Vec<WrittenFile>,
    /// The reports' sheets, for the workbook.
    sheets: Vec<xlsx::Finished>,
    /// The tables the later steps read back.
    tables: KeptTables,
    /// `compute_trends`' digest, when it was built.
    digest: Option<Digest>,
    /// The incomplete rows, by report.
    incomplete: BTreeMap<String, Vec<attention::Incomplete>>,
}

impl Finished {
    /// Finishes each report's files (renamed into place) and sheets, in report
    /// order, and gathers what the run keeps.
    fn of(built: Vec<Built<ReportSink>>) -> Result<Finished, ReportError> {
        let mut out = Finished {
            files: Vec::new(),
            sheets: Vec::new(),
            tables: KeptTables::default(),
            digest: None,
            incomplete: BTreeMap::new(),
        };
        for b in built {
            if let Some(rows) = b.incomplete {
                out.incomplete.insert(b.name.clone(), rows);
            }
            let (files, digest) = b.sink;
            let (written, sheets) = files.finish(b.rows)?;
            out.files.extend(written);
            out.sheets.extend(sheets);
            out.tables.extend(b.kept);
            out.digest = out.digest.or(digest);
        }
        Ok(out)
    }
}

/// Where a report's rows go while it builds: its files, and for `compute_trends`
/// the digest the page and the summary show.
type ReportSink = (files::ReportFiles, Option<Digest>);

/// What the once-per-run outputs are made from.
struct PerRun<'a> {
    opts: &'a ReportOptions,
    info: &'a html::PageInfo<'a>,
    dir: &'a Path,
    attention: &'a attention::Attention,
}

impl PerRun<'_> {
    /// Writes `formats` (the page with the organization pages, the workbook) in the
    /// order asked, each file added to `finished.files`; returns the organization
    /// pages.
    fn write(
        &self,
        formats: &[Format],
        finished: &mut Finished,
        mut book: Option<Arc<xlsx::Book>>,
    ) -> Result<Vec<WrittenFile>, ReportError> {
        let mut pages = Vec::new();
        for format in formats {
            let file = match format {
                Format::Xlsx => self.workbook(book.take(), std::mem::take(&mut finished.sheets))?,
                _ => {
                    pages = html::org::write_all(self.opts, self.info, &finished.tables, self.dir)?;
                    let shown = html::Shown {
                        tables: &finished.tables,
                        trends: finished.digest.as_ref(),
                        attention: self.attention,
                    };
                    html::write(
                        self.dir,
                        self.info,
                        &shown,
                        &finished.files,
                        self.opts.file_mode,
                    )?
                }
            };
            finished.files.push(file);
        }
        Ok(pages)
    }

    /// The workbook, once every report's sheets are finished (they hold the book
    /// until then).
    fn workbook(
        &self,
        book: Option<Arc<xlsx::Book>>,
        sheets: Vec<xlsx::Finished>,
    ) -> Result<WrittenFile, ReportError> {
        let book = book
            .and_then(|book| Arc::try_unwrap(book).ok())
            .ok_or(ReportError::WorkbookHeld)?;
        book.write(self.info, sheets, self.attention, self.opts.file_mode)
    }
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
