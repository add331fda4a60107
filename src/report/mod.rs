//! The reports: SQL extracts over the mirror (as of a date), polars jobs for the
//! derived columns, and CSV/JSON files with a manifest.
//!
//! Each built-in report is an entry of [`registry::BUILTIN`]: its extract
//! `queries/<name>.sql` (compiled into the binary) and its job in
//! `src/report/<name>.rs`, where every formula of the report is written, once. Every
//! `<queries>/custom/<name>.sql` becomes a report of its own (the query's result,
//! exported as is). The data dictionary is `reports/README.md`.
//!
//! Reading: the mirror is opened read-only and the as-of views of
//! `mirror::asof` make every table show the state at the end of day T (UTC),
//! so the SQL never mentions history. Reports are built on up to four threads, each
//! with its own read-only connection (SQLite reads are single-threaded per connection).

pub(crate) mod attention;
pub mod changes;
pub(crate) mod cols;
pub(crate) mod completeness;
pub(crate) mod daily;
pub mod error;
pub(crate) mod frame;
pub(crate) mod html;
pub(crate) mod pii;
pub mod registry;
pub(crate) mod sql;
pub(crate) mod status;
pub(crate) mod summary;
pub(crate) mod tables;
pub(crate) mod units;
pub(crate) mod write;
pub(crate) mod xlsx;

mod compute_trends;
mod entitlements;
mod project_compute;
mod trials;
mod usage_summary;

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;

pub use compute_trends::TopUser;
pub use error::ReportError;
pub use summary::summary;

use crate::file_mode::FileMode;
use crate::mirror::asof;
use chrono::NaiveDate;
use frame::Kind;
use polars::prelude::DataFrame;
use rayon::prelude::*;
use registry::Builtin;
use rusqlite::Connection;
use rusqlite::types::Value;
use sql::Extract;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `<name>.csv`: a header line, then one line per row; empty field = unknown.
    Csv,
    /// `<name>.json`: an array of row objects; numbers as numbers, unknown as null.
    Json,
    /// `index.html`: one self-contained page with charts for the whole run (not a
    /// file per report); built by the `report::html` module.
    Html,
    /// `<name>.parquet`: typed columns, zstd-compressed (the writer of `export`).
    Parquet,
    /// `orgledger-<as-of>.xlsx`: one workbook for the whole run, a sheet per report
    /// with typed cells; built by the `report::xlsx` module.
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
        }
    }
}

/// One file written.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    /// The report it holds.
    pub report: String,
    /// Its format.
    pub format: Format,
    /// Where it is.
    pub path: PathBuf,
    /// Data rows.
    pub rows: usize,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// What a run produced.
#[derive(Debug)]
pub struct ReportOutcome {
    /// `out_root/<as_of>`; for a store, the staging folder (removed once published).
    pub dir: PathBuf,
    /// Where the reports are, as shown to the user: the folder, or the store URL.
    pub location: String,
    /// What was uploaded, for a store.
    pub published: Option<crate::output::Published>,
    /// The as-of date.
    pub as_of: NaiveDate,
    /// The sync run the data came from (the latest finished run observed before the
    /// end of the as-of day), if any.
    pub run_id: Option<i64>,
    /// Server time that run observed.
    pub observed_at: Option<String>,
    /// The report files, in report order (`manifest.json` is [`Self::manifest`]).
    pub files: Vec<WrittenFile>,
    /// With the HTML format, a page per organization (`orgs/<id>.html`), by name;
    /// `manifest.json` lists them after `files`.
    pub pages: Vec<WrittenFile>,
    /// `manifest.json`.
    pub manifest: PathBuf,
    /// Each report's table (pseudonymized when `redact_pii`).
    pub frames: BTreeMap<String, DataFrame>,
    /// The rows that need action, read from `frames` once (the summary and the HTML
    /// page both show these).
    pub attention: attention::Attention,
    /// The top compute users of the last 30 days, when `compute_trends` was built.
    pub top_users: Option<Vec<compute_trends::TopUser>>,
}

/// Names of the built-in reports, in the order they are listed ([`registry::BUILTIN`]).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    registry::BUILTIN.iter().map(|b| b.name)
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
}

