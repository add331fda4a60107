//! `orgledger daemon`: sync and report on cron schedules until stopped.

pub mod backups;
pub mod cron;
pub mod daemon;
pub(crate) mod endpoint;
pub(crate) mod health;
pub(crate) mod metrics;
pub mod retention;
pub(crate) mod ticks;
