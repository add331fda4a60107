//! The command line: definitions in [`args`], one handler module per command.
//! Handlers return an exit status; errors carry context for the user (anyhow).

pub(crate) mod alerts_cmd;
pub(crate) mod api_cmd;
pub mod args;
pub(crate) mod backup_cmd;
#[cfg(feature = "sandbox")]
pub(crate) mod bench_cmd;
#[cfg(feature = "sandbox")]
mod bench_faults;
mod bench_history;
pub(crate) mod changes_cmd;
pub(crate) mod check_cmd;
pub(crate) mod completions_cmd;
pub(crate) mod daemon_cmd;
#[cfg(feature = "sandbox")]
pub(crate) mod demo_cmd;
pub(crate) mod dest;
pub(crate) mod email_cmd;
pub(crate) mod export_cmd;
pub(crate) mod forget_cmd;
pub mod logging;
pub(crate) mod man_cmd;
pub mod out;
pub(crate) mod query_cmd;
pub(crate) mod report_cmd;
pub(crate) mod restore_cmd;
#[cfg(feature = "sandbox")]
pub(crate) mod sandbox_cmd;
pub(crate) mod settings;
pub(crate) mod status_cmd;
mod suggest;
pub(crate) mod sync_cmd;
pub(crate) mod table;

use anyhow::Result;
use args::{Cli, Command, ProjectAction};
use settings::Settings;

/// Process exit status of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything worked.
    Ok = 0,
    /// The command failed.
    Failure = 1,
    /// The command line or the settings are wrong (see [`UsageError`]).
    Usage = 2,
    /// A sync stored what it could but some entities failed.
    Partial = 3,
    /// Stopped by SIGINT (128 + 2, as shells report it).
    Interrupted = 130,
    /// Stopped by SIGTERM (128 + 15).
    Terminated = 143,
}

impl From<crate::shutdown::Signal> for Exit {
    fn from(signal: crate::shutdown::Signal) -> Self {
        match signal {
            crate::shutdown::Signal::Interrupt => Exit::Interrupted,
            crate::shutdown::Signal::Terminate => Exit::Terminated,
        }
    }
}

/// A mistake in how orgledger was called (a missing setting, a malformed value):
/// the binary exits with [`Exit::Usage`], like clap does for a bad flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl Exit {
    /// The status for an error that ended a command.
    pub fn of_error(e: &anyhow::Error) -> Exit {
        if is_usage(e) {
            Exit::Usage
        } else {
            Exit::Failure
        }
    }
}

/// Whether the command line is what has to change (README: exit code 2): a usage
/// error, an unknown report, an as-of date before the mirror's first sync or in the
/// future, a `--config` file that does not exist.
fn is_usage(e: &anyhow::Error) -> bool {
    use crate::report::ReportError;
    let report = e.downcast_ref::<ReportError>().or_else(|| {
        match e.downcast_ref::<crate::alerts::AlertError>() {
            Some(crate::alerts::AlertError::Report(r)) => Some(r),
            _ => None,
        }
    });
    let coverage = match report {
        Some(ReportError::UnknownReport { .. }) => return true,
        Some(ReportError::Coverage(c)) => Some(c),
        _ => match e.downcast_ref::<crate::export::ExportError>() {
            Some(crate::export::ExportError::Coverage(c)) => Some(c),
            _ => e.downcast_ref::<crate::mirror::coverage::CoverageError>(),
        },
    };
    let no_config = matches!(
        e.downcast_ref::<crate::config::ConfigError>(),
        Some(crate::config::ConfigError::Read(_, io)) if io.kind() == std::io::ErrorKind::NotFound
    );
    e.downcast_ref::<UsageError>().is_some()
        || no_config
        || coverage.is_some_and(crate::mirror::coverage::CoverageError::is_usage)
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> Result<Exit> {
    // These describe the command line only: no config file or mirror is read.
    match &cli.command {
        Command::Completions(args) => return completions_cmd::run(args),
        Command::Man(args) => return man_cmd::run(args),
        _ => {}
    }
    let settings = Settings::from_cli(&cli)?;
    match cli.command {
        #[cfg(feature = "sandbox")]
        Command::Sandbox(args) => sandbox_cmd::run(args).await,
        Command::Sync(args) => sync_cmd::run(&settings, &args).await,
        Command::Status(args) => status_cmd::run(&settings, &args),
        Command::Check(args) => check_cmd::run(&settings, &args),
        Command::Backup(args) => backup_cmd::run(&settings, &args),
        Command::Restore(args) => restore_cmd::run(&settings, &args),
        Command::Forget(args) => forget_cmd::run(&settings, &args),
        Command::Query(args) => query_cmd::run(&settings, &args),
        Command::Changes(args) => changes_cmd::run(&settings, &args),
        Command::Api(args) => api_cmd::run(&settings, &args).await,
        Command::Project(args) => match args.action {
            ProjectAction::Create(create) => api_cmd::create_project(&settings, &create).await,
        },
        Command::Report(args) => report_cmd::run(&settings, &args).await,
        Command::Alerts(args) => alerts_cmd::run(&settings, &args).await,
        Command::Email(args) => email_cmd::run(&settings, &args).await,
        Command::Daemon(args) => daemon_cmd::run(&settings, &args).await,
        Command::Export(args) => {
            let settings = settings.clone();
            tokio::task::spawn_blocking(move || export_cmd::run(&settings, &args)).await?
        }
        #[cfg(feature = "sandbox")]
        Command::Demo(args) => demo_cmd::run(&settings, &args).await,
        #[cfg(feature = "sandbox")]
        Command::Bench(args) => bench_cmd::run(&args).await,
        Command::Completions(args) => completions_cmd::run(&args),
        Command::Man(args) => man_cmd::run(&args),
    }
}
