//! `orgledger sandbox`: serve the built-in API until Ctrl-C or SIGTERM.

use crate::cli::Exit;
use crate::cli::args::SandboxArgs;
use crate::sandbox::{self, FaultSpec, SandboxOptions};
use anyhow::{Context, Result};
use std::io::Write;

/// Starts the sandbox, prints its connection JSON as the first stdout line, serves
/// until a signal.
pub async fn run(args: SandboxArgs) -> Result<Exit> {
    let faults: FaultSpec = match &args.faults {
        Some(spec) => spec.parse().with_context(|| format!("--faults {spec:?}"))?,
        None => FaultSpec::default(),
    };
    let handle = sandbox::start(SandboxOptions {
        addr: args.addr,
        profile: args.profile,
        seed: args.seed,
        start_date: args.start_date,
        faults,
        world: None,
    })
    .await
    .with_context(|| format!("cannot start the sandbox on {}", args.addr))?;
    let line = serde_json::to_string(&handle.info)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    tracing::info!(url = %handle.info.url, "sandbox serving; Ctrl-C to stop");
    wait_for_signal().await?;
    handle.shutdown().await;
    Ok(Exit::Ok)
}

/// Resolves on SIGINT or SIGTERM.
pub async fn wait_for_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("cannot listen for Ctrl-C")?,
        _ = term.recv() => {}
    }
    Ok(())
}
