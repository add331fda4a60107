//! `orgledger-sandbox`: serve the sandbox API on its own. Prints the connection JSON
//! (url, credentials, ids) as the first stdout line, serves until SIGINT or SIGTERM;
//! exit 1 with the cause on stderr when it cannot start.

use clap::Parser;
use orgledger_sandbox::ServeArgs;
use std::process::ExitCode;

/// Serve the organization/project information API over a generated world.
#[derive(Debug, Parser)]
#[command(name = "orgledger-sandbox", version)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(orgledger_sandbox::run_until_signal(cli.serve.options())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
