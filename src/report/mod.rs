//! The report engine and its jobs: what each number is. SQL extracts over the
//! mirror (as of a date), and the jobs (polars and plain Rust) that compute the
//! derived columns, handed to the renderers (`crate::render`: files, the summary,
//! the page, the workbook) as tables, typed by [`tables`] where rooms meet.
//!
//! Each built-in report is declared once in its module (`src/report/<name>.rs`,
//! [`declaration::Report`]): its extract `queries/<name>.sql` (compiled into the
//! binary), its columns, and its job, where every formula of the report is
//! written, once; [`registry::BUILTIN`] lists the modules. Every
//! `<queries>/custom/<name>.sql` becomes a report of its own (the query's result,
//! exported as is). The data dictionary is `reports/README.md`.
//!
//! Reading: the mirror is opened read-only and the as-of views of
//! `mirror::asof` make every table show the state at the end of day T (UTC),
//! so the SQL never mentions history. Reports are built on up to four threads
//! ([`cores`]: a job starts once the cores it keeps busy are free), each with its
//! own read-only connection (SQLite reads are single-threaded per connection).

pub(crate) mod attention;
pub mod batches;
pub mod changes;
pub(crate) mod cols;
pub(crate) mod completeness;
mod cores;
pub(crate) mod daily;
pub(crate) mod dated;
pub mod declaration;
pub mod error;
pub(crate) mod figure_history;
pub(crate) mod frame;
pub mod kept;
pub(crate) mod org_facts;
pub mod periods;
pub(crate) mod pii;
pub mod registry;
pub mod spill;
pub(crate) mod sql;
pub(crate) mod status;
pub(crate) mod tables;
pub(crate) mod units;

pub mod compute_trends;
pub mod entitlements;
pub mod project_compute;
pub mod storage_trends;
pub mod trials;
pub mod usage_summary;

#[cfg(test)]
mod explain;
#[cfg(test)]
pub(crate) mod testkit;

pub use batches::Sink;
pub use compute_trends::TopUser;
pub use declaration::{Report, ReportName};
pub use error::ReportError;
pub use kept::{KeptTable, KeptTables};

use crate::file_mode::FileMode;
use crate::mirror::asof;
use chrono::NaiveDate;
use frame::Kind;
use polars::prelude::DataFrame;
use rusqlite::Connection;
use rusqlite::types::Value;
use sql::Extract;
use std::path::{Path, PathBuf};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `<name>.csv`: a header line, then one line per row; empty field = unknown.
    Csv,
    /// `<name>.json`: an array of row objects; numbers as numbers, unknown as null.
    Json,
    /// `index.html`: one self-contained page with charts for the whole run (not a
    /// file per report); built by `render::html`.
    Html,
    /// `<name>.parquet`: typed columns, zstd-compressed (the writer of `export`).
    Parquet,
    /// `orgledger-<as-of>.xlsx`: one workbook for the whole run, a sheet per report
    /// with typed cells; built by `render::xlsx`.
    Xlsx,
}

impl Format {
    /// File extension (and the name used on the command line).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Html => "html",
            Format::Parquet => "parquet",
            Format::Xlsx => "xlsx",
        }
    }

    /// Whether the format is one file for the whole run (written after the report
    /// files, from all of them) rather than a file per report.
    pub fn per_run(self) -> bool {
        matches!(self, Format::Html | Format::Xlsx)
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "html" => Ok(Format::Html),
            "parquet" => Ok(Format::Parquet),
            "xlsx" => Ok(Format::Xlsx),
            other => Err(format!(
                "unknown format {other:?}; valid formats: csv, json, html, parquet, xlsx"
            )),
        }
    }
}

/// The thresholds of the status rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// `entitlements`: `warning` from this percentage of a limit (default 80).
    pub warning_pct: f64,
    /// `entitlements`: `exceeded` from this percentage (default 100).
    pub exceeded_pct: f64,
    /// `trials`: `expiring` when the expiration is at most this many days ahead (default 14).
    pub expiring_days: i64,
    /// `project_compute`: `flagged` from this percentage of the compute budget (default 80).
    pub flag_pct: f64,
    /// `usage_summary`: a project is stale when last accessed more than this many days
    /// before the as-of date (default 90).
    pub stale_days: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            warning_pct: 80.0,
            exceeded_pct: 100.0,
            expiring_days: 14,
            flag_pct: 80.0,
            stale_days: 90,
        }
    }
}

