//! Writing reports: `<name>.csv`, `<name>.json` (an array of row objects with typed
//! values), `<name>.parquet` and `manifest.json` (the HTML page is `html/`; it writes
//! through [`write_bytes`]). A report's files are written a batch at a time as the
//! engine hands its rows over ([`ReportFiles`]), so no file is held in memory and
//! no report whole. Every file goes through [`crate::output::AtomicFile`]: whole or
//! not at all, hashed while written.

use crate::file_mode::FileMode;
use crate::output::AtomicFile;
use crate::render::WrittenFile;
use crate::report::error::{ReportError, pl};
use crate::report::{Format, Sink};
use polars::prelude::{
    BooleanType, ChunkedArray, DataFrame, DataType, Float64Type, Int64Type, PolarsDataType,
    StaticArray, StringType,
};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One column's values, in the form the writers need: the arrow array of a prepared
/// (single-chunk) column, read cell by cell, so writing copies no column. The array,
/// not the `ChunkedArray`: its `get` looks up the chunk of every cell, which cost more
/// than formatting the cell (a fifth of writing `compute_trends` over a large mirror).
pub(crate) enum Cells<'a> {
    Int(&'a <Int64Type as PolarsDataType>::Array),
    Float(&'a <Float64Type as PolarsDataType>::Array),
    Bool(&'a <BooleanType as PolarsDataType>::Array),
    Str(&'a <StringType as PolarsDataType>::Array),
    Null,
}

/// Holds columns cast to a writable type (so `Cells::Str` can borrow from them).
pub(crate) struct Prepared {
    pub names: Vec<String>,
    pub columns: Vec<polars::prelude::Series>,
}

pub(crate) fn prepare(report: &str, df: &DataFrame) -> Result<Prepared, ReportError> {
    let mut names = Vec::new();
    let mut columns = Vec::new();
    for col in df.columns() {
        let series = col.as_materialized_series().rechunk();
        let target = match series.dtype() {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => DataType::Int64,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                DataType::Int64
            }
            DataType::Float32 | DataType::Float64 => DataType::Float64,
            DataType::Boolean => DataType::Boolean,
            DataType::Null => DataType::Null,
            _ => DataType::String,
        };
        let series = if series.dtype() == &target {
            series
        } else {
            series
                .cast(&target)
                .map_err(pl(report, "preparing a column for output"))?
        };
        names.push(col.name().to_string());
        columns.push(series);
    }
    Ok(Prepared { names, columns })
}

pub(crate) fn cells<'a>(
    report: &str,
    prepared: &'a Prepared,
) -> Result<Vec<Cells<'a>>, ReportError> {
    let err = |e| pl(report, "reading a column for output")(e);
    prepared
        .columns
        .iter()
        .map(|s| {
            Ok(match s.dtype() {
                DataType::Int64 => single(s.i64().map_err(err)?).map_or(Cells::Null, Cells::Int),
                DataType::Float64 => {
                    single(s.f64().map_err(err)?).map_or(Cells::Null, Cells::Float)
                }
                DataType::Boolean => {
                    single(s.bool().map_err(err)?).map_or(Cells::Null, Cells::Bool)
                }
                DataType::String => single(s.str().map_err(err)?).map_or(Cells::Null, Cells::Str),
                _ => Cells::Null,
            })
        })
        .collect()
}

/// The one array of a rechunked column; `None` only for a column without chunks
/// (no rows, so nothing is read from it).
fn single<T: PolarsDataType>(column: &ChunkedArray<T>) -> Option<&T::Array> {
    debug_assert!(column.chunks().len() <= 1, "prepared columns are rechunked");
    column.downcast_get(0)
}

/// One report's files, written batch by batch as the engine hands them over
/// ([`Sink`]): a CSV, JSON or Parquet file per format asked for, each on a thread of
/// its own, and its sheets when the run writes a workbook. Each file has a
/// temporary name until [`ReportFiles::finish`] renames it into place; dropped
/// unfinished, it leaves nothing.
pub(crate) struct ReportFiles {
    report: String,
    files: Vec<FileThread>,
    sheets: Option<SheetsOf>,
}

