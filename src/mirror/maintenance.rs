//! `maintenance_runs`: when the mirror was last checked (`orgledger check`) and last
//! backed up (`orgledger backup`, the daemon's `[backup]`), for `status`.

use crate::mirror::{MirrorError, now_text};
use rusqlite::{Connection, params};

/// What was done to the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `orgledger check`.
    Check,
    /// A verified backup.
    Backup,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Check => "check",
            Kind::Backup => "backup",
        }
    }
}

/// Records that `kind` ran with `outcome` (`sound`, `3 findings`, `verified`) and a
/// detail (the backup file).
fn record(
    conn: &Connection,
    kind: Kind,
    outcome: &str,
    detail: Option<&str>,
) -> Result<(), MirrorError> {
    conn.execute(
        "INSERT INTO maintenance_runs (kind, at, outcome, detail) VALUES (?1, ?2, ?3, ?4)",
        params![kind.as_str(), now_text(), outcome, detail],
    )?;
    Ok(())
}

/// The last check and the last backup, one row each (`never` when none ran).
pub const STATUS_SQL: &str = "SELECT k.kind, m.at AS last_run, COALESCE(m.outcome, 'never') AS outcome, \
    m.detail FROM (SELECT 'check' AS kind UNION ALL SELECT 'backup') AS k \
    LEFT JOIN maintenance_runs AS m \
    ON m.id = (SELECT MAX(id) FROM maintenance_runs WHERE kind = k.kind)";

/// [`record`] into the mirror at `db`, on a connection of its own. A sync running
/// meanwhile waits for this one small write (its transactions take the write lock
/// when they begin), and this write waits for the sync's transaction in turn.
/// Returns whether it was recorded: not in a mirror of an older schema (no
/// `maintenance_runs` yet), which is left as it is.
fn record_in(
    db: &std::path::Path,
    kind: Kind,
    outcome: &str,
    detail: Option<&str>,
) -> Result<bool, MirrorError> {
    let conn = Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| MirrorError::open(db, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    if crate::mirror::schema::version_ro(&conn)? < crate::mirror::schema::CURRENT_VERSION {
        return Ok(false);
    }
    record(&conn, kind, outcome, detail)?;
    Ok(true)
}

/// Notes in the mirror that `kind` ran, for `status` ([`record_in`]'s rules). What
/// ran stands whether or not it is noted, so a failure to note it is only logged.
pub fn note(db: &std::path::Path, kind: Kind, outcome: &str, detail: Option<&str>) {
    let what = kind.as_str();
    match record_in(db, kind, outcome, detail) {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!("not noted for `status` (the mirror is of an older schema): {what}")
        }
        Err(e) => {
            tracing::warn!(error = %e, "the mirror could not note for `status` that this ran: {what}")
        }
    }
}
