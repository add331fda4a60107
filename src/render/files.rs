//! Writing reports: `<name>.csv`, `<name>.json` (an array of row objects with typed
//! values), `<name>.parquet` and `manifest.json` (the HTML page is `html/`; it writes
//! through [`write_bytes`]). Every file goes through [`crate::output::AtomicFile`]:
//! whole or not at all, hashed while written.

use crate::file_mode::FileMode;
use crate::output::AtomicFile;
use crate::render::WrittenFile;
use crate::report::Format;
use crate::report::error::{ReportError, pl};
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

/// Writes a file through a temporary name ([`AtomicFile`]): `body` writes the
/// content, then the file is flushed and renamed. Returns the hex SHA-256 and the size.
fn write_atomic<E>(
    path: &Path,
    mode: FileMode,
    body: impl FnOnce(&mut AtomicFile) -> Result<(), E>,
    wrap: impl Fn(E) -> ReportError,
) -> Result<(String, u64), ReportError> {
    let io = |source| ReportError::Io {
        path: path.to_path_buf(),
        cause: source,
    };
    let mut file = AtomicFile::create(path, mode).map_err(io)?;
    body(&mut file).map_err(wrap)?;
    file.commit().map_err(io)
}

/// Writes one report in one format into `dir`, the file with `mode`.
pub fn write_report(
    dir: &Path,
    report: &str,
    df: &DataFrame,
    format: Format,
    mode: FileMode,
) -> Result<WrittenFile, ReportError> {
    let path = dir.join(format!("{report}.{}", format.extension()));
    let rows = df.height();
    let (sha256, bytes) = match format {
        Format::Csv | Format::Json => {
            let prepared = prepare(report, df)?;
            let cols = cells(report, &prepared)?;
            if format == Format::Csv {
                write_atomic(
                    &path,
                    mode,
                    |out| write_csv(out, &prepared.names, &cols, rows),
                    |source| ReportError::Csv {
                        path: path.clone(),
                        cause: source,
                    },
                )?
            } else {
                write_atomic(
                    &path,
                    mode,
                    |out| write_json(out, &prepared.names, &cols, rows),
                    |source| ReportError::Json {
                        path: path.clone(),
                        cause: source,
                    },
                )?
            }
        }
        Format::Parquet => write_atomic(
            &path,
            mode,
            |out| crate::output::parquet::write_frame(out, df),
            |cause| pl(report, "writing Parquet")(cause),
        )?,
        Format::Html | Format::Xlsx => return Err(per_run_only(&path, format)),
    };
    Ok(WrittenFile {
        report: report.to_string(),
        format,
        path,
        rows,
        bytes,
        sha256,
    })
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

fn write_csv<W: Write>(
    out: W,
    names: &[String],
    cols: &[Cells<'_>],
    rows: usize,
) -> Result<(), csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .buffer_capacity(64 * 1024)
        .from_writer(out);
    w.write_record(names)?;
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
    w.flush()?;
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

fn write_json<W: Write>(
    mut out: W,
    names: &[String],
    cols: &[Cells<'_>],
    rows: usize,
) -> Result<(), serde_json::Error> {
    let keys: Vec<String> = names
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    let io = serde_json::Error::io;
    out.write_all(b"[").map_err(io)?;
    let mut digits = itoa::Buffer::new();
    // A row is put together in memory and written at once: written piece by piece
    // (six writes a cell) to the buffered file, the calls cost more than the
    // formatting.
    let mut line: Vec<u8> = Vec::with_capacity(1024);
    for r in 0..rows {
        line.clear();
        line.extend_from_slice(if r == 0 { b"\n{" } else { b",\n{" });
        for (c, col) in cols.iter().enumerate() {
            if c > 0 {
                line.push(b',');
            }
            line.extend_from_slice(keys[c].as_bytes());
            line.push(b':');
            match col {
                Cells::Int(v) => match v.get(r) {
                    Some(n) => line.extend_from_slice(digits.format(n).as_bytes()),
                    None => line.extend_from_slice(b"null"),
                },
                Cells::Float(v) => match v.get(r).filter(|f| f.is_finite()) {
                    Some(f) => write_json_float(&mut line, f, &mut digits)?,
                    None => line.extend_from_slice(b"null"),
                },
                Cells::Bool(v) => match v.get(r) {
                    Some(b) => line.extend_from_slice(if b { b"true" } else { b"false" }),
                    None => line.extend_from_slice(b"null"),
                },
                Cells::Str(v) => match v.get(r) {
                    Some(s) => serde_json::to_writer(&mut line, s)?,
                    None => line.extend_from_slice(b"null"),
                },
                Cells::Null => line.extend_from_slice(b"null"),
            }
        }
        line.push(b'}');
        out.write_all(&line).map_err(io)?;
    }
    out.write_all(if rows == 0 { b"]\n" } else { b"\n]\n" })
        .map_err(io)?;
    out.flush().map_err(io)?;
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
