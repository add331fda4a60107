//! One report as a sheet (or as several, past Excel's million rows): the CSV's
//! header and rows with typed cells, a frozen header row, an autofilter and fitted
//! column widths. Filled a batch at a time, on the report's thread.

use super::Book;
use super::cells::{self, TextKind, Unit};
use super::formats::Formats;
use crate::calendar::{Shown, for_a_person};
use crate::render::files::{Cells, Table};
use crate::report::ReportError;
use polars::prelude::StaticArray;
use rust_xlsxwriter::{Format, Note, Worksheet, XlsxError};

/// Data rows per sheet: Excel's 1,048,576 rows, less the header.
pub const MAX_ROWS: usize = 1_048_575;

/// Excel's longest sheet name.
const MAX_NAME: usize = 31;

/// Column widths are fitted to the longest cell, within these (in characters).
const WIDTH: (usize, usize) = (6, 60);

/// A sheet written: its name, the report and how many of its rows it holds.
pub struct Written {
    pub sheet: String,
    pub report: String,
    pub rows: usize,
}

/// Sheet names as Excel takes them: at most 31 characters, none of `[]:*?/\`, unique
/// without regard to case.
#[derive(Default)]
pub struct SheetNames {
    taken: Vec<String>,
}

impl SheetNames {
    /// A free name for `wanted` (changed only as far as Excel needs).
    pub fn claim(&mut self, wanted: &str) -> String {
        let clean: String = wanted
            .chars()
            .map(|c| if "[]:*?/\\".contains(c) { '_' } else { c })
            .collect();
        let clean = clean.trim_matches('\'');
        let clean = if clean.is_empty() { "report" } else { clean };
        let mut n = 1;
        loop {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!(" ({n})")
            };
            let keep = MAX_NAME - suffix.chars().count();
            let name: String = clean.chars().take(keep).collect::<String>() + &suffix;
            let key = name.to_lowercase();
            // "History" is reserved by Excel.
            if key != "history" && !self.taken.contains(&key) {
                self.taken.push(key);
                return name;
            }
            n += 1;
        }
    }
}

/// How each column is written.
struct Column<'a> {
    cells: &'a Cells<'a>,
    text: TextKind,
    unit: Unit,
    /// A `status` column: marked classes are coloured.
    status: bool,
}

/// One report's sheets, filled a batch at a time as the rows go out, `max_rows`
/// rows a sheet (Excel's limit); named and put in the workbook's order when the run
/// assembles it ([`super::write`]).
pub struct ReportSheets {
    report: String,
    names: Option<Vec<String>>,
    /// Each text column's kind, once a batch has shown a value of it.
    kinds: Vec<Option<TextKind>>,
    done: Vec<(Worksheet, usize)>,
    open: Option<OpenSheet>,
}

/// The sheet being filled: its rows so far, its columns' widths, and the cells of
/// each column written as text.
struct OpenSheet {
    sheet: Worksheet,
    rows: usize,
    widths: Vec<usize>,
    as_text: Vec<usize>,
}

/// A report's finished sheets, with the rows of each.
pub struct Finished {
    pub report: String,
    pub sheets: Vec<(Worksheet, usize)>,
}

impl ReportSheets {
    pub fn new(report: &str) -> ReportSheets {
        ReportSheets {
            report: report.to_string(),
            names: None,
            kinds: Vec::new(),
            done: Vec::new(),
            open: None,
        }
    }

