//! The `orgledger` binary: parse the command line, set up logging, run the command,
//! turn its outcome into an exit code (0 ok, 1 failure, 2 usage, 3 partial sync,
//! 130/143 a sync stopped by SIGINT/SIGTERM).

use orgledger::cli::{self, Exit, args};
use std::process::ExitCode;

// A sync allocates many small strings and vectors and frees them on other threads
// than the ones that allocated them; mimalloc handles that pattern far better than
// glibc's allocator (figures in docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::parse();
    cli::logging::init(&cli);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(Exit::Failure as u8);
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(exit) => ExitCode::from(exit as u8),
        // The reader of our output has gone (`| head`): nothing to say to anyone.
        Err(e) if e.downcast_ref::<cli::out::PipeClosed>().is_some() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(Exit::of_error(&e) as u8)
        }
    }
}
