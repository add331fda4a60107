//! `orgledger man`: the man page, generated from the command line that `--help`
//! shows, so the two cannot disagree.

use crate::cli::Exit;
use crate::cli::args::{self, ManArgs};
use anyhow::{Context, Result};
use std::path::Path;

/// Prints orgledger.1, or writes every command's page into `--dir`.
pub fn run(args: &ManArgs) -> Result<Exit> {
    let cmd = args::command_without_help();
    let date = page_date();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| write_pages(&cmd, dir, &date))
                .map_err(|e| anyhow::anyhow!(crate::cause::io(&e)))
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
        None => {
            let page = render(cmd, &date)
                .map_err(|e| anyhow::anyhow!(crate::cause::io(&e)))
                .context("cannot render the man page")?;
            crate::out!("{page}");
        }
    }
    Ok(Exit::Ok)
}

/// One page for `cmd` and one for each of its visible commands, at every depth.
fn write_pages(cmd: &clap::Command, dir: &Path, date: &str) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, date)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let page = render(cmd.clone(), date)?;
    std::fs::write(dir.join(man.get_filename()), page)
}

/// The page's roff, lint-clean (see [`lint_clean`]).
fn render(cmd: clap::Command, date: &str) -> std::io::Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).date(date).render(&mut page)?;
    Ok(lint_clean(&String::from_utf8_lossy(&page)))
}

/// The `.TH` date: `SOURCE_DATE_EPOCH` (the reproducible-builds convention, for
/// packagers who want the same pages from the same source), else today. Left
/// empty, as clap_mangen does, it is a date that `man` cannot show.
fn page_date() -> String {
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0));
    epoch
        .unwrap_or_else(chrono::Utc::now)
        .format("%Y-%m-%d")
        .to_string()
}

/// clap_mangen's roff without what `mandoc -Tlint` warns about: between an
/// option's help and its list of possible values it writes a line break, an empty
/// line (a paragraph space) and another line break, and a break next to a space
/// is skipped; the space alone renders the same.
fn lint_clean(roff: &str) -> String {
    roff.replace("\n.br\n\n.br\n", "\n.sp\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_page_is_for_the_help_pseudo_command() {
        let cmd = args::command_without_help();
        fn names(cmd: &clap::Command, out: &mut Vec<String>) {
            out.push(cmd.get_display_name().unwrap_or(cmd.get_name()).to_string());
            for sub in cmd.get_subcommands() {
                names(sub, out);
            }
        }
        let mut all = Vec::new();
        names(&cmd, &mut all);
        assert!(all.iter().any(|n| n == "orgledger-sync"), "{all:?}");
        assert!(all.iter().all(|n| !n.ends_with("-help")), "{all:?}");
    }

    #[test]
    fn a_break_beside_a_paragraph_space_is_dropped() {
        let roff = "Log line format\n.br\n\n.br\n\\fIPossible values:\\fR\n";
        assert_eq!(
            lint_clean(roff),
            "Log line format\n.sp\n\\fIPossible values:\\fR\n"
        );
    }

    #[test]
    fn the_date_is_source_date_epoch_or_a_calendar_date() {
        let date = page_date();
        assert!(
            chrono::NaiveDate::parse_from_str(&date, "%Y-%m-%d").is_ok(),
            "{date}"
        );
    }
}
