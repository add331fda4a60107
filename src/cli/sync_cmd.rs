//! `orgledger sync`: one sync run, a summary line, exit 3 when partial, 130/143
//! when SIGINT/SIGTERM stopped it (what arrived is stored, the run is `aborted`).

use crate::api::Client;
use crate::cli::Exit;
use crate::cli::args::SyncArgs;
use crate::cli::settings::Settings;
use crate::mirror::runs::RunStatus;
use crate::shutdown::Shutdown;
use crate::sync::{self, SyncOptions, SyncOutcome};
use anyhow::Result;

/// Builds the client and sync options from flags, environment and config.
pub fn prepare(settings: &Settings, args: &SyncArgs) -> Result<(Client, SyncOptions)> {
    let cfg = settings.client_config(&args.conn, &args.pace)?;
    let has_jwt = cfg.credentials.jwt.is_some();
    let client = Client::new(cfg)?;
    if !has_jwt {
        // list-user-organizations and list-user-projects need a JWT: skipped, not
        // failed, so a key-only sync that fetched everything its key allows ends
        // `succeeded`.
        tracing::info!("no JWT: the user's own projects and organizations are not synced");
    }
    let opts = SyncOptions {
        db: settings.db.clone(),
        whitelabel_org: args.whitelabel_org.or(settings.config.whitelabel_org),
        has_jwt,
        store_secrets: args.store_secrets || settings.config.store_secrets.unwrap_or(false),
        progress: !args.no_progress,
        forget_removed_after_days: settings.config.privacy.forget_removed_after_days,
    };
    Ok((client, opts))
}

/// Runs the command.
pub async fn run(settings: &Settings, args: &SyncArgs) -> Result<Exit> {
    let (client, opts) = prepare(settings, args)?;
    if opts.whitelabel_org.is_none() {
        tracing::info!(
            "no --whitelabel-org: white label users, trials and daily metrics are not synced"
        );
    }
    let shutdown = Shutdown::on_signals()?;
    // The mirror's errors name the file and the cause: a context would only repeat.
    let outcome = sync::run(&client, &opts, Some(shutdown.clone())).await?;
    let exit = report(&outcome, settings);
    match (outcome.status, shutdown.signal()) {
        (RunStatus::Aborted, Some(signal)) => {
            eprintln!(
                "{}: stopped requesting; what arrived is stored and sync run {} is marked aborted",
                signal.name(),
                outcome.run_id
            );
            Ok(signal.into())
        }
        _ => Ok(exit),
    }
}

/// Prints the outcome (summary on stdout, each failure once on stderr) and maps it
/// to an exit status. The query that lists the rest names the mirror as `settings`
/// were given it, so it can be pasted.
pub fn report(outcome: &SyncOutcome, settings: &Settings) -> Exit {
    const SHOWN: usize = 10;
    // The message names the operation, the URL and the HTTP status already.
    for err in outcome.errors.iter().take(SHOWN) {
        match &err.entity {
            Some(entity) => eprintln!("  failed: {entity}: {}", err.message),
            None => eprintln!("  failed: {}", err.message),
        }
    }
    let shown = outcome.errors.len().min(SHOWN) as u64;
    if outcome.totals.errors > shown {
        let query = format!(
            "query \"SELECT operation, entity, http_status, message FROM sync_errors WHERE run_id = {}\"",
            outcome.run_id
        );
        eprintln!(
            "  ... and {} more: {}",
            outcome.totals.errors - shown,
            settings.command_line(&query)
        );
    }
    // The run's status is the answer even when no one reads the summary.
    let _ = crate::cli::out::write(format_args!("{}\n", outcome.summary_line()));
    match outcome.status {
        RunStatus::Succeeded => Exit::Ok,
        RunStatus::Partial => Exit::Partial,
        RunStatus::Failed | RunStatus::Aborted => Exit::Failure,
    }
}
