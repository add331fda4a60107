//! The SQLite mirror: current state of every resource, its history, and the
//! bookkeeping of sync runs.
//!
//! One file, WAL mode, created with mode 0600 because it holds personal data.
//! Writers go through [`table::TableSql`] (hash, history, removal); readers (reports,
//! `query`) open it read-only and see it "as of" a date through the `asof` views.

pub(crate) mod asof;
pub mod backup;
pub mod check;
pub mod coverage;
pub(crate) mod daily_series;
pub mod error;
pub mod forget;
pub(crate) mod guard;
pub mod key_set;
pub mod lock;
pub mod maintenance;
pub mod moves;
pub(crate) mod path;
pub mod privacy;
pub(crate) mod raw;
pub(crate) mod row_stmt;
pub mod runs;
pub mod schema;
pub(crate) mod scrub;
pub mod spec;
pub mod table;
#[cfg(test)]
pub(crate) mod testkit;

pub use error::MirrorError;

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Current UTC time as mirror timestamp text.
pub fn now_text() -> String {
    time_text(chrono::Utc::now())
}

/// A UTC time as mirror timestamp text (`YYYY-MM-DDTHH:MM:SS.sssZ`).
pub fn time_text(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Opens (creating if needed, mode 0600) and migrates the mirror for writing.
pub fn open_rw(path: &Path) -> Result<Connection, MirrorError> {
    create_private(path)?;
    let mut conn = Connection::open(path).map_err(|e| MirrorError::open(path, e))?;
    configure(&conn).map_err(|e| MirrorError::open(path, e))?;
    schema::migrate_to(&mut conn, schema::CURRENT_VERSION).map_err(|cause| {
        MirrorError::Migrate {
            path: path.to_path_buf(),
            cause,
        }
    })?;
    Ok(conn)
}

/// Rebuilds every derived table (`spec::TableSpec::derived`) from the rows it is
/// derived from, for rows that did not go through the writer.
pub fn rebuild_derived(conn: &Connection) -> rusqlite::Result<()> {
    for spec in spec::TABLES {
        for derived in spec.derived {
            (derived.rebuild)(conn)?;
        }
    }
    Ok(())
}

/// Opens an existing mirror read-only (reports, `query`, `status`).
///
/// Read-only at the SQLite level, so a user's `query` cannot write whatever SQL it
/// holds. Temp views (the as-of layer) are still allowed on such a connection.
pub fn open_ro(path: &Path) -> Result<Connection, MirrorError> {
    if path::inspect(path)? == path::Found::Nothing {
        return Err(MirrorError::Missing(path.to_path_buf()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| MirrorError::open(path, e))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| MirrorError::open(path, e))?;
    let version = schema::version_ro(&conn).map_err(|e| MirrorError::open(path, e))?;
    if version < schema::CURRENT_VERSION {
        return Err(MirrorError::Outdated {
            path: path.to_path_buf(),
            found: version,
            wanted: schema::CURRENT_VERSION,
        });
    }
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(10))?;
    // WAL lets reports read a consistent snapshot while a sync writes; NORMAL
    // synchronous is durable across process crashes (kill -9), which is the failure
    // a worker like this meets, and much faster than FULL.
    // A new mirror gets 16 KB pages (SQLite ignores this for an existing file):
    // a sync inserts a million narrow rows, and with 4 KB pages much of the writer's
    // time goes to splitting and rebalancing B-tree pages.
    conn.pragma_update(None, "page_size", 16_384)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -32_000)?;
    // Checkpoint every 64 MB of WAL instead of SQLite's 4 MB: a sync writes in
    // bursts, and each checkpoint copies pages a second time. The writer folds the
    // WAL back at the end of a run.
    conn.pragma_update(None, "wal_autocheckpoint", 16_384)?;
    Ok(())
}

/// Creates the file with mode 0600 before SQLite does (SQLite would use 0644), and
/// tightens an existing mirror that others can read: it holds personal data.
/// SQLite gives its WAL and shared-memory files the database file's mode. Only a
/// mirror or an empty file (which is about to become one) is tightened; anything
/// else is refused by [`path::inspect`] before its mode is touched.
fn create_private(path: &Path) -> Result<(), MirrorError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    match path::inspect(path)? {
        path::Found::Mirror { private } | path::Found::Blank { private } => {
            if !private {
                tracing::warn!(path = %path.display(), "the mirror was readable by others; setting mode 600");
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| MirrorError::Io(path.to_path_buf(), e))?;
            }
            return Ok(());
        }
        path::Found::Nothing => {}
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| MirrorError::Io(dir.to_path_buf(), e))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(|_| ())
        .map_err(|e| MirrorError::Io(path.to_path_buf(), e))
}

/// The paths SQLite keeps next to the mirror (WAL and shared memory), which hold
/// the same data and get the same permissions.
pub fn sidecar_paths(path: &Path) -> [PathBuf; 2] {
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let shm = PathBuf::from(format!("{}-shm", path.display()));
    [wal, shm]
}
