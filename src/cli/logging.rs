//! Logging setup: tracing to stderr, text or JSON lines, level from -v/-q or
//! `RUST_LOG`. Secrets never reach a log line because they are `Secret`s, whose
//! every formatting path prints `[redacted]`.

use crate::cli::args::{Cli, LogFormat};
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber.
pub fn init(cli: &Cli) {
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("orgledger={level},warn")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let result = match cli.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // Fails only if a subscriber is already set (tests); the existing one is kept.
    let _ = result;
}
