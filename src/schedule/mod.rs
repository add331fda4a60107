//! `orgledger daemon`: sync and report on cron schedules until stopped.

pub mod cron;
pub mod daemon;
pub mod retention;
