//! `export`: the mirror's tables as Parquet files for warehouses and query engines.
//!
//! Each table goes to `<out>/<table>/part-0.parquet`; daily metrics, the one large
//! table, go to Hive-style partitions by month (`month=2026-11/part-0.parquet`).
//! Columns and their types come from the table specs (`mirror::spec`): integers
//! Int64, booleans Boolean, timestamps UTC instants, every column nullable. Rows are
//! read through the as-of views (`mirror::asof`): the state at the end of a day, or
//! with `history` every version with its validity columns. A table is read in
//! bounded chunks, each written as a row group, so memory does not grow with the
//! mirror. `_manifest.json` is written last and names every file with its rows and
//! SHA-256; files of an earlier export that this one did not write are removed, so
//! the folder always holds exactly one export.
//!
//! With `since`, the export adds the changes of the sync runs after a given one to
//! an append-only dataset under `<out>/history/` instead ([`incremental`]). With a
//! `store`, either set is written to a staging folder and published to the object
//! store, manifest last (`output::store`).

mod chunk;
mod columns;
mod error;
mod incremental;

pub use error::ExportError;

use crate::mirror::asof;
use crate::mirror::spec::{TABLES, TableSpec};
use crate::output::parquet::{self, Finished, Part, PartError};
use crate::output::{Published, Store, StoreUrl};
use chrono::NaiveDate;
use chunk::{Chunk, RowError};
use columns::TablePlan;
use rusqlite::Connection;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The mirror.
    pub db: PathBuf,
    /// The export folder (`<out>/<table>/...`, `<out>/_manifest.json`).
    pub out: PathBuf,
    /// The state at the end of this day (UTC); None: everything the mirror holds now.
    pub as_of: Option<NaiveDate>,
    /// Tables to export; empty = every mirror table.
    pub tables: Vec<String>,
    /// Every version of every row, with `valid_from`, `valid_to` and `removed_at`.
    pub history: bool,
    /// The mode of the files written and of the folders created for them.
    pub file_mode: crate::file_mode::FileMode,
    /// An object store to publish to; `out` is then not used.
    pub store: Option<StoreUrl>,
    /// Add the changes of the sync runs after this one to the incremental history
    /// (`<out>/history/`) instead of exporting the state.
    pub since: Option<Since>,
}

/// Where an incremental export starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// After this sync run.
    Run(i64),
    /// After the last run the destination's incremental manifest records (from the
    /// beginning when there is none).
    Previous,
}

/// The folder (or prefix) of the incremental history under the export's.
pub const HISTORY_DIR: &str = "history";
/// The manifest of an export set.
pub const MANIFEST: &str = "_manifest.json";

/// One file written.
#[derive(Debug, Clone)]
pub struct ExportedFile {
    /// The table it holds.
    pub table: &'static str,
    /// Its path relative to the export folder.
    pub file: String,
    /// Data rows.
    pub rows: usize,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// What an export produced.
#[derive(Debug)]
pub struct ExportOutcome {
    /// The folder written: the export folder, or for a store the staging folder
    /// (removed once published).
    pub dir: PathBuf,
    /// Where the set is, as shown to the user: the folder, or the store URL.
    pub location: String,
    /// What was uploaded, for a store.
    pub published: Option<Published>,
    /// The Parquet files, table by table.
    pub files: Vec<ExportedFile>,
    /// `_manifest.json`.
    pub manifest: PathBuf,
    /// The sync run the data came from (the latest finished run before the cut-off;
    /// for an incremental export, the last run it includes).
    pub run_id: Option<i64>,
}

impl ExportedFile {
    /// Its entry in a manifest.
    fn entry(&self) -> serde_json::Value {
        serde_json::json!({
            "table": self.table,
            "file": self.file,
            "rows": self.rows,
            "bytes": self.bytes,
            "sha256": self.sha256,
        })
    }
}

impl ExportOutcome {
    /// Rows written in all files.
    pub fn rows(&self) -> usize {
        self.files.iter().map(|f| f.rows).sum()
    }
}

/// The names of the tables `export` writes.
pub fn table_names() -> Vec<&'static str> {
    TABLES.iter().map(|t| t.name).collect()
}

/// Rows per row group: large enough for good compression, small enough that a chunk
/// of the widest table stays a few tens of MB.
const ROW_GROUP: usize = 65_536;
/// Rows held across the partitions of a table before all of them are written out.
const MAX_BUFFERED: usize = 196_608;
/// The as-of day that stands for "now": every mirror timestamp is before its end.
const LATEST: NaiveDate = NaiveDate::from_ymd_opt(9999, 12, 30).expect("valid date");

