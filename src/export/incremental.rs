//! The incremental history (`export --since run:N`, `[export] incremental`): an
//! append-only dataset of the changes each sync run made, so a daily export adds a
//! day's files and never rewrites the year before it.
//!
//! Each increment covers the finished sync runs after the starting one, up to the
//! latest finished run, and writes `<table>/changed_on=YYYY-MM-DD/run-<last>.parquet`
//! (the day of the change, UTC). A row is a change: a version that a run made
//! (`change = 'version'`, `changed_at = valid_from`) or a version that a run removed
//! (`change = 'removed'`, `changed_at = removed_at`), with the version's columns, its
//! validity as of the increment, and the run. Rows are read through the as-of view
//! `<table>_versions` only: how the mirror stores history is its own business.
//! `_manifest.json` lists every file of every increment and the last run included,
//! which is where `Since::Previous` starts the next one.

use super::columns::{Rows, TablePlan};
use super::{ExportError, ExportOptions, ExportOutcome, ExportedFile, LATEST, MANIFEST, Since};
use crate::mirror::asof;
use crate::output::Store;
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// The previous manifest of a local history folder, if any.
pub(super) fn read_local(root: &Path) -> Result<Option<serde_json::Value>, ExportError> {
    let path = root.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(bytes) => parse(&bytes, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(cause) => Err(ExportError::Io { path, cause }),
    }
}

/// The previous manifest of the history in a store, if any.
pub(super) fn read_store(store: &Store) -> Result<Option<serde_json::Value>, ExportError> {
    let shown = store.url().join(MANIFEST).to_string();
    store
        .read(MANIFEST)?
        .map(|bytes| parse(&bytes, &shown))
        .transpose()
}

fn parse(bytes: &[u8], shown: &str) -> Result<serde_json::Value, ExportError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ExportError::Manifest {
            shown: shown.to_string(),
            why: e.to_string(),
        })?;
    if value["files"].is_array() {
        Ok(value)
    } else {
        Err(ExportError::Manifest {
            shown: shown.to_string(),
            why: "it lists no files".into(),
        })
    }
}

/// The files a manifest lists (relative paths).
pub(super) fn files_of(manifest: Option<&serde_json::Value>) -> Vec<String> {
    manifest
        .and_then(|m| m["files"].as_array())
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f["file"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `(id, observed_at)` of a run.
fn run_at(conn: &Connection, id: i64) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT observed_at FROM main.sync_runs WHERE id = ?1 AND observed_at IS NOT NULL",
        [id],
        |row| row.get(0),
    )
    .optional()
}

/// Writes the changes after `since` into `root` and the manifest that lists them
/// after the `previous` manifest's files.
pub(super) fn write(
    opts: &ExportOptions,
    root: &Path,
    since: Since,
    previous: Option<&serde_json::Value>,
) -> Result<ExportOutcome, ExportError> {
    let specs = super::select(&opts.tables)?;
    let conn = crate::mirror::open_ro(&opts.db)?;
    let read_err = |table| {
        let db = opts.db.clone();
        move |cause| ExportError::Read { db, table, cause }
    };
    asof::install(&conn, LATEST).map_err(read_err("(as-of views)"))?;
    let since_run = match since {
        Since::Run(id) => Some(id),
        Since::Previous => previous.and_then(|m| m["last_run"].as_i64()),
    };
    let after = match since_run {
        Some(id) => run_at(&conn, id)
            .map_err(read_err("sync_runs"))?
            .ok_or_else(|| ExportError::UnknownRun {
                db: opts.db.clone(),
                run: id,
            })?,
        None => String::new(),
    };
    let last = crate::mirror::runs::latest_before(&conn, &asof::cutoff(LATEST))?;
    opts.file_mode
        .create_dir_all(root)
        .map_err(|cause| ExportError::Io {
            path: root.to_path_buf(),
            cause,
        })?;
    let mut files = Vec::new();
    // Nothing to add when no finished run is newer than the start.
    if let Some((last_id, upto)) = last.as_ref().filter(|(_, at)| *at > after) {
        let stem = format!("run-{last_id}");
        for spec in specs.iter().copied() {
            let rows = Rows::Changes {
                after: after.clone(),
                upto: upto.clone(),
            };
            let plan = TablePlan::changes(spec, rows);
            let written = super::export_table(&conn, opts, &plan, &root.join(spec.name), &stem)?;
            files.extend(written.into_iter().map(|f| ExportedFile {
                table: spec.name,
                file: super::relative(root, &f.path),
                rows: f.rows,
                bytes: f.bytes,
                sha256: f.sha256,
            }));
        }
    }
    let last_run = match &last {
        Some((id, at)) if *at > after => Some(*id),
        _ => since_run,
    };
    let mut listed: Vec<serde_json::Value> = previous
        .and_then(|m| m["files"].as_array().cloned())
        .unwrap_or_default();
    // A file of this increment replaces a listed one of the same name (the same
    // runs exported again).
    listed.retain(|old| !files.iter().any(|f| old["file"].as_str() == Some(&f.file)));
    listed.extend(files.iter().map(|f| {
        let mut entry = f.entry();
        entry["last_run"] = serde_json::json!(last_run);
        entry
    }));
    let manifest = serde_json::json!({
        "format": "parquet",
        "dataset": "history",
        "partitioned_by": super::columns::CHANGED_ON,
        "first_run_after": previous.map_or(since_run, |m| m["first_run_after"].as_i64()),
        "last_run": last_run,
        "observed_at": last.as_ref().filter(|(id, _)| Some(*id) == last_run).map(|(_, at)| at.clone()),
        "generated_at": crate::mirror::now_text(),
        "files": listed,
    });
    let path = root.join(MANIFEST);
    crate::output::write_json(&path, &manifest, opts.file_mode).map_err(|cause| {
        ExportError::Io {
            path: path.clone(),
            cause,
        }
    })?;
    Ok(ExportOutcome {
        dir: root.to_path_buf(),
        location: root.display().to_string(),
        published: None,
        files,
        manifest: path,
        run_id: last_run,
    })
}
