//! `orgledger man`: the man page, generated from the command line that `--help`
//! shows, so the two cannot disagree.

use crate::cli::Exit;
use crate::cli::args::{self, ManArgs};
use anyhow::{Context, Result};

/// Prints orgledger.1, or writes every command's page into `--dir`.
pub fn run(args: &ManArgs) -> Result<Exit> {
    let cmd = args::command();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(cmd, dir))
                .map_err(|e| anyhow::anyhow!(crate::cause::io(&e)))
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| anyhow::anyhow!(crate::cause::io(&e)))
                .context("cannot render the man page")?;
            crate::out!("{}", String::from_utf8_lossy(&page));
        }
    }
    Ok(Exit::Ok)
}