/// Exports the mirror; see [`ExportOptions`].
pub fn run(opts: &ExportOptions) -> Result<ExportOutcome, ExportError> {
    let Some(url) = &opts.store else {
        return match opts.since {
            None => write_state(opts, &opts.out),
            Some(since) => {
                let root = opts.out.join(HISTORY_DIR);
                let previous = incremental::read_local(&root)?;
                incremental::write(opts, &root, since, previous.as_ref())
            }
        };
    };
    let url = match opts.since {
        None => url.clone(),
        Some(_) => url.join(HISTORY_DIR),
    };
    // Opened first: a store that cannot be used fails before the mirror is read.
    let store = Store::open(&url, opts.file_mode)?;
    let staging =
        crate::output::staging::Staging::beside(&opts.db).map_err(|cause| ExportError::Io {
            path: crate::output::staging::root(&opts.db),
            cause,
        })?;
    let (mut outcome, listed) = match opts.since {
        None => (write_state(opts, staging.path())?, Vec::new()),
        Some(since) => {
            let previous = incremental::read_store(&store)?;
            let outcome = incremental::write(opts, staging.path(), since, previous.as_ref())?;
            (outcome, incremental::files_of(previous.as_ref()))
        }
    };
    // Every table's folder: the prefix holds exactly the set the manifest lists (an
    // export of fewer tables leaves no older files of the others behind).
    let sweep: Vec<String> = table_names().into_iter().map(str::to_string).collect();
    outcome.published = Some(store.publish(staging.path(), MANIFEST, &sweep, &listed)?);
    outcome.location = url.to_string();
    Ok(outcome)
}

/// Exports the state (or every version) into `out`; see [`ExportOptions`].
fn write_state(opts: &ExportOptions, out: &Path) -> Result<ExportOutcome, ExportError> {
    let specs = select(&opts.tables)?;
    let conn = crate::mirror::open_ro(&opts.db)?;
    if let Some(day) = opts.as_of {
        crate::mirror::coverage::check(&conn, &opts.db, day, chrono::Utc::now().date_naive())?;
    }
    let cutoff = asof::cutoff(opts.as_of.unwrap_or(LATEST));
    let read_err = |table| {
        let db = opts.db.clone();
        move |cause| ExportError::Read { db, table, cause }
    };
    asof::install(&conn, opts.as_of.unwrap_or(LATEST)).map_err(read_err("(as-of views)"))?;
    let run = crate::mirror::runs::latest_before(&conn, &cutoff)?;
    opts.file_mode
        .create_dir_all(out)
        .map_err(|cause| ExportError::Io {
            path: out.to_path_buf(),
            cause,
        })?;
    let mut files = Vec::new();
    let mut tables = Vec::new();
    for spec in specs {
        let plan = TablePlan::new(spec, opts.history);
        let written = export_table(&conn, opts, &plan, &out.join(spec.name), "part-0")?;
        let rows: usize = written.iter().map(|f| f.rows).sum();
        tables.push(serde_json::json!({
            "table": spec.name,
            "rows": rows,
            "files": written.len(),
            "partitioned_by": plan.partition.map(|(_, key, _)| key),
        }));
        for f in written {
            files.push(ExportedFile {
                table: spec.name,
                file: relative(out, &f.path),
                rows: f.rows,
                bytes: f.bytes,
                sha256: f.sha256,
            });
        }
    }
    let manifest = write_manifest(opts, out, &cutoff, run.as_ref(), &tables, &files)?;
    Ok(ExportOutcome {
        dir: out.to_path_buf(),
        location: out.display().to_string(),
        published: None,
        files,
        manifest,
        run_id: run.map(|(id, _)| id),
    })
}

/// The specs asked for, in mirror order (all when none are named).
fn select(names: &[String]) -> Result<Vec<&'static TableSpec>, ExportError> {
    for name in names {
        if !TABLES.iter().any(|t| t.name == name) {
            return Err(ExportError::UnknownTable {
                name: name.clone(),
                valid: table_names().join(", "),
            });
        }
    }
    Ok(TABLES
        .iter()
        .copied()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
        .collect())
}

