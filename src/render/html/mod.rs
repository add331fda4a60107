//! `index.html`: one self-contained page with charts for people who would rather
//! look than read. No scripts, styles, fonts or images from elsewhere: the charts
//! are inline SVG drawn with plotters, the styles are inline, links point to the
//! CSV files next to the page. Built from the tables the run keeps and the digest
//! of `compute_trends` (already pseudonymized when `redact_pii`), after the report
//! files are written.

mod changes;
mod charts;
pub(crate) mod data;
mod moment;
pub(crate) mod org;
mod page;
pub(crate) mod tables;

use crate::render::WrittenFile;
use crate::render::files::write_bytes;
use crate::report::attention::Attention;
use crate::report::compute_trends::Digest;
use crate::report::{self, Format, KeptTable, KeptTables, ReportError, Thresholds, entitlements};
use chrono::NaiveDate;
use std::path::Path;

/// The page's file name.
pub const FILE: &str = "index.html";

/// What the page says about the run besides the reports.
pub struct PageInfo<'a> {
    pub as_of: NaiveDate,
    pub run_id: Option<i64>,
    pub observed_at: Option<&'a str>,
    pub generated_at: &'a str,
    pub redacted: bool,
    pub thresholds: &'a Thresholds,
}

/// What the page shows of the run: the tables it keeps, the digest of
/// `compute_trends`, and the rows that need action.
pub struct Shown<'a> {
    pub tables: &'a KeptTables,
    pub trends: Option<&'a Digest>,
    pub attention: &'a Attention,
}

/// Builds the page text from what it shows; `files` are the report files written
/// next to it (the CSV ones are linked). Returns it with the rows of its action
/// tables and the organizations it links a page of.
pub fn render(
    info: &PageInfo<'_>,
    shown: &Shown<'_>,
    files: &[WrittenFile],
) -> Result<(String, usize, usize), ReportError> {
    let (tables, attention) = (shown.tables, shown.attention);
    let today = crate::calendar::day_of(info.as_of);
    let t = info.thresholds;
    let entitlements = tables
        .get(entitlements::NAME)
        .map(KeptTable::whole)
        .transpose()?;
    let usage = match &entitlements {
        Some(df) => {
            let u = data::usage(df)?;
            let svg = charts::usage(&u, t.warning_pct, t.exceeded_pct)?;
            Some((u, svg))
        }
        None => None,
    };
    let trends = match shown.trends {
        Some(digest) => digest
            .trends()
            .into_iter()
            .enumerate()
            .map(|(i, tr)| charts::trend(&tr, i).map(|svg| (tr, svg)))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let trials = match &attention.trials {
        Some(all) => {
            let tr = data::trials(all);
            let svg = charts::trials(&tr, today)?;
            Some((tr, svg))
        }
        None => None,
    };
    let links = files
        .iter()
        .filter(|f| f.format == Format::Csv)
        .filter_map(|f| {
            let name = f.path.file_name()?.to_string_lossy().into_owned();
            Some((f.report.clone(), name))
        })
        .collect();
    let parts = page::Parts {
        info,
        usage,
        trends,
        trials,
        counts: attention.counts(),
        actions: data::actions(attention, info.as_of),
        changes: tables
            .get(report::changes::NAME)
            .map(|t| t.whole().and_then(|df| changes::week(&df)))
            .transpose()?,
        links,
        orgs: org::listed(entitlements.as_ref())?,
        tables: tables::shown(shown.tables)?,
    };
    let rows = [
        &parts.actions.limits,
        &parts.actions.trials,
        &parts.actions.projects,
    ]
    .iter()
    .filter_map(|t| t.as_ref().map(|t| t.rows.len()))
    .sum();
    Ok((page::render(&parts), rows, parts.orgs.len()))
}

/// Writes `index.html` into `dir` (through a temporary name, as every report file).
/// Its manifest `rows` are the rows of its action tables.
pub fn write(
    dir: &Path,
    info: &PageInfo<'_>,
    shown: &Shown<'_>,
    files: &[WrittenFile],
    mode: crate::file_mode::FileMode,
) -> Result<WrittenFile, ReportError> {
    let (text, rows, orgs) = render(info, shown, files)?;
    let path = dir.join(FILE);
    let (sha256, bytes) = write_bytes(&path, text.as_bytes(), mode)?;
    Ok(WrittenFile {
        report: "index".to_string(),
        format: Format::Html,
        path,
        rows,
        holds: crate::render::Holds::Organizations(orgs),
        bytes,
        sha256,
    })
}
