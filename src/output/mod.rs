//! Writing output files, for reports and `export` alike: each file under a temporary
//! name in its folder, hashed while written, with the chosen mode, and renamed into
//! place ([`atomic`]); Parquet through polars' writer ([`parquet`]). Nothing here
//! knows what a report or a table is: callers put their own errors around these.

pub(crate) mod atomic;
pub(crate) mod parquet;

pub(crate) use atomic::{AtomicFile, write_bytes, write_json};
