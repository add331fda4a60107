//! Integration tests of the sandbox: each starts a server on a free loopback port and
//! talks to it over HTTP, as a client of the real service would. One test binary
//! (modules below) so it links once.

mod common;

mod cli;
mod hard_cases;
mod outage;
mod schema;
