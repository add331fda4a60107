//! Standard output that a closed pipe ends quietly. `println!` panics when the
//! reader has gone (`orgledger status | head -1`); the commands print through
//! [`out!`](crate::out) and [`outln!`](crate::outln) instead, which turn a broken
//! pipe into [`PipeClosed`], and `main` ends on it with exit 0 and nothing on
//! standard error, as ripgrep and coreutils do.

use std::io::Write;

/// The reader of standard output has gone: nothing more can be printed.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct PipeClosed;

/// Writes `args` to standard output and flushes it.
pub fn write(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(PipeClosed.into()),
        Err(e) => Err(anyhow::anyhow!(
            "cannot write to standard output: {}",
            crate::cause::io(&e)
        )),
    }
}

/// `print!` that returns from the enclosing function (with `?`) when standard
/// output is closed or cannot be written.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*))?
    };
}

/// `println!` that returns from the enclosing function (with `?`) when standard
/// output is closed or cannot be written.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::out::write(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*)))?
    };
}