/// The sheets of one report and the workbook they go to.
struct SheetsOf {
    book: std::sync::Arc<crate::render::xlsx::Book>,
    sheets: crate::render::xlsx::ReportSheets,
}

/// One file being written.
enum Out {
    Csv(PathBuf, Box<csv::Writer<AtomicFile>>, bool),
    Json(PathBuf, Box<JsonOut>),
    Parquet(PathBuf, FileMode, Option<Box<crate::output::parquet::Part>>),
}

/// A batch on its way to the files: the frame (Parquet writes it) and its columns
/// prepared once for the text writers.
struct Batch {
    df: DataFrame,
    prepared: Prepared,
}

/// A file written on a thread of its own, its batches handed over through a queue
/// of one: the job makes its next batch while this one is written, and a report's
/// files are written side by side (`compute_trends`' CSV and JSON: over `large`
/// its job thread waited for them batch by batch, about half its time).
struct FileThread {
    path: PathBuf,
    format: Format,
    /// None once the file is finished or its writer stopped.
    queue: Option<std::sync::mpsc::SyncSender<std::sync::Arc<Batch>>>,
    writer: Option<std::thread::JoinHandle<Result<Out, ReportError>>>,
}

impl FileThread {
    fn start(report: &str, out: Out) -> Result<FileThread, ReportError> {
        let (path, format) = (out.path().to_path_buf(), out.format());
        let (queue, batches) = std::sync::mpsc::sync_channel::<std::sync::Arc<Batch>>(1);
        let name = report.to_string();
        let writer = std::thread::Builder::new()
            .name(format!("{report}.{}", format.extension()))
            .spawn(move || {
                let mut out = out;
                for batch in batches {
                    let cols = cells(&name, &batch.prepared)?;
                    let table = (
                        batch.prepared.names.as_slice(),
                        cols.as_slice(),
                        batch.df.height(),
                    );
                    out.rows(&name, &batch.df, table)?;
                }
                Ok(out)
            })
            .map_err(|cause| ReportError::Io {
                path: path.clone(),
                cause,
            })?;
        Ok(FileThread {
            path,
            format,
            queue: Some(queue),
            writer: Some(writer),
        })
    }

    /// Hands a batch over; a writer that stopped says why.
    fn send(&mut self, report: &str, batch: &std::sync::Arc<Batch>) -> Result<(), ReportError> {
        let stopped = match &self.queue {
            Some(queue) => queue.send(batch.clone()).is_err(),
            None => true,
        };
        match stopped {
            true => self.end(report).map(|_| ()),
            false => Ok(()),
        }
    }

    /// Waits for the writer to write what it was handed: its file, or why it
    /// stopped.
    fn end(&mut self, report: &str) -> Result<Out, ReportError> {
        self.queue = None;
        let writer = self.writer.take().ok_or_else(|| ReportError::Io {
            path: self.path.clone(),
            cause: std::io::Error::other("the file's writer already ended"),
        })?;
        crate::report::error::unpanicked(report, writer.join())
    }
}

