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

/// mimalloc 3 returns a freed page to the system a second after its last use
/// (`purge_delay`, 1000 ms), and only when the thread that freed it next calls the
/// allocator: a report thread or a polars worker that has gone idle keeps what it
/// freed. A report frees and allocates tens of MB from one step to the next (the
/// jobs, the attention list, the pages, the workbook), and each step's peak stacked
/// on the last one's leftovers. With 0 a page goes back when it is freed: over
/// `xxlarge` every report in every format peaked at 254-264 MB with 0 and 275 MB
/// with 10 ms, in the same time; over `xlarge` with 1000 ms it took 272 MB against
/// 236 MB with 10 ms; a sync peaks a little lower for the same CPU
/// (docs/performance.md).
const PURGE_DELAY_MS: std::ffi::c_long = 0;

/// Sets the purge delay, unless `MIMALLOC_PURGE_DELAY` says another (mimalloc
/// reads its environment itself; that is how the figures compare the two).
#[allow(unsafe_code)]
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets one of mimalloc's integer options, which it reads atomically;
    // no pointer crosses the call.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (`include/mimalloc.h`), which
/// `libmimalloc-sys` does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    tune_allocator();
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