/// What to build and where.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The mirror.
    pub db: PathBuf,
    /// Reports to build; empty = every built-in and custom report.
    pub names: Vec<String>,
    /// The as-of date T: reports read the mirror as it stood at the end of day T (UTC).
    pub as_of: NaiveDate,
    /// Formats to write; empty = CSV and JSON.
    pub formats: Vec<Format>,
    /// Files go to `out_root/<as_of>/`.
    pub out_root: PathBuf,
    /// The queries folder, whose `custom/*.sql` are reports of their own. None:
    /// `./queries` when it exists.
    pub queries_dir: Option<PathBuf>,
    /// Replace e-mail addresses and person names by stable pseudonyms.
    pub redact_pii: bool,
    /// Status thresholds.
    pub thresholds: Thresholds,
    /// The mode of the files written and of the folders created for them.
    pub file_mode: FileMode,
    /// An object store to publish to: files go to `<store>/<as_of>/`, and
    /// `out_root` is not used.
    pub store: Option<crate::output::StoreUrl>,
    /// The estimated size in bytes past which a table the run keeps for the steps
    /// after its files waits on disk instead of in memory ([`kept::MEMORY_PER_TABLE`]).
    pub memory_per_table: usize,
}

impl ReportOptions {
    /// Options with the defaults: all reports, CSV and JSON, into `./reports`.
    pub fn new(db: impl Into<PathBuf>, as_of: NaiveDate) -> Self {
        ReportOptions {
            db: db.into(),
            names: Vec::new(),
            as_of,
            formats: vec![Format::Csv, Format::Json],
            out_root: PathBuf::from("reports"),
            queries_dir: None,
            redact_pii: false,
            thresholds: Thresholds::default(),
            file_mode: FileMode::PRIVATE,
            store: None,
            memory_per_table: kept::MEMORY_PER_TABLE,
        }
    }
}

/// Names of the built-in reports, in the order they are listed ([`registry::BUILTIN`]).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    registry::BUILTIN.iter().map(|b| b.name.as_str())
}

/// What one report job reads: the connection (with as-of views installed), the
/// report's SQL, the as-of date and the thresholds.
pub(crate) struct Ctx<'a> {
    pub conn: &'a Connection,
    pub db: &'a Path,
    pub as_of: NaiveDate,
    /// Day number of the as-of date.
    pub today: i64,
    pub thresholds: &'a Thresholds,
    pub extract: &'a Extract,
    /// How to read the same on another connection.
    reading: Reading<'a>,
}

/// A job's reading without its connection: what another thread needs to read
/// like a job's [`Ctx`] on a connection of its own (a connection is not shared
/// between threads), or the same job's reading as of another date.
#[derive(Clone, Copy)]
pub(crate) struct Reading<'a> {
    pub opts: &'a ReportOptions,
    pub extract: &'a Extract,
    pub as_of: NaiveDate,
    /// The run's idle connections as of its day, when there is a run.
    pub idle: Option<&'a Idle>,
}

impl<'a> Reading<'a> {
    /// A reading of `extract` as of `as_of` on connections of its own.
    pub(crate) fn new(opts: &'a ReportOptions, extract: &'a Extract, as_of: NaiveDate) -> Self {
        Reading {
            opts,
            extract,
            as_of,
            idle: None,
        }
    }

    /// Runs `work` with a context over a read-only connection as of the reading's
    /// date: one of the run's idle ones when it has one, else a new one.
    pub(crate) fn run<T>(
        self,
        work: impl FnOnce(&Ctx<'_>) -> Result<T, ReportError>,
    ) -> Result<T, ReportError> {
        let idle = self.idle.filter(|idle| idle.as_of == self.as_of);
        let conn = match idle.and_then(Idle::take) {
            Some(conn) => conn,
            None => open(&self.opts.db, self.as_of)?,
        };
        let done = work(&Ctx {
            conn: &conn,
            db: &self.opts.db,
            as_of: self.as_of,
            today: crate::calendar::day_of(self.as_of),
            thresholds: &self.opts.thresholds,
            extract: self.extract,
            reading: self,
        });
        // A connection whose work failed may be anywhere (another day's views): it
        // goes.
        if let (Some(idle), Ok(_)) = (idle, &done) {
            idle.give(conn);
        }
        done
    }
}

impl<'a> Ctx<'a> {
    pub fn report(&self) -> &str {
        &self.extract.report
    }

    /// This context's reading, for a connection of another thread's.
    pub(crate) fn reading(&self) -> Reading<'a> {
        self.reading
    }