impl Drop for FileThread {
    /// An unfinished file's writer ends with the queue and removes its temporary
    /// file: waited for, so that nothing of it outlives the report.
    fn drop(&mut self) {
        self.queue = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl ReportFiles {
    /// Creates the files of `report` in `formats` (per-report formats only) in `dir`;
    /// with `book`, its rows also go to the run's workbook.
    pub(crate) fn create(
        dir: &Path,
        report: &str,
        formats: &[Format],
        mode: FileMode,
        book: Option<std::sync::Arc<crate::render::xlsx::Book>>,
    ) -> Result<ReportFiles, ReportError> {
        let files = formats
            .iter()
            .map(|&format| FileThread::start(report, Out::create(dir, report, format, mode)?))
            .collect::<Result<_, ReportError>>()?;
        let sheets = book.map(|book| SheetsOf {
            sheets: crate::render::xlsx::ReportSheets::new(report),
            book,
        });
        Ok(ReportFiles {
            report: report.to_string(),
            files,
            sheets,
        })
    }

    /// Renames every file into place; `rows` is the report's row count. Returns the
    /// files written (in the order of the formats) and the report's sheets.
    pub(crate) fn finish(
        mut self,
        rows: usize,
    ) -> Result<(Vec<WrittenFile>, Option<crate::render::xlsx::Finished>), ReportError> {
        let report = std::mem::take(&mut self.report);
        let mut written = Vec::with_capacity(self.files.len());
        for file in &mut self.files {
            let (path, format) = (file.path.clone(), file.format);
            let (sha256, bytes) = file.end(&report)?.commit(&report)?;
            written.push(WrittenFile {
                report: report.clone(),
                format,
                path,
                rows,
                holds: crate::render::Holds::Rows(rows),
                bytes,
                sha256,
            });
        }
        let sheets = self
            .sheets
            .take()
            .map(|s| s.sheets.finish(&s.book))
            .transpose()?;
        Ok((written, sheets))
    }
}

impl Sink for ReportFiles {
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        let report = self.report.as_str();
        let batch = std::sync::Arc::new(Batch {
            prepared: prepare(report, batch)?,
            df: batch.clone(),
        });
        for file in &mut self.files {
            file.send(report, &batch)?;
        }
        if let Some(s) = &mut self.sheets {
            let cols = cells(report, &batch.prepared)?;
            let table = (
                batch.prepared.names.as_slice(),
                cols.as_slice(),
                batch.df.height(),
            );
            s.sheets.rows(&s.book, table)?;
        }
        Ok(())
    }
}

/// A batch as the writers read it: column names, cells, rows.
pub(crate) type Table<'a> = (&'a [String], &'a [Cells<'a>], usize);

impl Out {
    /// Creates `report`'s file in `format` in `dir` (under a temporary name).
    fn create(
        dir: &Path,
        report: &str,
        format: Format,
        mode: FileMode,
    ) -> Result<Out, ReportError> {
        let path = dir.join(format!("{report}.{}", format.extension()));
        let io = |cause| ReportError::Io {
            path: path.clone(),
            cause,
        };
        Ok(match format {
            Format::Csv => {
                let file = AtomicFile::create(&path, mode).map_err(io)?;
                let w = csv::WriterBuilder::new()
                    .buffer_capacity(64 * 1024)
                    .from_writer(file);
                Out::Csv(path, Box::new(w), false)
            }
            Format::Json => {
                let file = AtomicFile::create(&path, mode).map_err(io)?;
                Out::Json(path, Box::new(JsonOut::new(file)))
            }
            Format::Parquet => Out::Parquet(path, mode, None),
            Format::Html | Format::Xlsx => return Err(per_run_only(&path, format)),
        })
    }

    fn path(&self) -> &Path {
        match self {
            Out::Csv(path, ..) | Out::Json(path, _) | Out::Parquet(path, ..) => path,
        }
    }

    fn format(&self) -> Format {
        match self {
            Out::Csv(..) => Format::Csv,
            Out::Json(..) => Format::Json,
            Out::Parquet(..) => Format::Parquet,
        }
    }

    fn rows(
        &mut self,
        report: &str,
        batch: &DataFrame,
        table: Table<'_>,
    ) -> Result<(), ReportError> {
        match self {
            Out::Csv(path, w, header) => write_csv(w, !std::mem::replace(header, true), table)
                .map_err(|cause| ReportError::Csv {
                    path: path.clone(),
                    cause,
                }),
            Out::Json(path, json) => json.rows(table).map_err(|cause| ReportError::Json {
                path: path.clone(),
                cause,
            }),
            Out::Parquet(path, mode, part) => {
                let batch = crate::output::parquet::typed(batch)
                    .map_err(pl(report, "preparing a batch for Parquet"))?;
                if part.is_none() {
                    let created = crate::output::parquet::Part::create(path, batch.schema(), *mode);
                    *part = Some(Box::new(created.map_err(|e| parquet_err(report, e))?));
                }
                match part {
                    Some(part) => part.write(&batch).map_err(|e| parquet_err(report, e)),
                    None => Ok(()),
                }
            }
        }
    }