/// The chunks of one table waiting to be written, by partition ("" when the table
/// is not partitioned), and the files they go to.
struct TableWriter<'a> {
    plan: &'a TablePlan,
    dir: PathBuf,
    /// The name of each file, without `.parquet`.
    stem: &'a str,
    mode: crate::file_mode::FileMode,
    schema: polars::prelude::Schema,
    chunks: BTreeMap<String, Chunk>,
    parts: BTreeMap<String, Part>,
    buffered: usize,
}

impl TableWriter<'_> {
    fn path(&self, partition: &str) -> PathBuf {
        let file = format!("{}.parquet", self.stem);
        match self.plan.partition {
            Some((_, key, _)) => self.dir.join(format!("{key}={partition}")).join(file),
            None => self.dir.join(file),
        }
    }

    fn push(&mut self, partition: &str, row: &rusqlite::Row<'_>) -> Result<(), RowError> {
        if !self.chunks.contains_key(partition) {
            let chunk = Chunk::new(self.plan.spec.name, &self.plan.columns, ROW_GROUP);
            self.chunks.insert(partition.to_string(), chunk);
        }
        let Some(chunk) = self.chunks.get_mut(partition) else {
            return Ok(());
        };
        chunk.push(row)?;
        self.buffered += 1;
        if chunk.rows() >= ROW_GROUP {
            self.flush(partition).map_err(RowError::Export)?;
        } else if self.buffered >= MAX_BUFFERED {
            self.flush_all().map_err(RowError::Export)?;
        }
        Ok(())
    }

    fn flush(&mut self, partition: &str) -> Result<(), ExportError> {
        let Some(chunk) = self.chunks.get_mut(partition) else {
            return Ok(());
        };
        if chunk.rows() == 0 {
            return Ok(());
        }
        self.buffered -= chunk.rows();
        let df = chunk.take();
        if !self.parts.contains_key(partition) {
            let part =
                Part::create(&self.path(partition), &self.schema, self.mode).map_err(part_error)?;
            self.parts.insert(partition.to_string(), part);
        }
        if let Some(part) = self.parts.get_mut(partition) {
            part.write(&df).map_err(part_error)?;
        }
        Ok(())
    }

    fn flush_all(&mut self) -> Result<(), ExportError> {
        let keys: Vec<String> = self.chunks.keys().cloned().collect();
        keys.iter().try_for_each(|k| self.flush(k))
    }

    /// Writes what is left and closes every file; a table without rows still gets
    /// one (empty) file unless it is partitioned.
    fn finish(mut self) -> Result<Vec<Finished>, ExportError> {
        self.flush_all()?;
        if self.parts.is_empty() && self.plan.partition.is_none() {
            let mut part =
                Part::create(&self.path(""), &self.schema, self.mode).map_err(part_error)?;
            part.write(&parquet::empty(&self.schema))
                .map_err(part_error)?;
            self.parts.insert(String::new(), part);
        }
        let finished = std::mem::take(&mut self.parts)
            .into_values()
            .map(|p| p.finish().map_err(part_error))
            .collect::<Result<Vec<_>, _>>()?;
        // The incremental history only ever adds files.
        if matches!(
            self.plan.rows,
            columns::Rows::Current | columns::Rows::History
        ) {
            prune(&self.dir, &finished)?;
        }
        Ok(finished)
    }
}

fn part_error(e: PartError) -> ExportError {
    match e {
        PartError::Io(path, cause) => ExportError::Io { path, cause },
        PartError::Polars(path, cause) => ExportError::Parquet { path, cause },
    }
}

/// Reads one table and writes its files into `dir`, each named `<stem>.parquet`.
fn export_table(
    conn: &Connection,
    opts: &ExportOptions,
    plan: &TablePlan,
    dir: &Path,
    stem: &str,
) -> Result<Vec<Finished>, ExportError> {
    let table = plan.spec.name;
    let read = |cause| ExportError::Read {
        db: opts.db.clone(),
        table,
        cause,
    };
    let started = std::time::Instant::now();
    let mut writer = TableWriter {
        plan,
        dir: dir.to_path_buf(),
        stem,
        mode: opts.file_mode,
        schema: plan.schema(),
        chunks: BTreeMap::new(),
        parts: BTreeMap::new(),
        buffered: 0,
    };
    let mut stmt = conn.prepare(&plan.sql()).map_err(read)?;
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(read)? {
        let pushed = match plan.partition {
            Some((i, _, len)) => {
                let value = row.get_ref(i).map_err(read)?;
                writer.push(period_of(value, len), row)
            }
            None => writer.push("", row),
        };
        pushed.map_err(|e| match e {
            RowError::Sqlite(cause) => read(cause),
            RowError::Export(e) => e,
        })?;
    }
    let finished = writer.finish()?;
    tracing::debug!(
        table,
        files = finished.len(),
        rows = finished.iter().map(|f| f.rows).sum::<usize>(),
        ms = started.elapsed().as_millis() as u64,
        "table exported"
    );
    Ok(finished)
}

