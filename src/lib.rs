//! `orgledger`: an offline SQLite mirror of the organization/project information
//! service, and the reports finance, account managers and ops read every week.
//!
//! Data flows one way: [`api`] fetches typed documents, [`sync`] decides what to fetch
//! and hands the documents to [`mirror`], which keeps current state plus history in
//! SQLite; [`report`] reads the mirror (never the network) and writes CSV/JSON/HTML.
//! [`sandbox`] (the `orgledger-sandbox` crate, behind the default `sandbox` feature) is a
//! real HTTP implementation of the API over a generated world, used by the demo, the
//! tests and the benchmarks. See `docs/architecture.md` for the map.

pub mod api;
pub(crate) mod cause;
pub mod cli;
pub(crate) mod config;
pub mod mirror;
pub mod report;
#[cfg(any(feature = "sandbox", test))]
pub use orgledger_sandbox as sandbox;
pub(crate) mod schedule;
pub(crate) mod shutdown;
pub mod sync;
