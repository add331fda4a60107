//! Logging setup: tracing to stderr, text or JSON lines, level from -v/-q or
//! `RUST_LOG`, colour only on a terminal. Secrets never reach a log line because
//! they are `Secret`s, whose every formatting path prints `[redacted]`.

use crate::cli::args::{Cli, LogFormat};
use std::io::IsTerminal;
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
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_target(false);
    let result = match cli.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // Fails only if a subscriber is already set (tests); the existing one is kept.
    let _ = result;
}

/// Colour only for a person at a terminal: a log file or a pipe (cron, journald)
/// gets plain text, and a non-empty `NO_COLOR` (no-color.org) turns it off.
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
