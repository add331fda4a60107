//! The built-in sandbox: a real HTTP server (axum) that implements the eight operations
//! of the API over a deterministic generated world.
//!
//! It is a server on a socket rather than a mock inside the client on purpose: the
//! client, its retries, its rate limiting and its parser are exercised over loopback
//! exactly as against the real service, and the JSON here is rendered from the
//! sandbox's own types (never from `api::models`), so the two sides are written
//! independently. The world has a clock that moves only through time travel
//! (`POST /sandbox/advance`), every response carries that clock in its `Date` header,
//! and faults can be injected at seeded rates so runs repeat.
//!
//! Map: [`world`] (data, indices, time travel), [`generate`] (the generator),
//! `metrics` (daily metrics computed on the fly), `render` (JSON), [`rng`] (SplitMix64).

pub mod generate;
#[allow(dead_code)] // served by the HTTP layer (next commit)
mod metrics;
#[allow(dead_code)] // served by the HTTP layer (next commit)
mod render;
pub mod rng;
pub mod world;

pub use world::World;

/// Size of the generated world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Profile {
    /// A handful of everything (4 organizations, 8 users, 10 projects).
    Tiny,
    /// About 20 organizations, 100 users, 150 projects.
    Small,
    /// About 200 organizations, 2,000 users, 3,000 projects.
    Medium,
    /// About 500 organizations, 5,000 users, 10,000 projects.
    Large,
}