impl Ctx<'_> {
    pub fn report(&self) -> &str {
        &self.extract.report
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

/// One report to build: a built-in one, or a custom one (its query's result as is).
struct Job {
    name: String,
    extract: Extract,
    builtin: Option<&'static Builtin>,
}

/// Builds the reports and writes their files; see [`ReportOptions`].
pub fn run(opts: &ReportOptions) -> Result<ReportOutcome, ReportError> {
    let day = opts.as_of.format("%Y-%m-%d").to_string();
    let Some(url) = &opts.store else {
        return write_into(opts, &opts.out_root.join(day));
    };
    let url = url.join(&day);
    // Opened first: a store that cannot be used fails before any report is built.
    let store = crate::output::Store::open(&url, opts.file_mode)?;
    let staging = tempfile::Builder::new()
        .prefix("orgledger-reports-")
        .tempdir()
        .map_err(|cause| ReportError::Io {
            path: std::env::temp_dir(),
            cause,
        })?;
    let mut outcome = write_into(opts, staging.path())?;
    // The day's prefix belongs to the run: everything the new manifest does not list
    // goes once it is in place.
    outcome.published =
        Some(store.publish(staging.path(), "manifest.json", &[String::new()], &[])?);
    outcome.location = url.to_string();
    Ok(outcome)
}

/// Builds the reports and writes them into `dir`; see [`run`].
fn write_into(opts: &ReportOptions, dir: &Path) -> Result<ReportOutcome, ReportError> {
    let dir = dir.to_path_buf();
    let jobs = plan(opts, queries_dir(opts).as_deref())?;
    let (formats, per_run) = output_formats(&opts.formats);

    let conn = open(&opts.db, opts.as_of)?;
    crate::mirror::coverage::check(&conn, &opts.db, opts.as_of, chrono::Utc::now().date_naive())?;
    let cutoff = asof::cutoff(opts.as_of);
    let run =
        crate::mirror::runs::latest_before(&conn, &cutoff).map_err(|source| ReportError::Runs {
            db: opts.db.clone(),
            cause: Box::new(source),
        })?;

    opts.file_mode
        .create_dir_all(&dir)
        .map_err(|source| ReportError::Io {
            path: dir.clone(),
            cause: source,
        })?;

    let built = build_all(opts, &jobs, &formats, &dir, conn)?;

    let mut files = Vec::new();
    let mut frames = BTreeMap::new();
    for (name, frame, written) in built {
        files.extend(written);
        frames.insert(name, frame);
    }
    let attention = attention::Attention::from_frames(&frames, opts.as_of)?;
    let top_users = frames
        .get("compute_trends")
        .map(compute_trends::top_users)
        .transpose()?;
    let generated_at = crate::mirror::now_text();
    let info = html::PageInfo {
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.as_ref().map(|(_, at)| at.as_str()),
        generated_at: &generated_at,
        redacted: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    let mut pages = Vec::new();
    // Built from `frames`, which `finish` has already pseudonymized.
    for format in per_run {
        let file = match format {
            Format::Xlsx => xlsx::write(&dir, &info, &frames, &attention, opts.file_mode)?,
            _ => {
                pages = html::org::write_all(opts, &info, &frames, &dir)?;
                html::write(&dir, &info, &frames, &attention, &files, opts.file_mode)?
            }
        };
        files.push(file);
    }
    let head = write::ManifestHead {
        as_of: opts.as_of,
        cutoff: &cutoff,
        run: run.clone(),
        generated_at: &generated_at,
        redacted_pii: opts.redact_pii,
        thresholds: &opts.thresholds,
    };
    let listed: Vec<WrittenFile> = files.iter().chain(&pages).cloned().collect();
    let manifest = write::write_manifest(&dir, &head, &listed, opts.file_mode)?;
    Ok(ReportOutcome {
        location: dir.display().to_string(),
        published: None,
        dir,
        as_of: opts.as_of,
        run_id: run.as_ref().map(|(id, _)| *id),
        observed_at: run.map(|(_, at)| at),
        files,
        pages,
        manifest,
        frames,
        attention,
        top_users,
    })
}

/// Builds reports without writing any file: the tables `run` would export, for
/// readers that want the figures themselves (alerts). Checks the as-of date the
/// same way.
pub(crate) fn frames(opts: &ReportOptions) -> Result<BTreeMap<String, DataFrame>, ReportError> {
    let jobs = plan(opts, queries_dir(opts).as_deref())?;
    let conn = open(&opts.db, opts.as_of)?;
    crate::mirror::coverage::check(&conn, &opts.db, opts.as_of, chrono::Utc::now().date_naive())?;
    let built = build_all(opts, &jobs, &[], Path::new(""), conn)?;
    Ok(built.into_iter().map(|(name, df, _)| (name, df)).collect())
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

/// The per-report formats to write and the once-per-run ones (the HTML page, the
/// workbook: written after the report files), each without duplicates, in the
/// order asked.
fn output_formats(asked: &[Format]) -> (Vec<Format>, Vec<Format>) {
    let asked = if asked.is_empty() {
        &[Format::Csv, Format::Json][..]
    } else {
        asked
    };
    let (mut per_report, mut per_run) = (Vec::new(), Vec::new());
    for &f in asked {
        let out = if f.per_run() {
            &mut per_run
        } else {
            &mut per_report
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    (per_report, per_run)
}

/// The views every extract reads: the mirror as of `as_of` (`mirror::asof`), then
/// who owns what (`queries/attribution.sql`), defined once for the extracts that
/// attribute projects and developer profiles. Calling it again moves the cut-off.
pub(crate) fn install_views(conn: &Connection, as_of: NaiveDate) -> rusqlite::Result<()> {
    asof::install(conn, as_of)?;
    conn.execute_batch(include_str!("../../queries/attribution.sql"))?;
    conn.execute_batch(
        &include_str!("../../queries/completeness.sql").replace("{cutoff}", &asof::cutoff(as_of)),
    )
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

type Built = (String, DataFrame, Vec<WrittenFile>);

/// Builds and writes every job; results come back in job order.
///
/// The jobs run on a pool of up to four threads, the heaviest first, each on a
/// read-only connection of its own (SQLite reads are single-threaded per
/// connection), while the completeness every built-in report's rows take is read
/// once on `first_conn`. Then each report gets its completeness columns, its
/// pseudonyms and its files, again in parallel.
fn build_all(
    opts: &ReportOptions,
    jobs: &[Job],
    formats: &[Format],
    dir: &Path,
    first_conn: Connection,
) -> Result<Vec<Built>, ReportError> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| cost(&jobs[i]));
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4)
        .min(jobs.len().max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("report-{i}"))
        .build()
        .map_err(|e| ReportError::Io {
            path: dir.to_path_buf(),
            cause: std::io::Error::other(format!("cannot start the report threads: {e}")),
        })?;
    let (complete, frames) = pool.join(
        move || completeness::Completeness::read(&first_conn, opts.as_of),
        || {
            order
                .par_iter()
                .with_max_len(1)
                .map(|&i| guarded(&jobs[i].name, || build_frame(opts, &jobs[i])).map(|df| (i, df)))
                .collect::<Result<Vec<_>, _>>()
        },
    );
    let (complete, mut frames) = (complete?, frames?);
    frames.sort_by_key(|(i, _)| *i);
    pool.install(|| {
        frames
            .into_par_iter()
            .map(|(i, df)| {
                let job = &jobs[i];
                guarded(&job.name, || {
                    finish(opts, job, df, &complete, (formats, dir))
                })
            })
            .collect()
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

/// `work` over a read-only connection of its own and a context as of `as_of`
/// (the run's day, or another for the history on the organization pages).
pub(crate) fn with_ctx_as_of<T>(
    opts: &ReportOptions,
    extract: &Extract,
    as_of: NaiveDate,
    work: impl FnOnce(&Ctx<'_>) -> Result<T, ReportError>,
) -> Result<T, ReportError> {
    let conn = open(&opts.db, as_of)?;
    work(&Ctx {
        conn: &conn,
        db: &opts.db,
        as_of,
        today: crate::calendar::day_of(as_of),
        thresholds: &opts.thresholds,
        extract,
    })
}

/// A job's table, from a connection of its own.
fn build_frame(opts: &ReportOptions, job: &Job) -> Result<DataFrame, ReportError> {
    let started = std::time::Instant::now();
    let df = with_ctx_as_of(opts, &job.extract, opts.as_of, |ctx| match job.builtin {
        Some(builtin) => (builtin.build)(ctx),
        None => custom(ctx),
    })?;
    tracing::debug!(
        report = %job.name,
        rows = df.height(),
        built_ms = started.elapsed().as_millis() as u64,
        "report built"
    );
    Ok(df)
}

/// A built table with its completeness columns and pseudonyms, written in
/// `formats` into `dir`.
fn finish(
    opts: &ReportOptions,
    job: &Job,
    mut df: DataFrame,
    complete: &completeness::Completeness,
    (formats, dir): (&[Format], &Path),
) -> Result<Built, ReportError> {
    if let Some(sources) = job.builtin.and_then(|b| b.completeness) {
        df = complete.attach(&job.name, sources, df)?;
    }
    if opts.redact_pii {
        let names = pii::Pseudonyms::of_mirror(&opts.db)?;
        df = pii::redact(&names, &job.name, df, job.builtin.is_none())?;
    }
    let files = write_formats(dir, &job.name, &df, formats, opts.file_mode)?;
    Ok((job.name.clone(), df, files))
}

/// Writes one report in every format; big reports write their formats in parallel.
fn write_formats(
    dir: &Path,
    name: &str,
    df: &DataFrame,
    formats: &[Format],
    mode: FileMode,
) -> Result<Vec<WrittenFile>, ReportError> {
    const PARALLEL_ABOVE: usize = 50_000;
    if formats.len() < 2 || df.height() < PARALLEL_ABOVE {
        return formats
            .iter()
            .map(|f| write::write_report(dir, name, df, *f, mode))
            .collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = formats
            .iter()
            .map(|f| scope.spawn(move || write::write_report(dir, name, df, *f, mode)))
            .collect();
        handles
            .into_iter()
            .map(|h| error::unpanicked(name, h.join()))
            .collect()
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
