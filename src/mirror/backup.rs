//! Consistent copies of the mirror (`orgledger backup`, the daemon's `[backup]`) and
//! putting one back (`orgledger restore`).
//!
//! Copying the file while a sync writes can copy a torn database (pages in the WAL
//! not yet in the file). SQLite's online backup API copies the pages of one read
//! transaction instead, so a copy is the mirror between two of the writer's
//! transactions. The copy is written under a temporary name beside the target, mode
//! 0600, verified (integrity check, schema version, the row count of every table
//! equal to the source's, counted in the same read transaction the copy reads),
//! and only then renamed into place: the target name never holds a partial copy.

use crate::mirror::{MirrorError, path, schema};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A verified copy.
#[derive(Debug, Clone)]
pub struct Copied {
    /// Where it is.
    pub path: PathBuf,
    /// Its schema version.
    pub version: i64,
    /// Tables copied.
    pub tables: usize,
    /// Rows over all tables.
    pub rows: u64,
}

/// Row counts of every table of a database, by name.
type Counts = Vec<(String, i64)>;

/// Copies the mirror at `db` to `out`, verified (see the module's doc).
pub fn backup(db: &Path, out: &Path) -> Result<Copied, MirrorError> {
    if same_file(db, out) {
        return Err(MirrorError::Unverified {
            path: out.to_path_buf(),
            what: "it is the mirror itself: give another file".into(),
        });
    }
    let source = open_source(db)?;
    stage(&source, out)?.commit(out)
}

/// Replaces the mirror at `db` with the copy at `file`, after checking it (an
/// orgledger mirror, not newer than this build, intact, copied whole). The
/// replaced mirror is kept beside it as `<db>.replaced-<UTC time>` (with its WAL);
/// returns that name, if there was one. The caller holds the sync lock.
pub fn restore(file: &Path, db: &Path) -> Result<(Copied, Option<PathBuf>), MirrorError> {
    let source = open_source(file).map_err(|e| match e {
        // Said of FILE, not of --db as `inspect` words it.
        MirrorError::NotAMirror { path, what } => MirrorError::Unverified {
            path: db.to_path_buf(),
            what: format!("{} is not an orgledger mirror ({what})", path.display()),
        },
        other => other,
    })?;
    let staged = stage(&source, db)?;
    drop(source);
    // Only a mirror (or nothing, or an empty file) is replaced.
    path::inspect(db)?;
    let kept = set_aside(db)?;
    let copied = staged.commit(db)?;
    Ok((copied, kept))
}

/// Whether two paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A read-only connection to an existing mirror of any version up to this build's
/// (an older one is copied as it is, before anything upgrades it).
fn open_source(db: &Path) -> Result<Connection, MirrorError> {
    match path::inspect(db)? {
        path::Found::Mirror { .. } => {}
        path::Found::Nothing => return Err(MirrorError::Missing(db.to_path_buf())),
        path::Found::Blank { .. } => {
            return Err(MirrorError::NotAMirror {
                path: db.to_path_buf(),
                what: "an empty file or database".into(),
            });
        }
    }
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| MirrorError::open(db, e))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| MirrorError::open(db, e))?;
    Ok(conn)
}

/// A verified copy under its temporary name, removed unless it is committed.
struct Staged {
    tmp: PathBuf,
    copied: Copied,
    committed: bool,
}

impl Staged {
    /// Renames the copy to `out` and makes the rename durable.
    fn commit(mut self, out: &Path) -> Result<Copied, MirrorError> {
        std::fs::rename(&self.tmp, out).map_err(|e| MirrorError::Io(out.to_path_buf(), e))?;
        self.committed = true;
        sync_dir(out)?;
        Ok(Copied {
            path: out.to_path_buf(),
            ..self.copied.clone()
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            remove_temp(&self.tmp);
        }
    }
}

/// Copies `source` to a new temporary file beside `out` and verifies it.
fn stage(source: &Connection, out: &Path) -> Result<Staged, MirrorError> {
    let tmp = temp_beside(out)?;
    match copy_and_verify(source, &tmp, out) {
        Ok(copied) => Ok(Staged {
            tmp,
            copied,
            committed: false,
        }),
        Err(e) => {
            remove_temp(&tmp);
            Err(e)
        }
    }
}

/// Removes a temporary copy and whatever SQLite kept beside it. Best effort: a
/// leftover temporary file never carries the real name.
fn remove_temp(tmp: &Path) {
    let _ = std::fs::remove_file(tmp);
    for suffix in ["-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
}

/// `.<name>.partial-<pid>` beside `out`, created empty with mode 0600.
fn temp_beside(out: &Path) -> Result<PathBuf, MirrorError> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = out
        .file_name()
        .ok_or_else(|| MirrorError::Unverified {
            path: out.to_path_buf(),
            what: "it names no file".into(),
        })?
        .to_string_lossy();
    let tmp = out.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| MirrorError::Io(folder_of(out).to_path_buf(), e))?;
    Ok(tmp)
}