    /// Finishes the file and renames it into place: its hex SHA-256 and size.
    fn commit(self, report: &str) -> Result<(String, u64), ReportError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| ReportError::Io { path, cause }
        };
        match self {
            Out::Csv(path, w, _) => {
                let file = w.into_inner().map_err(|e| io(&path)(e.into_error()))?;
                file.commit().map_err(io(&path))
            }
            Out::Json(path, json) => json.finish().map_err(io(&path)),
            Out::Parquet(path, _, part) => match part {
                Some(part) => {
                    let done = part.finish().map_err(|e| parquet_err(report, e))?;
                    Ok((done.sha256, done.bytes))
                }
                None => Err(io(&path)(std::io::Error::other("no rows were handed over"))),
            },
        }
    }
}

fn parquet_err(report: &str, e: crate::output::parquet::PartError) -> ReportError {
    match e {
        crate::output::parquet::PartError::Io(path, cause) => ReportError::Io { path, cause },
        crate::output::parquet::PartError::Polars(_, cause) => pl(report, "writing Parquet")(cause),
    }
}

/// Writes one report in one format into `dir`, the file with `mode`: the whole
/// table as one batch, through the same writers as a run's.
pub fn write_report(
    dir: &Path,
    report: &str,
    df: &DataFrame,
    format: Format,
    mode: FileMode,
) -> Result<WrittenFile, ReportError> {
    let mut files = ReportFiles::create(dir, report, &[format], mode, None)?;
    files.rows(df)?;
    let (written, _) = files.finish(df.height())?;
    written
        .into_iter()
        .next()
        .ok_or_else(|| per_run_only(&dir.join(report), format))
}

/// The HTML page and the workbook are one file for the whole run
/// ([`crate::render::html::write`], [`crate::render::xlsx::write`]), not a file per
/// report; `run` never asks for them here.
fn per_run_only(path: &Path, format: Format) -> ReportError {
    ReportError::Io {
        path: path.to_path_buf(),
        cause: std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!(
                "{} is written once per run, not per report",
                format.extension()
            ),
        ),
    }
}

/// Writes finished bytes through a temporary name; returns the hex SHA-256 and size.
pub fn write_bytes(
    path: &Path,
    bytes: &[u8],
    mode: FileMode,
) -> Result<(String, u64), ReportError> {
    crate::output::write_bytes(path, bytes, mode).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        cause: source,
    })
}

/// Appends a batch's rows to a CSV file, after the header line when `header`.
fn write_csv<W: Write>(
    w: &mut csv::Writer<W>,
    header: bool,
    (names, cols, rows): Table<'_>,
) -> Result<(), csv::Error> {
    if header {
        w.write_record(names)?;
    }
    let mut field: Vec<u8> = Vec::new();
    let mut digits = itoa::Buffer::new();
    for r in 0..rows {
        for col in cols {
            field.clear();
            match col {
                Cells::Int(v) => {
                    if let Some(n) = v.get(r) {
                        field.extend_from_slice(digits.format(n).as_bytes());
                    }
                }
                Cells::Float(v) => {
                    if let Some(f) = v.get(r).filter(|f| f.is_finite()) {
                        if let Some(n) = integral(f) {
                            field.extend_from_slice(digits.format(n).as_bytes());
                        } else {
                            // `Display` never uses an exponent: whole numbers beyond
                            // i64 come out as plain digits too.
                            let _ = write!(field, "{f}");
                        }
                    }
                }
                Cells::Bool(v) => {
                    if let Some(b) = v.get(r) {
                        field.extend_from_slice(if b { b"true" } else { b"false" });
                    }
                }
                Cells::Str(v) => {
                    if let Some(s) = v.get(r) {
                        field.extend_from_slice(s.as_bytes());
                    }
                }
                Cells::Null => {}
            }
            w.write_field(&field)?;
        }
        w.write_record(None::<&[u8]>)?;
    }
    Ok(())
}

