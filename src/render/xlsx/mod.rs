//! `orgledger-<as-of>.xlsx`: one workbook per run for people who work in a
//! spreadsheet. A "Needs action" sheet first (the HTML page's cards and action
//! tables, from the same [`Attention`] list), then one sheet per report with the
//! CSV's rows as typed cells, then an "About" sheet with the manifest's facts.
//! Built from the run's frames (already pseudonymized when `redact_pii`) after the
//! report files; the bytes are put together in memory and written whole.

mod action;
mod cells;
mod formats;
mod sheet;

use crate::render::WrittenFile;
use crate::render::files::{cells as prepared_cells, prepare, write_bytes};
use crate::render::html::PageInfo;
use crate::report::attention::Attention;
use crate::report::{Format, ReportError};
use chrono::NaiveDate;
use formats::Formats;
use polars::prelude::DataFrame;
use rust_xlsxwriter::{Workbook, Worksheet, XlsxError};
use std::collections::BTreeMap;
use std::path::Path;

pub use sheet::MAX_ROWS;

/// The workbook's file name for an as-of date.
pub fn file_name(as_of: NaiveDate) -> String {
    format!("orgledger-{}.xlsx", as_of.format("%Y-%m-%d"))
}

/// The last sheet's name.
pub const ABOUT: &str = "About";

/// Writes the workbook into `dir`. Its manifest `rows` are the report rows of its
/// sheets.
pub fn write(
    dir: &Path,
    info: &PageInfo<'_>,
    frames: &BTreeMap<String, DataFrame>,
    attention: &Attention,
    mode: crate::file_mode::FileMode,
) -> Result<WrittenFile, ReportError> {
    let path = dir.join(file_name(info.as_of));
    let (bytes, rows) = build(dir, &path, info, frames, attention, MAX_ROWS)?;
    let (sha256, size) = write_bytes(&path, &bytes, mode)?;
    Ok(WrittenFile {
        report: "workbook".to_string(),
        format: Format::Xlsx,
        path,
        rows,
        bytes: size,
        sha256,
    })
}

/// The workbook's bytes and its report rows; the sheets' cells wait in temporary
/// files in `dir` (not in memory) until the workbook is put together.
pub(crate) fn build(
    dir: &Path,
    path: &Path,
    info: &PageInfo<'_>,
    frames: &BTreeMap<String, DataFrame>,
    attention: &Attention,
    max_rows: usize,
) -> Result<(Vec<u8>, usize), ReportError> {
    let xlsx = |cause| ReportError::Xlsx {
        path: path.to_path_buf(),
        cause,
    };
    let f = Formats::new();
    let mut workbook = Workbook::new();
    workbook.set_tempdir(dir).map_err(xlsx)?;
    let mut names = sheet::SheetNames::default();
    names.claim(action::SHEET);
    names.claim(ABOUT);
    action::write(workbook.add_worksheet(), attention, info.as_of, &f).map_err(xlsx)?;
    let mut sheets = Vec::new();
    for (report, df) in in_report_order(frames) {
        let prepared = prepare(report, df)?;
        let cols = prepared_cells(report, &prepared)?;
        let table = (prepared.names.as_slice(), cols.as_slice());
        let written = sheet::write(
            &mut workbook,
            &mut names,
            report,
            table,
            df.height(),
            &f,
            max_rows,
        )
        .map_err(xlsx)?;
        sheets.extend(written);
    }
    about(workbook.add_worksheet(), info, &sheets, &f).map_err(xlsx)?;
    let bytes = workbook.save_to_buffer().map_err(xlsx)?;
    Ok((bytes, sheets.iter().map(|s| s.rows).sum()))
}

/// The built-in reports in the registry's order, then the custom ones by name.
fn in_report_order(frames: &BTreeMap<String, DataFrame>) -> Vec<(&str, &DataFrame)> {
    let builtin = crate::report::builtin_names().filter_map(|n| frames.get_key_value(n));
    let custom = frames
        .iter()
        .filter(|(n, _)| crate::report::registry::find(n).is_none());
    builtin
        .chain(custom)
        .map(|(n, df)| (n.as_str(), df))
        .collect()
}

