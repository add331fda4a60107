//! `orgledger-<as-of>.xlsx`: one workbook per run for people who work in a
//! spreadsheet. A "Needs action" sheet first (the HTML page's cards and action
//! tables, from the same [`Attention`] list), then one sheet per report with the
//! CSV's rows as typed cells, then an "About" sheet with the manifest's facts.
//! Each report's sheets are filled as its rows go out (already pseudonymized when
//! `redact_pii`), beside its files; the workbook is put together and written once
//! every report is done.

mod action;
mod cells;
mod formats;
mod sheet;

use crate::render::WrittenFile;
use crate::render::html::PageInfo;
use crate::report::attention::Attention;
use crate::report::{Format, ReportError};
use chrono::NaiveDate;
use formats::Formats;
use rust_xlsxwriter::{Workbook, Worksheet, XlsxError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use sheet::{Finished, MAX_ROWS, ReportSheets};

/// The workbook's file name for an as-of date.
pub fn file_name(as_of: NaiveDate) -> String {
    format!("orgledger-{}.xlsx", as_of.format("%Y-%m-%d"))
}

/// The last sheet's name.
pub const ABOUT: &str = "About";

/// The run's workbook while the reports are written: each report's sheets are
/// made here (the workbook makes every constant-memory sheet, whose cells wait in
/// temporary files in the output folder, not in memory) and filled on the report's
/// thread ([`ReportSheets`]).
pub struct Book {
    path: PathBuf,
    workbook: Mutex<Workbook>,
    formats: Formats,
    max_rows: usize,
}

impl Book {
    /// The workbook of the run as of `as_of`, written into `dir`.
    pub fn new(dir: &Path, as_of: NaiveDate) -> Result<Book, ReportError> {
        Book::with_max_rows(dir, &dir.join(file_name(as_of)), MAX_ROWS)
    }

    fn with_max_rows(dir: &Path, path: &Path, max_rows: usize) -> Result<Book, ReportError> {
        let mut workbook = Workbook::new();
        workbook
            .set_tempdir(dir)
            .map_err(|cause| ReportError::Xlsx {
                path: path.to_path_buf(),
                cause,
            })?;
        Ok(Book {
            path: path.to_path_buf(),
            workbook: Mutex::new(workbook),
            formats: Formats::new(),
            max_rows,
        })
    }

    fn error(&self, cause: XlsxError) -> ReportError {
        ReportError::Xlsx {
            path: self.path.clone(),
            cause,
        }
    }

    /// A new constant-memory sheet.
    fn sheet(&self) -> Result<Worksheet, ReportError> {
        let mut workbook = self.workbook.lock().map_err(|_| ReportError::Panicked {
            report: "workbook".to_string(),
        })?;
        workbook
            .new_worksheet_with_constant_memory()
            .map_err(|e| self.error(e))
    }

    /// Puts the workbook together (the "Needs action" sheet, every report's sheets
    /// in report order, the "About" sheet) and writes it. Its manifest `rows` are the
    /// report rows of its sheets.
    pub fn write(
        self,
        info: &PageInfo<'_>,
        reports: Vec<Finished>,
        attention: &Attention,
        mode: crate::file_mode::FileMode,
    ) -> Result<WrittenFile, ReportError> {
        let Book {
            path,
            workbook,
            formats,
            ..
        } = self;
        let xlsx = |cause| ReportError::Xlsx {
            path: path.clone(),
            cause,
        };
        let mut workbook = workbook.into_inner().map_err(|_| ReportError::Panicked {
            report: "workbook".to_string(),
        })?;
        let f = &formats;
        let mut names = sheet::SheetNames::default();
        names.claim(action::SHEET);
        names.claim(ABOUT);
        // Constant memory like the report sheets: over `xxlarge` the sheet's rows
        // with incomplete figures alone took about 30 MB as cells in memory.
        let mut first = workbook
            .new_worksheet_with_constant_memory()
            .map_err(xlsx)?;
        action::write(&mut first, attention, info.as_of, f).map_err(xlsx)?;
        workbook.push_worksheet(first);
        let mut sheets = Vec::new();
        for report in in_report_order(reports) {
            for (n, (mut sheet, rows)) in report.sheets.into_iter().enumerate() {
                let name = names.claim(&match n {
                    0 => report.report.clone(),
                    n => format!("{} ({})", report.report, n + 1),
                });
                sheet.set_name(&name).map_err(xlsx)?;
                workbook.push_worksheet(sheet);
                sheets.push(sheet::Written {
                    sheet: name,
                    report: report.report.clone(),
                    rows,
                });
            }
        }
        let mut last = Worksheet::new();
        about(&mut last, info, &sheets, f).map_err(xlsx)?;
        workbook.push_worksheet(last);
        let (sha256, bytes) = save(&mut workbook, &path, mode)?;
        Ok(WrittenFile {
            report: "workbook".to_string(),
            format: Format::Xlsx,
            path,
            rows: sheets.iter().map(|s| s.rows).sum(),
            // The report sheets, "Needs action" and "About".
            holds: crate::render::Holds::Sheets(sheets.len() + 2),
            bytes,
            sha256,
        })
    }
}

/// Writes the workbook under a temporary name, hashes it and renames it into place:
/// the zip is written with seeks, so it is hashed after, not while written.
fn save(
    workbook: &mut Workbook,
    path: &Path,
    mode: crate::file_mode::FileMode,
) -> Result<(String, u64), ReportError> {
    let io = |cause| ReportError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let file = tempfile::Builder::new()
        .prefix(".orgledger-workbook.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io)?;
    mode.apply(file.as_file()).map_err(io)?;
    workbook
        .save_to_writer(std::io::BufWriter::new(file.as_file()))
        .map_err(|cause| ReportError::Xlsx {
            path: path.to_path_buf(),
            cause,
        })?;
    let (sha256, bytes) = crate::output::hash_file(file.path()).map_err(io)?;
    file.persist(path).map_err(|e| io(e.error))?;
    Ok((sha256, bytes))
}

/// The built-in reports in the registry's order, then the custom ones by name.
fn in_report_order(mut reports: Vec<Finished>) -> Vec<Finished> {
    let builtin: Vec<&str> = crate::report::builtin_names().collect();
    let rank = |name: &str| {
        builtin
            .iter()
            .position(|b| *b == name)
            .unwrap_or(usize::MAX)
    };
    reports.sort_by(|a, b| {
        rank(&a.report)
            .cmp(&rank(&b.report))
            .then_with(|| a.report.cmp(&b.report))
    });
    reports
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
    "Dates and timestamps are Excel dates in UTC (timestamps shown to the minute, the cell holding the exact time); true/false are booleans; an empty cell is an unknown value.",
    "A column of text stays text: a date or time among its values reads as the pages write it (\"2026-11-24 07:00 UTC\"); the CSV file has the exact value.",
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