    /// Appends a batch (`names`, `cols` from the CSV writer's preparation), starting
    /// a sheet whenever the last one is full. A text column's kind (date, timestamp,
    /// text) is read from the first batch with a value in it and kept: a column's
    /// cells are of one kind on every sheet. (A report built whole is one batch,
    /// so every value decides; of a report built in batches, the first batch's do.)
    pub fn rows(&mut self, book: &Book, (names, cols, rows): Table<'_>) -> Result<(), ReportError> {
        let xlsx = |cause| book.error(cause);
        self.names.get_or_insert_with(|| names.to_vec());
        self.kinds.resize(cols.len(), None);
        for (kind, cells) in self.kinds.iter_mut().zip(cols) {
            if let (None, Cells::Str(v)) = (&kind, cells)
                && v.iter().flatten().next().is_some()
            {
                *kind = Some(cells::text_kind(v.iter()));
            }
        }
        let unit_col = names
            .iter()
            .position(|n| n == "unit")
            .and_then(|i| match &cols[i] {
                Cells::Str(v) => Some(*v),
                _ => None,
            });
        let columns: Vec<Column<'_>> = names
            .iter()
            .zip(cols)
            .zip(&self.kinds)
            .map(|((name, cells), kind)| Column {
                cells,
                text: kind.unwrap_or(TextKind::Text),
                unit: cells::unit_of(name, unit_col.is_some()),
                status: name == "status",
            })
            .collect();
        let page = Page {
            names,
            columns: &columns,
            unit_col,
            formats: &book.formats,
        };
        let mut r = 0;
        while r < rows {
            let open = match self.open.take() {
                Some(open) if open.rows < book.max_rows => open,
                full => {
                    if let Some(full) = full {
                        self.done.push(full.close().map_err(xlsx)?);
                    }
                    OpenSheet::new(book, names)?
                }
            };
            let open = self.open.insert(open);
            let take = (rows - r).min(book.max_rows - open.rows);
            page.write(open, r..r + take).map_err(xlsx)?;
            r += take;
        }
        Ok(())
    }

    /// The report's sheets: one with the header alone when it had no rows.
    pub fn finish(mut self, book: &Book) -> Result<Finished, ReportError> {
        if self.open.is_none() && self.done.is_empty() {
            let names = self.names.take().unwrap_or_default();
            self.open = Some(OpenSheet::new(book, &names)?);
        }
        if let Some(open) = self.open.take() {
            self.done.push(open.close().map_err(|e| book.error(e))?);
        }
        Ok(Finished {
            report: self.report,
            sheets: self.done,
        })
    }
}

impl OpenSheet {
    /// A new constant-memory sheet of the workbook, with the header row.
    fn new(book: &Book, names: &[String]) -> Result<OpenSheet, ReportError> {
        let mut sheet = book.sheet()?;
        for (c, name) in names.iter().enumerate() {
            sheet
                .write_string_with_format(0, col(c), name, &book.formats.header)
                .map_err(|e| book.error(e))?;
        }
        Ok(OpenSheet {
            sheet,
            rows: 0,
            widths: names.iter().map(|n| n.chars().count() + 3).collect(),
            as_text: vec![0; names.len()],
        })
    }

    /// Fitted widths, the notes on columns with integers as text, the frozen header
    /// and the autofilter.
    fn close(mut self) -> Result<(Worksheet, usize), XlsxError> {
        let sheet = &mut self.sheet;
        for (c, n) in self.as_text.iter().enumerate().filter(|(_, n)| **n > 0) {
            let text = format!(
                "{n} cell(s) of this column hold integers of more than 15 significant \
                 digits, which Excel would round: they are text with the exact digits."
            );
            sheet.insert_note(0, col(c), &Note::new(text).set_author("orgledger"))?;
        }
        for (c, w) in self.widths.iter().enumerate() {
            sheet.set_column_width(col(c), w.clamp(&WIDTH.0, &WIDTH.1).to_owned() as f64)?;
        }
        sheet.set_freeze_panes(1, 0)?;
        super::print_across(sheet);
        let last = self.widths.len().saturating_sub(1);
        sheet.autofilter(0, 0, self.rows as u32, col(last))?;
        Ok((self.sheet, self.rows))
    }
}

/// One batch's worth of a report, as cells.
struct Page<'a> {
    names: &'a [String],
    columns: &'a [Column<'a>],
    unit_col: Option<&'a <polars::prelude::StringType as polars::prelude::PolarsDataType>::Array>,
    formats: &'a Formats,
}

