//! Errors of the report layer. Each variant names the report, SQL file or output
//! file it concerns, so a message alone tells the user what to fix. Causes are said
//! inline and are not `source()`s (the crate's rule, `crate::cause`).

use std::path::PathBuf;

/// Where a query runs: the report, the SQL file (or `embedded queries/<name>.sql`)
/// and the section of the file. Boxed in the errors that carry it, to keep
/// `Result<_, ReportError>` small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlSite {
    /// The report.
    pub report: String,
    /// Where the SQL came from.
    pub file: String,
    /// The section of the file (`main` for a file without sections).
    pub part: String,
}

impl SqlSite {
    /// A boxed site.
    pub fn boxed(report: &str, file: &str, part: &str) -> Box<SqlSite> {
        Box::new(SqlSite {
            report: report.to_string(),
            file: file.to_string(),
            part: part.to_string(),
        })
    }
}

impl std::fmt::Display for SqlSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "report {}: query {} (part {})",
            self.report, self.file, self.part
        )
    }
}

/// What can go wrong building or writing reports.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Publishing to an object store failed.
    #[error(transparent)]
    Store(#[from] crate::output::StoreError),
    /// The mirror could not be opened (missing, outdated, unreadable); the inner
    /// error names the file.
    #[error(transparent)]
    Mirror(#[from] crate::mirror::MirrorError),
    /// The as-of views could not be installed on the reading connection.
    #[error("cannot read the mirror {} as of {as_of}: {}", .db.display(), crate::cause::sqlite(.cause))]
    AsOf {
        /// The mirror file.
        db: PathBuf,
        /// The as-of date.
        as_of: chrono::NaiveDate,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
    /// A report's table lacks a column as its readers read it (`report::tables`).
    #[error(transparent)]
    Table(#[from] crate::report::tables::TableError),
    /// The as-of date is one the mirror cannot answer for.
    #[error(transparent)]
    Coverage(#[from] crate::mirror::coverage::CoverageError),
    /// A report name that is neither built in nor a custom SQL file.
    #[error("unknown report {name:?}; valid reports: {valid}")]
    UnknownReport {
        /// The name asked for.
        name: String,
        /// Comma-separated list of the valid names.
        valid: String,
    },
    /// A custom report file has the name of a built-in report.
    #[error("custom report {path} has the name of the built-in report {name:?}; rename the file")]
    CustomClash {
        /// The report name.
        name: String,
        /// The custom SQL file.
        path: PathBuf,
    },
    /// A custom report file name that cannot be used as a report (and file) name.
    #[error(
        "custom report {path}: the file name must be letters, digits, '_' or '-' followed by .sql"
    )]
    BadCustomName {
        /// The custom SQL file.
        path: PathBuf,
    },
    /// The custom reports folder exists but cannot be listed.
    #[error("cannot list custom reports in {}: {}", .path.display(), crate::cause::io(.cause))]
    ListCustom {
        /// The folder.
        path: PathBuf,
        /// The reason.
        cause: std::io::Error,
    },
    /// A SQL file (override or custom) could not be read.
    #[error("report {report}: cannot read {}: {}", .path.display(), crate::cause::io(.cause))]
    ReadSql {
        /// The report.
        report: String,
        /// The SQL file.
        path: PathBuf,
        /// The reason.
        cause: std::io::Error,
    },
    /// A report's SQL file lacks a section the report's job needs.
    #[error("report {report}: {file} has no `-- part: {part}` section (the report needs it)")]
    MissingPart {
        /// The report.
        report: String,
        /// Where the SQL came from.
        file: String,
        /// The missing section.
        part: String,
    },
    /// A query failed to prepare or run.
    #[error("{site} failed: {}", crate::cause::sqlite(.cause))]
    Query {
        /// The report, file and section.
        site: Box<SqlSite>,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
    /// A query uses a named parameter the report layer does not provide.
    #[error("{site} uses the parameter {param}; available: {available}")]
    UnknownParam {
        /// The report, file and section.
        site: Box<SqlSite>,
        /// The parameter as written.
        param: String,
        /// The parameters that are bound.
        available: String,
    },
    /// A value the report needs as a number or date could not be read as one.
    #[error("{site}: column {column} holds {value:?}, which is not {expected}")]
    BadValue {
        /// The report, file and section.
        site: Box<SqlSite>,
        /// The column.
        column: String,
        /// The offending value.
        value: String,
        /// What was expected ("a number", "a date").
        expected: &'static str,
    },
    /// A column the report's job needs is missing from its query's result.
    #[error("{site} returns no column {column:?} (the report needs it)")]
    MissingColumn {
        /// The report, file and section.
        site: Box<SqlSite>,
        /// The missing column.
        column: String,
    },
    /// A polars step of a report failed.
    #[error("report {report}: {step}: {cause}")]
    Polars {
        /// The report.
        report: String,
        /// What the job was doing.
        step: &'static str,
        /// Polars' reason.
        cause: polars::prelude::PolarsError,
    },
    /// A file or folder could not be written.
    #[error("cannot write {}: {}", .path.display(), crate::cause::io(.cause))]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The reason.
        cause: std::io::Error,
    },
    /// A CSV file could not be written.
    #[error("cannot write {path}: {cause}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The reason.
        cause: csv::Error,
    },
    /// A JSON file could not be written.
    #[error("cannot write {path}: {cause}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The reason.
        cause: serde_json::Error,
    },
    /// The workbook could not be put together (its sheets are built in memory and
    /// in temporary files beside it, then written whole).
    #[error("cannot write {path}: {cause}")]
    Xlsx {
        /// The workbook.
        path: PathBuf,
        /// rust_xlsxwriter's reason.
        cause: rust_xlsxwriter::XlsxError,
    },
    /// Reading sync bookkeeping (which run the data came from) failed.
    #[error("cannot read the sync runs of {db}: {cause}")]
    Runs {
        /// The mirror file.
        db: PathBuf,
        /// The reason.
        cause: Box<crate::mirror::MirrorError>,
    },
    /// A chart of the HTML page could not be drawn.
    #[error("cannot draw the chart {chart} of the HTML report: {message}")]
    Chart {
        /// The chart's id on the page.
        chart: &'static str,
        /// Plotters' reason.
        message: String,
    },
    /// A worker thread died while building a report.
    #[error("report {report}: the worker building it panicked")]
    Panicked {
        /// The report.
        report: String,
    },
    /// The workbook could not be put together: a report's sheets still held it
    /// after every report had finished (a fault of orgledger's, not of the data).
    #[error(
        "the workbook cannot be written: a report's sheets still hold it after the reports finished"
    )]
    WorkbookHeld,
    /// A report stopped because the completeness its rows take could not be read;
    /// the run reports that failure instead.
    #[error("report {report} stopped: the completeness of its rows could not be read")]
    NoCompleteness {
        /// The report.
        report: String,
    },
}

/// The outcome of work run on another thread (or under `catch_unwind`), with a panic
/// reported as `report`'s failure.
pub(crate) fn unpanicked<T>(
    report: &str,
    outcome: std::thread::Result<Result<T, ReportError>>,
) -> Result<T, ReportError> {
    outcome.unwrap_or_else(|_| {
        Err(ReportError::Panicked {
            report: report.to_string(),
        })
    })
}

/// Shorthand: wraps a SQLite error with where the query ran: the report, the SQL
/// (a file, or what it reads) and the part.
pub(crate) fn query_err<'a>(
    report: &'a str,
    file: &'a str,
    part: &'a str,
) -> impl Fn(rusqlite::Error) -> ReportError + 'a {
    move |cause| ReportError::Query {
        site: SqlSite::boxed(report, file, part),
        cause,
    }
}

/// Shorthand: wraps a polars error with the report and step it happened in.
pub(crate) fn pl(
    report: &str,
    step: &'static str,
) -> impl FnOnce(polars::prelude::PolarsError) -> ReportError {
    let report = report.to_string();
    move |cause| ReportError::Polars {
        report,
        step,
        cause,
    }
}
