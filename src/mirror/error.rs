//! Errors of the mirror layer, each naming the file it concerns.

use std::path::PathBuf;

/// What can go wrong opening or writing the mirror.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The file could not be opened or configured.
    #[error("cannot open the mirror {path}: {}", describe(.cause))]
    Open {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason (not a `source`, see [`describe`]).
        cause: rusqlite::Error,
    },
    /// The path holds something else than a mirror; it was not touched.
    #[error(
        "{path} is not an orgledger mirror ({what}); it was left untouched: give --db a new file name or an existing mirror"
    )]
    NotAMirror {
        /// The path given as the mirror.
        path: PathBuf,
        /// What is there instead.
        what: String,
    },
    /// A read-only command was pointed at a file that does not exist.
    #[error("no mirror at {0}: run `orgledger sync` first (or pass --db)")]
    Missing(PathBuf),
    /// The mirror was written by an older version and a read-only command cannot upgrade it.
    #[error(
        "the mirror {path} has schema version {found}, this build needs {wanted}: run `orgledger sync` (or `status`) once to upgrade it"
    )]
    Outdated {
        /// The mirror file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The version this build writes.
        wanted: i64,
    },
    /// A schema migration failed; the mirror stays at its previous version.
    #[error("cannot upgrade the mirror {path}: {}", describe(.cause))]
    Migrate {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason (not a `source`, see [`describe`]).
        cause: rusqlite::Error,
    },
    /// Another sync holds the mirror.
    #[error("another sync is running on {0} (it holds {0}.lock); wait for it to finish")]
    Busy(PathBuf),
    /// A file-system operation failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A statement failed.
    #[error("mirror: {}", describe(.0))]
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for MirrorError {
    fn from(e: rusqlite::Error) -> Self {
        MirrorError::Sql(e)
    }
}

/// SQLite's reason in words a user can act on. Not a `source`: rusqlite's chain
/// would repeat it ("disk I/O error: disk I/O error: Error code 778: ...").
fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode::{DiskFull, SystemIoFailure};
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == DiskFull => format!(
            "the disk is full: free some space and sync again (SQLite code {})",
            f.extended_code
        ),
        // A failed write() of a full disk or a file size limit (EFBIG) reaches SQLite
        // as an I/O error, not as SQLITE_FULL.
        rusqlite::Error::SqliteFailure(f, _) if f.code == SystemIoFailure => format!(
            "the file could not be read or written: is the disk full or a file size limit reached? (SQLite I/O error, code {})",
            f.extended_code
        ),
        // rusqlite prints the message SQLite gave and then, through `source`, the
        // same message again with its code: keep the message and the code once.
        rusqlite::Error::SqliteFailure(f, Some(message)) => {
            format!("{message} (SQLite code {})", f.extended_code)
        }
        other => other.to_string(),
    }
}

impl MirrorError {
    pub(crate) fn open(path: &std::path::Path, source: rusqlite::Error) -> Self {
        MirrorError::Open {
            path: path.to_path_buf(),
            cause: source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(extended_code: i32) -> MirrorError {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(extended_code),
            Some("disk I/O error".into()),
        )
        .into()
    }

    #[test]
    fn disk_errors_say_what_to_check_once() {
        let full = failure(rusqlite::ffi::SQLITE_FULL).to_string();
        assert!(full.contains("the disk is full"), "{full}");
        let write = failure(rusqlite::ffi::SQLITE_IOERR_WRITE).to_string();
        assert!(write.contains("disk full or a file size limit"), "{write}");
        assert!(write.contains("code 778"), "{write}");
        assert_eq!(write.matches("I/O error").count(), 1, "{write}");
        let other = MirrorError::from(rusqlite::Error::QueryReturnedNoRows).to_string();
        assert_eq!(other, "mirror: Query returned no rows");
        assert!(std::error::Error::source(&failure(rusqlite::ffi::SQLITE_FULL)).is_none());
    }
}