impl Page<'_> {
    /// The batch's `rows` below the sheet's rows so far.
    fn write(&self, open: &mut OpenSheet, rows: std::ops::Range<usize>) -> Result<(), XlsxError> {
        debug_assert_eq!(self.names.len(), self.columns.len());
        for r in rows {
            open.rows += 1;
            let row = open.rows as u32;
            for (c, column) in self.columns.iter().enumerate() {
                let width = self.cell(
                    &mut open.sheet,
                    (row, col(c)),
                    column,
                    r,
                    &mut open.as_text[c],
                )?;
                open.widths[c] = open.widths[c].max(width);
            }
        }
        Ok(())
    }

    /// Writes one cell; returns its width in characters (about as shown).
    fn cell(
        &self,
        sheet: &mut Worksheet,
        (row, c): (u32, u16),
        column: &Column<'_>,
        r: usize,
        as_text: &mut usize,
    ) -> Result<usize, XlsxError> {
        let f = self.formats;
        let unit = match column.unit {
            Unit::PerRow => cells::row_unit(self.unit_col.and_then(|u| u.get(r))),
            unit => unit,
        };
        let number = |sheet: &mut Worksheet, v: f64| -> Result<usize, XlsxError> {
            sheet.write_number_with_format(row, c, v, f.number(unit, v))?;
            Ok(number_width(v, unit))
        };
        let text = |sheet: &mut Worksheet, s: &str, format: &Format| {
            sheet
                .write_string_with_format(row, c, s, format)
                .map(|_| s.chars().count())
        };
        match column.cells {
            Cells::Int(v) => match v.get(r) {
                Some(n) if cells::fits_excel(n) => number(sheet, n as f64),
                Some(n) => {
                    *as_text += 1;
                    text(sheet, &n.to_string(), &f.text)
                }
                None => Ok(0),
            },
            Cells::Float(v) => match v.get(r).filter(|x| x.is_finite()) {
                Some(x) => match cells::float_as_text(x) {
                    Some(digits) => {
                        *as_text += 1;
                        text(sheet, &digits, &f.text)
                    }
                    None => number(sheet, x),
                },
                None => Ok(0),
            },
            Cells::Bool(v) => match v.get(r) {
                Some(b) => sheet.write_boolean(row, c, b).map(|_| 5),
                None => Ok(0),
            },
            Cells::Str(v) => match v.get(r) {
                Some(s) => match (column.text, cells::serial(s)) {
                    (TextKind::Date, Some(day)) => {
                        sheet.write_number_with_format(row, c, day, &f.date)?;
                        Ok(10)
                    }
                    (TextKind::Timestamp, Some(at)) => {
                        sheet.write_number_with_format(row, c, at, &f.timestamp)?;
                        Ok(20)
                    }
                    // A text column stays text; a time in it is written as a
                    // person reads it (the files keep the exact text).
                    (_, Some(_)) => match for_a_person(s, Shown::Minute) {
                        Some(person) => text(sheet, &person, &f.text),
                        None => text(sheet, s, &f.text),
                    },
                    _ => {
                        let format = column
                            .status
                            .then(|| f.status(s))
                            .flatten()
                            .unwrap_or(&f.text);
                        text(sheet, s, format)
                    }
                },
                None => Ok(0),
            },
            Cells::Null => Ok(0),
        }
    }
}

/// About how wide a number shows: its digits, their separators and the unit.
pub(super) fn number_width(v: f64, unit: Unit) -> usize {
    if unit == Unit::Bytes {
        // At most three digits before the point in kB to PB: "999.9 GB".
        return 10;
    }
    let digits = (v.abs().max(1.0).log10().floor() as usize) + 1;
    let separators = if unit == Unit::Id { 0 } else { digits / 3 };
    let suffix = match unit {
        Unit::Bytes | Unit::Pct | Unit::Seconds => 3,
        Unit::Ms => 4,
        _ => 0,
    };
    let fraction = if v.fract() == 0.0 { 0 } else { 4 };
    digits + separators + suffix + fraction + usize::from(v < 0.0) + 1
}

fn col(c: usize) -> u16 {
    u16::try_from(c).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheet_names_fit_excel() {
        let mut names = SheetNames::default();
        assert_eq!(names.claim("Needs action"), "Needs action");
        assert_eq!(names.claim("needs action"), "needs action (2)");
        assert_eq!(names.claim("a/b:c"), "a_b_c");
        assert_eq!(names.claim("history"), "history (2)");
        let long = "x".repeat(40);
        assert_eq!(names.claim(&long), "x".repeat(31));
        assert_eq!(names.claim(&long), format!("{} (2)", "x".repeat(27)));
    }
}