/// Printed, a sheet's columns fit across one landscape page (its rows run on over
/// as many pages as they need), so no row is cut in two.
fn print_across(sheet: &mut Worksheet) {
    sheet.set_landscape();
    sheet.set_print_fit_to_pages(1, 0);
}

/// The manifest's facts, the sheets and how to read the cells.
fn about(
    sheet: &mut Worksheet,
    info: &PageInfo<'_>,
    sheets: &[sheet::Written],
    f: &Formats,
) -> Result<(), XlsxError> {
    sheet.set_name(ABOUT)?;
    sheet.write_string_with_format(0, 0, "About this workbook", &f.title)?;
    let mut row = 2;
    let mut fact = |sheet: &mut Worksheet, label: &str| -> Result<u32, XlsxError> {
        sheet.write_string_with_format(row, 0, label, &f.bold)?;
        row += 1;
        Ok(row - 1)
    };
    let r = fact(sheet, "As of (end of day, UTC)")?;
    date_or_text(sheet, r, &info.as_of.format("%Y-%m-%d").to_string(), f)?;
    let r = fact(sheet, "Sync run")?;
    if let Some(id) = info.run_id {
        sheet.write_number(r, 1, id as f64)?;
    }
    let r = fact(sheet, "Observed at (UTC)")?;
    if let Some(at) = info.observed_at {
        date_or_text(sheet, r, at, f)?;
    }
    let r = fact(sheet, "Generated at (UTC)")?;
    date_or_text(sheet, r, info.generated_at, f)?;
    let r = fact(sheet, "Personal data pseudonymized")?;
    sheet.write_boolean(r, 1, info.redacted)?;
    let t = info.thresholds;
    for (label, value) in [
        ("Warning from (% of a limit)", t.warning_pct),
        ("Exceeded from (% of a limit)", t.exceeded_pct),
        ("Trial expiring within (days)", t.expiring_days as f64),
        ("Project flagged from (% of its budget)", t.flag_pct),
        ("Project stale after (days)", t.stale_days as f64),
    ] {
        let r = fact(sheet, label)?;
        sheet.write_number(r, 1, value)?;
    }
    row += 1;
    for line in READING {
        sheet.write_string(row, 0, *line)?;
        row += 1;
    }
    row += 1;
    for (c, h) in ["Sheet", "Report", "Rows"].iter().enumerate() {
        sheet.write_string_with_format(row, c as u16, *h, &f.header)?;
    }
    for s in sheets {
        row += 1;
        sheet.write_string(row, 0, &s.sheet)?;
        sheet.write_string(row, 1, &s.report)?;
        sheet.write_number(row, 2, s.rows as f64)?;
    }
    sheet.set_column_width(0, 40)?;
    sheet.set_column_width(1, 26)?;
    Ok(())
}

/// How to read the report sheets' cells.
const READING: &[&str] = &[
    "Each report sheet holds the rows of the report's CSV file, one cell per field.",
    "Numbers are exact; their formats show bytes in kB, MB, GB or TB (powers of 1000), seconds (s), milliseconds (ms), percentages (%) and thousands separators.",
    "Integers of more than 15 significant digits (which Excel would round) are text cells with the CSV's digits; a note on the column's header says how many.",
    "Dates and timestamps are Excel dates in UTC; true/false are booleans; an empty cell is an unknown value.",
    "A report of more than 1,048,575 rows continues on sheets named \"<report> (2)\" and so on.",
];

fn date_or_text(sheet: &mut Worksheet, row: u32, text: &str, f: &Formats) -> Result<(), XlsxError> {
    match cells::serial(text) {
        Some(serial) if text.len() == 10 => sheet.write_number_with_format(row, 1, serial, &f.date),
        Some(serial) => sheet.write_number_with_format(row, 1, serial, &f.timestamp),
        None => sheet.write_string(row, 1, text),
    }
    .map(|_| ())
}

#[cfg(test)]
mod tests;
