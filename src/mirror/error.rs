//! Errors of the mirror layer, each naming the file it concerns.

use std::path::PathBuf;

/// What can go wrong opening or writing the mirror.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The file could not be opened or configured.
    #[error("cannot open the mirror {path}: {source}")]
    Open {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
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
    #[error("cannot upgrade the mirror {path}: {source}")]
    Migrate {
        /// The mirror file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// Another sync holds the mirror.
    #[error("another sync is running on {0} (it holds {0}.lock); wait for it to finish")]
    Busy(PathBuf),
    /// A file-system operation failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A statement failed.
    #[error("mirror: {0}")]
    Sql(#[from] rusqlite::Error),
}

impl MirrorError {
    pub(crate) fn open(path: &std::path::Path, source: rusqlite::Error) -> Self {
        MirrorError::Open {
            path: path.to_path_buf(),
            source,
        }
    }
}