    /// Parameters for a query as of `date`.
    pub(crate) fn params(date: NaiveDate) -> [(&'static str, Value); 2] {
        [
            (":as_of", Value::Text(date.format("%Y-%m-%d").to_string())),
            (":cutoff", Value::Text(asof::cutoff(date))),
        ]
    }

    /// Runs a section of the report's SQL as of T.
    pub fn read(&self, part: &str, needs: &[(&str, Kind)]) -> Result<DataFrame, ReportError> {
        frame::read_part(
            self.conn,
            self.extract,
            part,
            &Self::params(self.as_of),
            needs,
        )
    }

    /// The report's `whitelabels` section, which the trend reports share: each
    /// white label's id and name (`whitelabel_names` in queries/attribution.sql).
    pub(crate) fn read_whitelabels(&self) -> Result<DataFrame, ReportError> {
        let needs = [
            ("whitelabel_id", Kind::Int),
            ("whitelabel_name", Kind::Text),
        ];
        self.read("whitelabels", &needs)
    }

    /// Runs a section of the report's SQL as of T, handing its rows to `each` in
    /// frames of at most [`frame::BATCH_ROWS`] rows ([`frame::read_sql_batches`]).
    pub(crate) fn read_batches(
        &self,
        part: &str,
        needs: &[(&str, Kind)],
        each: &mut dyn FnMut(DataFrame) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let sql = self.extract.part(part)?;
        frame::read_sql_batches(
            self.conn,
            self.extract,
            (part, sql),
            &Self::params(self.as_of),
            needs,
            frame::BATCH_ROWS,
            each,
        )
    }

    /// Runs a section of the report's SQL as of another date (moving the as-of views
    /// there and back).
    pub fn read_as_of(
        &self,
        date: NaiveDate,
        part: &str,
        needs: &[(&str, Kind)],
    ) -> Result<DataFrame, ReportError> {
        self.install(date)?;
        let result = frame::read_part(self.conn, self.extract, part, &Self::params(date), needs);
        self.install(self.as_of)?;
        result
    }

    fn install(&self, date: NaiveDate) -> Result<(), ReportError> {
        install_views(self.conn, date).map_err(|source| ReportError::AsOf {
            db: self.db.to_path_buf(),
            as_of: date,
            cause: source,
        })
    }
}

/// The run's read-only connections as of its day that no job or reader holds: a
/// job takes one when it starts and gives it back when done, so a run opens as many
/// as it keeps busy at once rather than one per job and reader. Opening one installs
/// the as-of, attribution and completeness views, about 50 million instructions
/// (over `large`, a tenth of a run's CPU for the 11 connections it would open).
pub(crate) struct Idle {
    as_of: NaiveDate,
    conns: std::sync::Mutex<Vec<Connection>>,
}

impl Idle {
    fn new(as_of: NaiveDate) -> Idle {
        Idle {
            as_of,
            conns: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Option<Connection> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn give(&self, conn: Connection) {
        self.conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
    }
}

/// One report to build: a built-in one, or a custom one (its query's result as is).
struct Job {
    name: String,
    extract: Extract,
    builtin: Option<&'static Report>,
}

/// A run resolved and checked before anything is built: every name asked for
/// validated, the mirror open as of T with its coverage of T checked, and the sync
/// run the data comes from. A renderer makes its folder between [`Plan::new`] and
/// [`Plan::build`], so a run that cannot start leaves nothing behind.
pub struct Plan<'a> {
    opts: &'a ReportOptions,
    jobs: Vec<Job>,
    conn: Connection,
    /// The as-of date's cut-off (`mirror::asof::cutoff`).
    pub cutoff: String,
    /// The latest finished sync run observed before the cut-off: its id and the
    /// server time it observed.
    pub run: Option<(i64, String)>,
}

/// One built report: its name, its sink (handed back for the renderer to finish),
/// its table when the steps after the files read it back, its rows, and its
/// incomplete rows when it carries `complete`.
pub struct Built<S> {
    pub name: String,
    pub sink: S,
    pub kept: Option<KeptTable>,
    pub rows: usize,
    pub incomplete: Option<Vec<attention::Incomplete>>,
}

/// Which reports' tables a run keeps for the steps after its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Those the later steps read back: as each report declares, and custom ones.
    Declared,
    /// Every report's, for readers that want the figures themselves (alerts, tests).
    All,
}

impl<'a> Plan<'a> {
    /// Resolves and checks the run `opts` asks for; reads nothing of the reports yet.
    pub fn new(opts: &'a ReportOptions) -> Result<Self, ReportError> {
        let jobs = plan(opts, queries_dir(opts).as_deref())?;
        let conn = open(&opts.db, opts.as_of)?;
        let today = chrono::Utc::now().date_naive();
        crate::mirror::coverage::check(&conn, &opts.db, opts.as_of, today)?;
        let cutoff = asof::cutoff(opts.as_of);
        let run = crate::mirror::runs::latest_before(&conn, &cutoff).map_err(|source| {
            ReportError::Runs {
                db: opts.db.clone(),
                cause: Box::new(source),
            }
        })?;
        Ok(Plan {
            opts,
            jobs,
            conn,
            cutoff,
            run,
        })
    }

