//! The API boundary: typed models of every resource, the HTTP client, and the
//! secret type that keeps credentials out of logs.

pub mod models;
pub mod secret;
pub mod tolerant;