fn copy_and_verify(source: &Connection, tmp: &Path, out: &Path) -> Result<Copied, MirrorError> {
    let (version, counts) = copy_snapshot(source, tmp)?;
    let unverified = |what: String| MirrorError::Unverified {
        path: out.to_path_buf(),
        what,
    };
    let copy = Connection::open(tmp).map_err(|e| MirrorError::open(tmp, e))?;
    let integrity: String = copy
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| MirrorError::open(tmp, e))?;
    if integrity != "ok" {
        return Err(unverified(format!("integrity_check says {integrity}")));
    }
    let copied_version = schema::version_ro(&copy).map_err(|e| MirrorError::open(tmp, e))?;
    if copied_version != version {
        return Err(unverified(format!(
            "schema version {copied_version}, the mirror has {version}"
        )));
    }
    let copied_counts = row_counts(&copy).map_err(|e| MirrorError::open(tmp, e))?;
    if copied_counts != counts {
        return Err(unverified(first_difference(&counts, &copied_counts)));
    }
    drop(copy);
    Ok(Copied {
        path: out.to_path_buf(),
        version,
        tables: counts.len(),
        rows: counts.iter().map(|(_, n)| *n as u64).sum(),
    })
}

/// Copies the pages of one read transaction of `source` to `tmp`, and returns the
/// schema version and row counts that transaction sees.
fn copy_snapshot(source: &Connection, tmp: &Path) -> Result<(i64, Counts), MirrorError> {
    source.execute_batch("BEGIN")?;
    let copied = (|| -> Result<(i64, Counts), MirrorError> {
        // The first read starts the snapshot; the backup then reads within it.
        let version = schema::version_ro(source)?;
        let counts = row_counts(source)?;
        let mut dest = Connection::open(tmp).map_err(|e| MirrorError::open(tmp, e))?;
        let backup = Backup::new(source, &mut dest).map_err(|e| MirrorError::open(tmp, e))?;
        match backup.step(-1).map_err(|e| MirrorError::open(tmp, e))? {
            StepResult::Done => Ok((version, counts)),
            other => Err(MirrorError::Unverified {
                path: tmp.to_path_buf(),
                what: format!("the copy stopped before its end ({other:?})"),
            }),
        }
    })();
    // Only a read transaction: nothing to keep or lose.
    let _ = source.execute_batch("COMMIT");
    copied
}

/// The row count of every table, by name.
fn row_counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    names
        .into_iter()
        .map(|name| {
            let n = conn.query_row(&format!("SELECT COUNT(*) FROM \"{name}\""), [], |row| {
                row.get(0)
            })?;
            Ok((name, n))
        })
        .collect()
}

/// Says where two sets of counts first differ.
fn first_difference(source: &Counts, copy: &Counts) -> String {
    for (table, n) in source {
        match copy.iter().find(|(name, _)| name == table) {
            Some((_, m)) if m == n => {}
            Some((_, m)) => return format!("{table} has {m} rows, the mirror had {n}"),
            None => return format!("{table} is missing"),
        }
    }
    "it holds tables the mirror does not".into()
}

/// Moves the mirror and its WAL files to `<db>.replaced-<UTC time>`; returns that
/// name when there was anything to move. A WAL file left without its mirror is moved
/// too: SQLite would apply it to the restored file.
fn set_aside(db: &Path) -> Result<Option<PathBuf>, MirrorError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let kept = PathBuf::from(format!("{}.replaced-{stamp}", db.display()));
    let [wal, shm] = crate::mirror::sidecar_paths(db);
    let [kept_wal, kept_shm] = crate::mirror::sidecar_paths(&kept);
    let mut moved = false;
    for (from, to) in [
        (db.to_path_buf(), kept.clone()),
        (wal, kept_wal),
        (shm, kept_shm),
    ] {
        match std::fs::rename(&from, &to) {
            Ok(()) => moved = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(MirrorError::Io(from, e)),
        }
    }
    Ok(moved.then_some(kept))
}

/// The folder a file is in (`.` for a bare name).
fn folder_of(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes a rename in `file`'s folder durable.
fn sync_dir(file: &Path) -> Result<(), MirrorError> {
    let dir = folder_of(file);
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| MirrorError::Io(dir.to_path_buf(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_backup_leaves_nothing_under_the_name_and_an_old_file_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("m.db");
        drop(crate::mirror::open_rw(&db).expect("a mirror"));
        let err = backup(&db, &db).expect_err("onto itself").to_string();
        assert!(err.contains("the mirror itself"), "{err}");
        let missing = dir.path().join("no-such-folder").join("copy.db");
        assert!(backup(&db, &missing).is_err());
        assert!(!missing.exists());
        // A source that is not a mirror: the existing file keeps its bytes.
        let out = dir.path().join("copy.db");
        std::fs::write(&out, "an earlier backup").expect("write");
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a mirror").expect("write");
        assert!(backup(&text, &out).is_err());
        assert_eq!(
            std::fs::read(&out).expect("read"),
            b"an earlier backup".to_vec()
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".partial-")), "{names:?}");
        let copied = backup(&db, &out).expect("a backup");
        assert_eq!(copied.version, crate::mirror::schema::CURRENT_VERSION);
        let mode = std::fs::metadata(&out).expect("meta").permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
    }
}