/// 2^63: whole floats below it convert to `i64` exactly.
const I64_FLOAT_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// A float that is a whole number inside the `i64` range, written as plain digits
/// (no `.0`, no exponent: `1e16` is `10000000000000000`, a 2^60 limit keeps all 19
/// digits).
pub(crate) fn integral(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && (-I64_FLOAT_LIMIT..I64_FLOAT_LIMIT).contains(&f)).then_some(f as i64)
}

/// A finite JSON number: whole numbers as plain digits (serde_json would write
/// `1e16` and `1.152921504606847e18`), others as serde_json writes them.
fn write_json_float<W: Write>(
    out: &mut W,
    f: f64,
    digits: &mut itoa::Buffer,
) -> Result<(), serde_json::Error> {
    let io = serde_json::Error::io;
    match integral(f) {
        Some(n) => out.write_all(digits.format(n).as_bytes()).map_err(io),
        None if f.fract() == 0.0 => write!(out, "{f}").map_err(io),
        None => serde_json::to_writer(out, &f),
    }
}

/// A JSON file being written: an array of row objects, a batch at a time.
struct JsonOut {
    out: AtomicFile,
    /// The keys of the row objects, as JSON strings (from the first batch).
    keys: Option<Vec<String>>,
    rows: usize,
    digits: itoa::Buffer,
    /// A row is put together here and written at once: written piece by piece (six
    /// writes a cell) to the buffered file, the calls cost more than the formatting.
    line: Vec<u8>,
}

impl JsonOut {
    fn new(out: AtomicFile) -> JsonOut {
        JsonOut {
            out,
            keys: None,
            rows: 0,
            digits: itoa::Buffer::new(),
            line: Vec::with_capacity(1024),
        }
    }

    fn rows(&mut self, (names, cols, rows): Table<'_>) -> Result<(), serde_json::Error> {
        let io = serde_json::Error::io;
        if self.keys.is_none() {
            let keys = names
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<_, _>>()?;
            self.keys = Some(keys);
            self.out.write_all(b"[").map_err(io)?;
        }
        let keys = self.keys.as_deref().unwrap_or_default();
        let (line, digits) = (&mut self.line, &mut self.digits);
        for r in 0..rows {
            line.clear();
            line.extend_from_slice(if self.rows == 0 { b"\n{" } else { b",\n{" });
            self.rows += 1;
            for (c, col) in cols.iter().enumerate() {
                if c > 0 {
                    line.push(b',');
                }
                line.extend_from_slice(keys[c].as_bytes());
                line.push(b':');
                json_cell(line, col, r, digits)?;
            }
            line.push(b'}');
            self.out.write_all(line).map_err(io)?;
        }
        Ok(())
    }

    /// Closes the array and renames the file into place.
    fn finish(mut self) -> std::io::Result<(String, u64)> {
        if self.keys.is_none() {
            self.out.write_all(b"[")?;
        }
        self.out
            .write_all(if self.rows == 0 { b"]\n" } else { b"\n]\n" })?;
        self.out.commit()
    }
}

/// One cell as JSON: numbers as numbers, unknown as null.
fn json_cell(
    line: &mut Vec<u8>,
    col: &Cells<'_>,
    r: usize,
    digits: &mut itoa::Buffer,
) -> Result<(), serde_json::Error> {
    match col {
        Cells::Int(v) => match v.get(r) {
            Some(n) => line.extend_from_slice(digits.format(n).as_bytes()),
            None => line.extend_from_slice(b"null"),
        },
        Cells::Float(v) => match v.get(r).filter(|f| f.is_finite()) {
            Some(f) => write_json_float(line, f, digits)?,
            None => line.extend_from_slice(b"null"),
        },
        Cells::Bool(v) => match v.get(r) {
            Some(b) => line.extend_from_slice(if b { b"true" } else { b"false" }),
            None => line.extend_from_slice(b"null"),
        },
        Cells::Str(v) => match v.get(r) {
            Some(s) => serde_json::to_writer(&mut *line, s)?,
            None => line.extend_from_slice(b"null"),
        },
        Cells::Null => line.extend_from_slice(b"null"),
    }
    Ok(())
}

