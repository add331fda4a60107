//! `orgledger completions SHELL`: completions generated from the command line that
//! `--help` shows, so the two cannot disagree.

use crate::cli::Exit;
use crate::cli::args::{self, CompletionsArgs};
use anyhow::Result;

/// Prints the completions for the shell.
pub fn run(args: &CompletionsArgs) -> Result<Exit> {
    let mut cmd = args::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "orgledger", &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script));
    Ok(Exit::Ok)
}