    /// Builds every report on the report threads, each batch of its rows going to
    /// the sink `open` gives for it as the job makes them (a renderer writes its
    /// files there, while the other reports build); results come back in the order
    /// asked.
    pub fn build<S: Sink + Send>(
        self,
        keep: Keep,
        open: impl Fn(&str) -> Result<S, ReportError> + Sync,
    ) -> Result<Vec<Built<S>>, ReportError> {
        build_all(self.opts, &self.jobs, keep, &open, self.conn)
    }
}

/// Builds reports without writing any file, keeping every table a run would
/// render, for readers that want the figures themselves (alerts, tests).
pub fn tables(opts: &ReportOptions) -> Result<KeptTables, ReportError> {
    let mut tables = KeptTables::default();
    for built in Plan::new(opts)?.build(Keep::All, |_| Ok(()))? {
        tables.extend(built.kept);
    }
    Ok(tables)
}

/// The queries folder: the option, else `./queries` when it exists.
fn queries_dir(opts: &ReportOptions) -> Option<PathBuf> {
    opts.queries_dir
        .clone()
        .or_else(|| Some(PathBuf::from("queries")).filter(|d| d.is_dir()))
}

/// Resolves the names asked for into jobs (validating them) before anything is read.
fn plan(opts: &ReportOptions, queries_dir: Option<&Path>) -> Result<Vec<Job>, ReportError> {
    let custom = sql::custom_reports(queries_dir)?;
    for (name, path) in &custom {
        if registry::find(name).is_some() {
            return Err(ReportError::CustomClash {
                name: name.clone(),
                path: path.clone(),
            });
        }
    }
    let all: Vec<String> = builtin_names()
        .map(str::to_string)
        .chain(custom.iter().map(|(n, _)| n.clone()))
        .collect();
    let mut names: Vec<String> = Vec::new();
    let wanted = if opts.names.is_empty() {
        &all
    } else {
        &opts.names
    };
    for name in wanted {
        if !all.contains(name) {
            return Err(unknown(name, &all));
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
        .into_iter()
        .map(|name| match registry::find(&name) {
            Some(builtin) => Ok(Job {
                extract: sql::builtin(builtin),
                name,
                builtin: Some(builtin),
            }),
            None => {
                let path = custom.iter().find(|(n, _)| *n == name).map(|(_, p)| p);
                Ok(Job {
                    extract: sql::read(&name, path.ok_or_else(|| unknown(&name, &all))?)?,
                    name,
                    builtin: None,
                })
            }
        })
        .collect()
}

fn unknown(name: &str, valid: &[String]) -> ReportError {
    ReportError::UnknownReport {
        name: name.to_string(),
        valid: valid.join(", "),
    }
}

/// The views every extract reads: the mirror as of `as_of` (`mirror::asof`), then
/// who owns what (`queries/attribution.sql`), defined once for the extracts that
/// attribute projects and developer profiles. Calling it again moves the cut-off.
pub(crate) fn install_views(conn: &Connection, as_of: NaiveDate) -> rusqlite::Result<()> {
    asof::install(conn, as_of)?;
    let cutoff = asof::cutoff(as_of);
    conn.execute_batch(
        &include_str!("../../queries/attribution.sql").replace("{cutoff}", &cutoff),
    )?;
    conn.execute_batch(&include_str!("../../queries/completeness.sql").replace("{cutoff}", &cutoff))
}

/// Opens the mirror read-only with the as-of views of `as_of`.
pub(crate) fn open(db: &Path, as_of: NaiveDate) -> Result<Connection, ReportError> {
    let conn = crate::mirror::open_ro(db)?;
    // A report reads each page of the large tables once, so the writer's 32 MB page
    // cache per connection only holds memory (up to six connections read at once);
    // what an extract reads again (small tables, indexes) fits in 8 MB.
    conn.pragma_update(None, "cache_size", -8_000)
        .and_then(|()| install_views(&conn, as_of))
        .map_err(|source| ReportError::AsOf {
            db: db.to_path_buf(),
            as_of,
            cause: source,
        })?;
    Ok(conn)
}

/// Relative cost, so the heaviest report starts first (custom reports last).
fn cost(job: &Job) -> u8 {
    job.builtin.map_or(u8::MAX, |b| b.cost)
}

/// Builds every job; results come back in job order.
///
/// The jobs run on up to four threads, the heaviest first, each once the threads
/// it keeps busy fit in the free cores ([`cores`]), each on a read-only connection
/// of its own (SQLite reads are single-threaded per connection), while the completeness every built-in report's rows take is read
/// once on `first_conn`, on a thread of its own: a job's first batch waits for it.
fn build_all<S: Sink + Send>(
    opts: &ReportOptions,
    jobs: &[Job],
    keep: Keep,
    open: &(impl Fn(&str) -> Result<S, ReportError> + Sync),
    first_conn: Connection,
) -> Result<Vec<Built<S>>, ReportError> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| cost(&jobs[i]));
    let slots: Vec<cores::Slot> = order
        .into_iter()
        .map(|index| cores::Slot {
            index,
            threads: jobs[index].builtin.map_or(1, |b| b.threads),
        })
        .collect();
    let machine = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let complete = batches::Shared::new();
    let (shared, idle) = (&complete, &Idle::new(opts.as_of));
    let (read, built) = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let read = guarded("completeness", || {
                completeness::Completeness::read(&first_conn, opts.as_of)
            });
            let (kept, outcome) = match read {
                Ok(c) => (Some(c), Ok(())),
                Err(e) => (None, Err(e)),
            };
            // Set whatever happened: the jobs wait for it.
            let _ = shared.set(kept);
            idle.give(first_conn);
            outcome
        });
        let built = cores::run("report", machine, &slots, |i| {
            guarded(&jobs[i].name, || {
                build_one(opts, &jobs[i], keep, (&complete, idle), open)
            })
        });
        (error::unpanicked("completeness", reader.join()), built)
    });
    // A job stopped for want of the completeness says less than why it was missing.
    read?;
    let mut built = built?;
    built.sort_by_key(|(i, _)| *i);
    Ok(built.into_iter().map(|(_, b)| b).collect())
}

