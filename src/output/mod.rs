//! Writing output files, for reports and `export` alike: each file under a temporary
//! name in its folder, hashed while written, with the chosen mode, and renamed into
//! place ([`atomic`]); Parquet through polars' writer ([`parquet`]). A destination is
//! a local folder or an object-store URL ([`destination`]); a set of files written to
//! a staging folder beside the mirror ([`staging`]) goes to a store manifest last
//! ([`store`]). Nothing here knows
//! what a report or a table is: callers put their own errors around these.

pub(crate) mod atomic;
pub mod destination;
pub(crate) mod parquet;
pub mod staging;
pub mod store;

pub(crate) use atomic::{AtomicFile, hash_file, write_bytes, write_json};
pub use destination::{Destination, DestinationError, StoreUrl};
pub use store::{Published, Store, StoreError};
