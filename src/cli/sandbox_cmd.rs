//! `orgledger sandbox`: serve the built-in API until Ctrl-C or SIGTERM.

use anyhow::{Context, Result};

/// Starts the sandbox, prints its connection JSON as the first stdout line, serves
/// until a signal.
#[cfg(feature = "sandbox")]
pub async fn run(args: crate::cli::args::SandboxArgs) -> Result<crate::cli::Exit> {
    use std::io::Write;
    let handle = crate::sandbox::start(args.options())
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
    Ok(crate::cli::Exit::Ok)
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
