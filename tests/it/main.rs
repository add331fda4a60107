//! Integration tests: each starts the sandbox (a real HTTP server) on a free
//! loopback port and talks to it over HTTP, with a real SQLite file for the mirror.
//! One test binary (modules below) so the release build links once.

mod common;
mod digest;

mod alert_channels;
mod alerts;
mod api_ops;
mod attribution;
mod backups;
mod bad_input;
mod changes;
mod cli_edges;
mod cloud_stores;
mod completeness;
mod concurrency;
mod daemon;
mod daemon_metrics;
mod disk_full;
mod email;
mod error_messages;
mod export;
mod faults;
mod first_hour;
mod first_steps;
mod first_use;
mod hostile;
mod html;
mod install;
mod list_streaming;
mod numbers;
mod object_store;
mod org_pages;
mod outages;
mod output_files;
mod packed_series;
mod parsing_props;
mod privacy;
mod rate_limits;
mod reading;
mod report_cli;
mod report_crash;
mod reports_e2e;
mod rooms;
mod security;
mod smtp;
mod storage_trends;
mod streamed_reports;
mod sync_mirror;
mod upgrades;
mod xlsx;
