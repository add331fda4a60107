//! Errors of the mirror layer, each naming the file it concerns. Causes are said
//! inline and are not `source()`s (the crate's rule, see `crate::cause`).

use std::path::PathBuf;

/// What can go wrong opening or writing the mirror.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The file could not be opened or configured.
    #[error("cannot open the mirror {path}: {}", crate::cause::sqlite(.cause))]
    Open {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason (not a `source`: see `crate::cause`).
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
    /// The mirror was written by a newer build; it was left untouched.
    #[error(
        "the mirror {path} has schema version {found}, newer than this build of orgledger knows (it writes version {build}); \
         it was left untouched: use the newer orgledger that wrote it"
    )]
    Newer {
        /// The mirror file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The newest version this build knows.
        build: i64,
    },
    /// A copy of the mirror (backup, restore) did not verify; the target name was
    /// not written.
    #[error("the copy for {path} failed: {what}; nothing was written under that name")]
    Unverified {
        /// The name the copy was for.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// A schema migration failed; the mirror stays at its previous version.
    #[error("cannot upgrade the mirror {path}: {}", crate::cause::sqlite(.cause))]
    Migrate {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason (not a `source`: see `crate::cause`).
        cause: rusqlite::Error,
    },
    /// Another sync holds the mirror.
    #[error("another sync is running on {0} (it holds {0}.lock); wait for it to finish")]
    Busy(PathBuf),
    /// A file-system operation on the mirror, its folder or its lock file failed.
    #[error("{}: {}", .0.display(), crate::cause::io(.1))]
    Io(PathBuf, std::io::Error),
    /// The thread that writes the mirror could not run or died.
    #[error("the mirror's writer thread failed: {0}")]
    Writer(String),
    /// A statement failed.
    #[error("mirror: {}", crate::cause::sqlite(.0))]
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for MirrorError {
    fn from(e: rusqlite::Error) -> Self {
        MirrorError::Sql(e)
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

    #[test]
    fn sqlite_and_io_causes_are_said_once_and_are_not_sources() {
        let full: MirrorError = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        )
        .into();
        assert!(full.to_string().contains("free some space"), "{full}");
        assert!(std::error::Error::source(&full).is_none());
        let other = MirrorError::from(rusqlite::Error::QueryReturnedNoRows).to_string();
        assert_eq!(other, "mirror: Query returned no rows");
        let io = MirrorError::Io("m.db".into(), std::io::Error::from_raw_os_error(20));
        let text = io.to_string();
        assert_eq!(text.matches("Not a directory").count(), 1, "{text}");
        assert!(text.contains("give a path inside a folder"), "{text}");
        assert!(std::error::Error::source(&io).is_none());
    }
}