/// The `YYYY-MM` (`len` 7) or `YYYY-MM-DD` (10) of a day or timestamp text; Hive's
/// name for "no value" otherwise.
fn period_of(value: rusqlite::types::ValueRef<'_>, len: usize) -> &str {
    const UNKNOWN: &str = "__HIVE_DEFAULT_PARTITION__";
    let date_like = |t: &[u8]| {
        t.iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
    };
    match value {
        rusqlite::types::ValueRef::Text(t) if t.len() >= len && date_like(&t[..len]) => {
            std::str::from_utf8(&t[..len]).unwrap_or(UNKNOWN)
        }
        _ => UNKNOWN,
    }
}

/// Removes the Parquet files under a table's folder that this export did not write
/// (a month an earlier export had and this as-of date does not), and partition
/// folders left empty. Only `part-*.parquet` files and `key=value` folders are
/// touched: anything else a user put there stays.
fn prune(dir: &Path, written: &[Finished]) -> Result<(), ExportError> {
    let keep: HashSet<&Path> = written.iter().map(|f| f.path.as_path()).collect();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| ExportError::Io { path, cause }
    };
    let is_part = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"))
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir()
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains('='))
        {
            for inner in std::fs::read_dir(&path).map_err(io(&path))? {
                let file = inner.map_err(io(&path))?.path();
                if is_part(&file) && !keep.contains(file.as_path()) {
                    std::fs::remove_file(&file).map_err(io(&file))?;
                }
            }
            // Fails (and is left) when the folder still holds something.
            let _ = std::fs::remove_dir(&path);
        } else if is_part(&path) && !keep.contains(path.as_path()) {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// `path` relative to `root`, with `/` separators.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn write_manifest(
    opts: &ExportOptions,
    out: &Path,
    cutoff: &str,
    run: Option<&(i64, String)>,
    tables: &[serde_json::Value],
    files: &[ExportedFile],
) -> Result<PathBuf, ExportError> {
    let path = out.join(MANIFEST);
    let entries: Vec<serde_json::Value> = files.iter().map(ExportedFile::entry).collect();
    let manifest = serde_json::json!({
        "format": "parquet",
        "as_of": opts.as_of.map(|d| d.format("%Y-%m-%d").to_string()),
        "cutoff": opts.as_of.map(|_| cutoff),
        "history": opts.history,
        "run_id": run.map(|(id, _)| *id),
        "observed_at": run.map(|(_, at)| at.clone()),
        "generated_at": crate::mirror::now_text(),
        "tables": tables,
        "files": entries,
    });
    crate::output::write_json(&path, &manifest, opts.file_mode).map_err(|cause| {
        ExportError::Io {
            path: path.clone(),
            cause,
        }
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tables_are_refused_with_the_valid_names() {
        let err = select(&["daily_metric".to_string()]).expect_err("typo");
        let text = err.to_string();
        assert!(text.contains("\"daily_metric\""), "{text}");
        assert!(text.contains("daily_metrics"), "{text}");
        let picked = select(&["users".to_string(), "organizations".to_string()]).expect("valid");
        let names: Vec<&str> = picked.iter().map(|t| t.name).collect();
        assert_eq!(names, ["organizations", "users"]);
    }

    #[test]
    fn months_come_from_day_texts() {
        use rusqlite::types::ValueRef;
        assert_eq!(period_of(ValueRef::Text(b"2026-11-30"), 7), "2026-11");
        assert_eq!(
            period_of(ValueRef::Text(b"2026-11-30T05:00:00.000Z"), 10),
            "2026-11-30"
        );
        assert_eq!(period_of(ValueRef::Null, 7), "__HIVE_DEFAULT_PARTITION__");
        assert_eq!(
            period_of(ValueRef::Text(b"11/30/2026"), 7),
            "__HIVE_DEFAULT_PARTITION__"
        );
    }
}
