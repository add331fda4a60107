//! What a built-in report is, declared once in its own module: its name, its
//! extract, its columns, its job, what its rows' completeness reads and how one of
//! its rows is named in the attention list, and whether the steps after the files
//! (pages, workbook, alerts, summary) read it back. The engine, the registry and
//! every reader take these facts from the declaration; none names a report.
//!
//! ```ignore
//! pub const NAME: ReportName = ReportName::new("trials");
//! pub(crate) const REPORT: Report = Report::new(NAME, ABOUT, SQL, COLUMNS, build).kept();
//! ```

use crate::report::Ctx;
use crate::report::batches::Emit;
use crate::report::completeness::RowSources;
use crate::report::error::ReportError;
use crate::report::tables::TableError;
use polars::prelude::DataFrame;

/// A built-in report's name: the file names of its outputs and what the command
/// line takes. Each report's module holds its one constant; readers name a report
/// through it, never by a string of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReportName(&'static str);

impl ReportName {
    /// The name `name` (letters, digits and `_`, as file names take them).
    pub const fn new(name: &'static str) -> Self {
        ReportName(name)
    }

    /// The name as text.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for ReportName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl AsRef<str> for ReportName {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl PartialEq<str> for ReportName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<ReportName> for str {
    fn eq(&self, other: &ReportName) -> bool {
        self == other.0
    }
}

impl PartialEq<ReportName> for String {
    fn eq(&self, other: &ReportName) -> bool {
        self == other.0
    }
}

/// A report's job: its rows from its extract, handed to `emit` in batches, in
/// output order (a report the size of the organizations may hand over one).
pub(crate) type Job = fn(&Ctx<'_>, &mut Emit<'_>) -> Result<(), ReportError>;

/// What a row is about, as the attention list names one of a report's incomplete
/// rows (`organization 902 (Name) compute_seconds`): asked only for those rows.
pub(crate) type Describe =
    for<'a> fn(&'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError>;

/// The completeness columns of a report whose rows carry them: which input each
/// row's figures read (`crate::report::completeness`), and how the attention list
/// names a row whose figures lack one.
#[derive(Clone, Copy)]
pub(crate) struct Complete {
    pub sources: RowSources,
    pub describe: Describe,
}

/// One built-in report.
pub struct Report {
    /// Its name.
    pub name: ReportName,
    /// What it holds, in a line (`orgledger report --help`).
    pub about: &'static str,
    /// The shipped extract, `queries/<name>.sql`.
    pub(crate) sql: &'static str,
    /// Its own columns, in file order (the completeness columns follow them); the
    /// engine takes these, in this order, from each batch the job hands over.
    pub columns: &'static [&'static str],
    /// The job.
    pub(crate) job: Job,
    /// Set when its rows carry the completeness columns.
    pub(crate) complete: Option<Complete>,
    /// Whether the steps after the files read its table back (kept for the rest of
    /// the run, in memory or on disk by its size: `crate::report::kept`).
    pub(crate) kept: bool,
    /// Relative cost (lowest first): the heaviest reports start first, so a run
    /// ends when its longest report does.
    pub(crate) cost: u8,
    /// The threads the job keeps busy: one, or its own readers' too.
    pub(crate) threads: usize,
}

impl Report {
    /// A report whose rows carry no completeness columns, read back by nobody,
    /// of the lowest cost, on one thread; the methods below say otherwise.
    pub(crate) const fn new(
        name: ReportName,
        about: &'static str,
        sql: &'static str,
        columns: &'static [&'static str],
        job: Job,
    ) -> Report {
        Report {
            name,
            about,
            sql,
            columns,
            job,
            complete: None,
            kept: false,
            cost: u8::MAX - 1,
            threads: 1,
        }
    }

    /// Its rows carry the completeness columns: `sources` says which input each
    /// row reads, `describe` what a row is about.
    pub(crate) const fn complete(mut self, sources: RowSources, describe: Describe) -> Report {
        self.complete = Some(Complete { sources, describe });
        self
    }

    /// The steps after the files read its table back.
    pub(crate) const fn kept(mut self) -> Report {
        self.kept = true;
        self
    }

    /// Its relative cost: lower starts first.
    pub(crate) const fn cost(mut self, cost: u8) -> Report {
        self.cost = cost;
        self
    }

    /// The threads its job keeps busy.
    pub(crate) const fn threads(mut self, threads: usize) -> Report {
        self.threads = threads;
        self
    }
}
