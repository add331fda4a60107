//! Bookkeeping of sync runs: `sync_runs` (one row per run) and `sync_errors` (one
//! row per entity that could not be fetched or stored).

use crate::mirror::table::WriteStats;
use crate::mirror::{MirrorError, now_text};
use rusqlite::{Connection, OptionalExtension, params};

/// Final status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Everything was fetched and stored.
    Succeeded,
    /// Stored everything it could; some entities failed (see `sync_errors`).
    Partial,
    /// Nothing usable was fetched (e.g. discovery failed).
    Failed,
    /// Stopped before the end (signal, or found `running` after a crash).
    Aborted,
}

impl RunStatus {
    /// Every final status.
    pub const ALL: [RunStatus; 4] = [
        RunStatus::Succeeded,
        RunStatus::Partial,
        RunStatus::Failed,
        RunStatus::Aborted,
    ];

    /// The text stored in `sync_runs.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Succeeded => "succeeded",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
            RunStatus::Aborted => "aborted",
        }
    }
}

/// Counters of a run, stored when it ends.
#[derive(Debug, Default, Clone)]
pub struct RunTotals {
    /// HTTP requests made (retries included).
    pub requests: u64,
    /// Response bytes received.
    pub bytes: u64,
    /// Row counts.
    pub rows: WriteStats,
    /// Entities recorded in `sync_errors`.
    pub errors: u64,
}

/// One failure to record.
#[derive(Debug, Clone)]
pub struct SyncErrorRecord {
    /// Operation name, e.g. `get_project_info`.
    pub operation: String,
    /// The entity, e.g. `project 42` (None for list operations).
    pub entity: Option<String>,
    /// HTTP status when the service answered.
    pub http_status: Option<u16>,
    /// What went wrong (never contains a credential).
    pub message: String,
    /// How many attempts were made.
    pub attempts: u32,
}

/// Marks runs left `running` by a crashed process as `aborted`. Only call while
/// holding the sync lock, so a live run is never touched. Returns how many.
pub fn abort_stale(conn: &Connection) -> Result<usize, MirrorError> {
    Ok(conn.execute(
        "UPDATE sync_runs SET status = 'aborted', finished_at = ?1, \
         message = COALESCE(message, 'found running with no process holding the sync lock (the process died)') \
         WHERE status = 'running'",
        [now_text()],
    )?)
}

/// Starts a run and returns its id.
pub fn begin(conn: &Connection, base_url: &str) -> Result<i64, MirrorError> {
    conn.execute(
        "INSERT INTO sync_runs (started_at, status, base_url) VALUES (?1, 'running', ?2)",
        params![now_text(), base_url],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Records the server time the run observed (the `valid_from` of what it writes).
pub fn set_observed(conn: &Connection, run_id: i64, observed_at: &str) -> Result<(), MirrorError> {
    conn.execute(
        "UPDATE sync_runs SET observed_at = ?1 WHERE id = ?2",
        params![observed_at, run_id],
    )?;
    Ok(())
}

/// Records one failure of a run.
pub fn record_error(
    conn: &Connection,
    run_id: i64,
    err: &SyncErrorRecord,
) -> Result<(), MirrorError> {
    conn.execute(
        "INSERT INTO sync_errors (run_id, at, operation, entity, http_status, message, attempts) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            run_id,
            now_text(),
            err.operation,
            err.entity,
            err.http_status,
            err.message,
            err.attempts
        ],
    )?;
    Ok(())
}

/// Ends a run with its status and totals.
pub fn finish(
    conn: &Connection,
    run_id: i64,
    status: RunStatus,
    totals: &RunTotals,
    message: Option<&str>,
) -> Result<(), MirrorError> {
    conn.execute(
        "UPDATE sync_runs SET finished_at = ?1, status = ?2, requests = ?3, bytes = ?4, \
         rows_inserted = ?5, rows_updated = ?6, rows_unchanged = ?7, rows_removed = ?8, \
         errors = ?9, message = ?10 WHERE id = ?11",
        params![
            now_text(),
            status.as_str(),
            totals.requests as i64,
            totals.bytes as i64,
            totals.rows.inserted as i64,
            totals.rows.updated as i64,
            totals.rows.unchanged as i64,
            totals.rows.removed as i64,
            totals.errors as i64,
            message,
            run_id
        ],
    )?;
    Ok(())
}

/// The latest finished run (succeeded or partial) whose observation time is before
/// `cutoff`: the run a report "as of" that cut-off reads.
pub fn latest_before(
    conn: &Connection,
    cutoff: &str,
) -> Result<Option<(i64, String)>, MirrorError> {
    Ok(conn
        .query_row(
            "SELECT id, observed_at FROM sync_runs WHERE status IN ('succeeded','partial') \
             AND observed_at < ?1 ORDER BY observed_at DESC, id DESC LIMIT 1",
            [cutoff],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?)
}
