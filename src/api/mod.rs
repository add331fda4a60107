//! The API boundary: typed models of every resource, the HTTP client, and the
//! secret type that keeps credentials out of logs.

pub mod client;
pub mod error;
pub mod list_stream;
pub(crate) mod metrics_scan;
pub mod models;
pub mod operation;
pub mod origin;
pub mod outage;
pub mod pacing;
pub mod secret;
pub(crate) mod secret_scrub;
pub mod throttle;
pub(crate) mod tolerant;

pub use client::{Client, ClientConfig, Credentials, Failure, Fetched, Sink, Streamed};
pub use error::ApiError;
pub use operation::Operation;
pub use tolerant::{DatedTimestamp, Timestamp, TimestampParseError};