/// One job, its batches through to its sink, on a connection of its own.
fn build_one<S: Sink>(
    opts: &ReportOptions,
    job: &Job,
    keep: Keep,
    (complete, idle): (&batches::Shared, &Idle),
    open: &impl Fn(&str) -> Result<S, ReportError>,
) -> Result<Built<S>, ReportError> {
    let started = std::time::Instant::now();
    let names = match opts.redact_pii {
        true => Some((pii::Pseudonyms::of_mirror(&opts.db)?, job.builtin.is_none())),
        false => None,
    };
    let mut out = batches::Finisher::new(&job.name, job.builtin, complete, names, open(&job.name)?);
    if keep == Keep::All || job.builtin.is_none_or(|b| b.kept) {
        out = out.keeping(opts.memory_per_table);
    }
    let reading = Reading {
        idle: Some(idle),
        ..Reading::new(opts, &job.extract, opts.as_of)
    };
    reading.run(|ctx| match job.builtin {
        Some(report) => (report.job)(ctx, &mut |batch| out.batch(batch)),
        None => out.batch(custom(ctx)?),
    })?;
    tracing::debug!(
        report = %job.name,
        rows = out.rows,
        built_ms = started.elapsed().as_millis() as u64,
        "report built"
    );
    Ok(Built {
        name: job.name.clone(),
        kept: out.finish()?,
        sink: out.sink,
        rows: out.rows,
        incomplete: out.incomplete.map(attention::IncompleteRows::finish),
    })
}

/// `work`'s outcome, with a panic reported as `report`'s failure.
fn guarded<T>(
    report: &str,
    work: impl FnOnce() -> Result<T, ReportError>,
) -> Result<T, ReportError> {
    error::unpanicked(
        report,
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)),
    )
}

/// The extract of the built-in report `name`.
pub(crate) fn builtin_extract(name: &str) -> Result<Extract, ReportError> {
    registry::find(name).map(sql::builtin).ok_or_else(|| {
        let valid: Vec<String> = builtin_names().map(str::to_string).collect();
        unknown(name, &valid)
    })
}

/// A custom report: its (first) statement's result, as is.
fn custom(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let (part, sql) = ctx
        .extract
        .parts
        .first()
        .ok_or_else(|| ReportError::MissingPart {
            report: ctx.extract.report.clone(),
            file: ctx.extract.origin.clone(),
            part: "main".to_string(),
        })?;
    frame::read_sql(
        ctx.conn,
        ctx.extract,
        part,
        sql,
        &Ctx::params(ctx.as_of),
        &[],
    )
}
