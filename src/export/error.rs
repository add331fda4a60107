//! Errors of `export`. Each names the table, column or file it concerns; causes are
//! said inline and are not `source()`s (the crate's rule, `crate::cause`).

use std::path::PathBuf;

/// What can go wrong exporting the mirror.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The mirror could not be opened (missing, outdated, unreadable).
    #[error(transparent)]
    Mirror(#[from] crate::mirror::MirrorError),
    /// The as-of date is one the mirror cannot answer for.
    #[error(transparent)]
    Coverage(#[from] crate::mirror::coverage::CoverageError),
    /// Publishing to an object store failed.
    #[error(transparent)]
    Store(#[from] crate::output::StoreError),
    /// `--since run:N` names a run the mirror does not have.
    #[error("the mirror {} has no sync run {run}; `orgledger status` lists the runs", .db.display())]
    UnknownRun {
        /// The mirror file.
        db: PathBuf,
        /// The run asked for.
        run: i64,
    },
    /// The manifest of the incremental history cannot be read.
    #[error(
        "cannot read the manifest {shown} of the incremental history: {why}; remove it to start the history anew"
    )]
    Manifest {
        /// The file or object.
        shown: String,
        /// What is wrong.
        why: String,
    },
    /// A table name that is not a mirror table.
    #[error("unknown table {name:?}; valid tables: {valid}")]
    UnknownTable {
        /// The name asked for.
        name: String,
        /// Comma-separated list of the valid names.
        valid: String,
    },
    /// Reading a table failed.
    #[error("cannot read the table {table} of {}: {}", .db.display(), crate::cause::sqlite(.cause))]
    Read {
        /// The mirror file.
        db: PathBuf,
        /// The table.
        table: &'static str,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
    /// A stored value does not have the type its column declares.
    #[error("table {table}, column {column}: the mirror holds {value:?}, which is not {expected}")]
    BadValue {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The offending value.
        value: String,
        /// What the column declares.
        expected: &'static str,
    },
    /// A file or folder could not be written or cleaned up.
    #[error("cannot write {}: {}", .path.display(), crate::cause::io(.cause))]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The reason.
        cause: std::io::Error,
    },
    /// Polars could not build or encode a chunk of a table.
    #[error("cannot write {}: {cause}", .path.display())]
    Parquet {
        /// The Parquet file.
        path: PathBuf,
        /// Polars' reason.
        cause: polars::prelude::PolarsError,
    },
}