/// What `manifest.json` records besides the files.
pub struct ManifestHead<'a> {
    /// The as-of date.
    pub as_of: chrono::NaiveDate,
    /// The exclusive cut-off timestamp the as-of views used.
    pub cutoff: &'a str,
    /// The sync run the data came from, and the server time it observed.
    pub run: Option<(i64, String)>,
    /// When the run's files were written (the page and the workbook say the same).
    pub generated_at: &'a str,
    /// Whether personal data was pseudonymized.
    pub redacted_pii: bool,
    /// The thresholds the status rules used.
    pub thresholds: &'a crate::report::Thresholds,
}

/// Writes `manifest.json` into `dir` (after every report file, so a manifest always
/// describes complete files).
pub fn write_manifest(
    dir: &Path,
    head: &ManifestHead<'_>,
    files: &[WrittenFile],
    mode: FileMode,
) -> Result<PathBuf, ReportError> {
    use serde_json::json;
    let path = dir.join("manifest.json");
    let entries: Vec<serde_json::Value> = files
        .iter()
        .map(|f| {
            json!({
                "report": f.report,
                "format": f.format.extension(),
                "file": f.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                "rows": f.rows,
                "bytes": f.bytes,
                "sha256": f.sha256,
            })
        })
        .collect();
    let t = head.thresholds;
    let manifest = json!({
        "as_of": head.as_of.format("%Y-%m-%d").to_string(),
        "cutoff": head.cutoff,
        "run_id": head.run.as_ref().map(|(id, _)| *id),
        "observed_at": head.run.as_ref().map(|(_, at)| at.clone()),
        "generated_at": head.generated_at,
        "redacted_pii": head.redacted_pii,
        "thresholds": {
            "warning_pct": t.warning_pct,
            "exceeded_pct": t.exceeded_pct,
            "expiring_days": t.expiring_days,
            "flag_pct": t.flag_pct,
            "stale_days": t.stale_days,
        },
        "files": entries,
    });
    crate::output::write_json(&path, &manifest, mode).map_err(|source| ReportError::Io {
        path: path.clone(),
        cause: source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn big_whole_numbers_are_plain_digits_in_csv_and_json() {
        let dir = tempfile::tempdir().expect("tempdir");
        let df = df!(
            "int" => [Some(i64::MAX), Some(1 << 60), None],
            "float" => [Some(1e16), Some(1_152_921_504_606_846_976.0), Some(2.5)],
            // 2^64: beyond i64, still whole (its shortest exact digits).
            "huge" => [Some(18_446_744_073_709_551_616.0), Some(-0.0), Some(1e15)],
        )
        .expect("frame");
        write_report(dir.path(), "big", &df, Format::Csv, FileMode::PRIVATE).expect("csv");
        write_report(dir.path(), "big", &df, Format::Json, FileMode::PRIVATE).expect("json");
        let csv = std::fs::read_to_string(dir.path().join("big.csv")).expect("read csv");
        assert_eq!(
            csv,
            "int,float,huge\n\
             9223372036854775807,10000000000000000,18446744073709552000\n\
             1152921504606846976,1152921504606846976,0\n\
             ,2.5,1000000000000000\n"
        );
        let json = std::fs::read_to_string(dir.path().join("big.json")).expect("read json");
        assert_eq!(
            json,
            "[\n\
             {\"int\":9223372036854775807,\"float\":10000000000000000,\"huge\":18446744073709552000},\n\
             {\"int\":1152921504606846976,\"float\":1152921504606846976,\"huge\":0},\n\
             {\"int\":null,\"float\":2.5,\"huge\":1000000000000000}\n]\n"
        );
    }

    #[test]
    fn whole_floats_are_integral_in_the_i64_range() {
        assert_eq!(integral(3.0), Some(3));
        assert_eq!(integral(-2.0), Some(-2));
        assert_eq!(integral(2.5), None);
        assert_eq!(integral(1e16), Some(10_000_000_000_000_000));
        assert_eq!(integral(1_152_921_504_606_846_976.0), Some(1 << 60));
        assert_eq!(integral(-9_223_372_036_854_775_808.0), Some(i64::MIN));
        assert_eq!(integral(9_223_372_036_854_775_808.0), None);
    }
}
