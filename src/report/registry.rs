//! The built-in reports, one entry each: what the report run builds and in which
//! order, the names `report`, the daemon's config and `--help` accept, and what the
//! benchmark measures all come from [`BUILTIN`]. Adding a built-in report is an entry
//! here, its module (the job, and its rows' `row_sources` if they carry the
//! completeness columns), its `queries/<name>.sql` (the extract), and its columns in
//! `reports/README.md`.

use crate::report::batches::Emit;
use crate::report::completeness::RowSources;
use crate::report::error::ReportError;
use crate::report::{
    Ctx, changes, compute_trends, entitlements, project_compute, trials, usage_summary,
};
use polars::prelude::DataFrame;

/// One built-in report.
pub struct Builtin {
    /// Its name: the file names of its outputs, and what the command line takes.
    pub name: &'static str,
    /// What it holds, in a line (`orgledger report --help`).
    pub about: &'static str,
    /// The shipped extract, `queries/<name>.sql`.
    pub(crate) sql: &'static str,
    /// The job: the report's table from the extract's sections.
    pub(crate) build: Build,
    /// Which input each row depends on, for the completeness columns; None for a
    /// report whose rows do not carry them.
    pub(crate) completeness: Option<RowSources>,
    /// Relative cost (lowest first): the heaviest reports start first, so a run
    /// ends when its longest report does.
    pub(crate) cost: u8,
    /// The threads the job keeps busy: one, or its own readers' too. A job starts
    /// once that many cores are free (`crate::report::cores`).
    pub(crate) threads: usize,
}

/// A job that hands its rows over in batches.
pub(crate) type Rows = fn(&Ctx<'_>, &mut Emit<'_>) -> Result<(), ReportError>;

/// How a job makes its table.
pub(crate) enum Build {
    /// The whole table at once: reports the size of the organizations, projects,
    /// trials or changes.
    Table(fn(&Ctx<'_>) -> Result<DataFrame, ReportError>),
    /// The table in batches, in output order, kept on disk
    /// (`crate::report::spill`): reports the size of the projects, which the later
    /// readers take a slice or a range of organizations at a time.
    Spilled(Rows),
    /// The table in batches, in output order, never held whole: the run keeps its
    /// digest. Reports the size of the users times their periods
    /// (`crate::report::batches`).
    Digested(Rows),
}

/// The built-in reports, in the order they are listed and written.
pub const BUILTIN: &[Builtin] = &[
    Builtin {
        name: "entitlements",
        about: "each organization's limits: used, limit, share and status, with projections",
        sql: include_str!("../../queries/entitlements.sql"),
        build: Build::Table(entitlements::build),
        completeness: Some(entitlements::row_sources),
        cost: 2,
        threads: 1,
    },
    Builtin {
        name: "trials",
        about: "white label users' trials: days left and status",
        sql: include_str!("../../queries/trials.sql"),
        build: Build::Table(trials::build),
        completeness: None,
        cost: 3,
        threads: 1,
    },
    Builtin {
        name: "project_compute",
        about: "each project's compute used against its budget",
        sql: include_str!("../../queries/project_compute.sql"),
        build: Build::Spilled(project_compute::build),
        completeness: Some(project_compute::row_sources),
        cost: 3,
        threads: 1,
    },
    Builtin {
        name: "compute_trends",
        about: "compute time per user, white label and organization by day, week and month",
        sql: include_str!("../../queries/compute_trends.sql"),
        build: Build::Digested(compute_trends::build),
        completeness: Some(compute_trends::row_sources),
        cost: 0,
        threads: compute_trends::THREADS,
    },
    Builtin {
        name: "usage_summary",
        about: "people, projects and storage per organization and white label, last 7 and 30 days",
        sql: include_str!("../../queries/usage_summary.sql"),
        build: Build::Table(usage_summary::build),
        completeness: Some(usage_summary::row_sources),
        cost: 1,
        threads: 1,
    },
    Builtin {
        name: changes::REPORT,
        about: "what changed in the mirror over the week before the as-of date",
        sql: include_str!("../../queries/changes.sql"),
        build: Build::Table(changes::build),
        completeness: None,
        cost: 3,
        threads: 1,
    },
];

/// The built-in report called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTIN.iter().find(|b| b.name == name)
}

/// The built-in reports as `--help` lists them, a line each.
pub fn help() -> String {
    let width = BUILTIN.iter().map(|b| b.name.len()).max().unwrap_or(0);
    BUILTIN
        .iter()
        .map(|b| format!("  {:width$}  {}", b.name, b.about))
        .collect::<Vec<_>>()
        .join("\n")
}
