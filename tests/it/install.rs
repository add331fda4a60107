//! The binary as an installed tool: shell completions and the man page, through the
//! real binary, agree with the command line `--help` describes.

use crate::common::{bin, outputs};
use clap::CommandFactory;

/// The visible commands, from the same definitions the binary parses.
fn commands() -> Vec<String> {
    orgledger::cli::args::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// Runs the binary with `args`; its standard output, after checking it succeeded.
fn stdout_of(args: &[&str]) -> String {
    let (code, stdout, stderr) = outputs(bin().args(args));
    assert_eq!(code, Some(0), "orgledger {args:?}: {stderr}");
    stdout
}

#[test]
fn completions_for_each_shell_name_every_command() {
    let commands = commands();
    assert!(commands.len() > 10, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        assert!(!script.trim().is_empty(), "{shell}: empty");
        for command in &commands {
            assert!(
                script.contains(command.as_str()),
                "{shell} completions do not name `{command}`"
            );
        }
        // A flag of a command, not only the commands: the scripts come from the
        // full definitions.
        assert!(script.contains("whitelabel-org"), "{shell}: no sync flags");
    }
    let (code, _, stderr) = outputs(bin().args(["completions", "tcsh"]));
    assert_eq!(code, Some(2), "an unknown shell is a usage error: {stderr}");
}

#[test]
fn the_man_page_is_roff_listing_the_commands_and_the_flags_of_help() {
    let page = stdout_of(&["man"]);
    let help = stdout_of(&["--help"]);
    assert!(
        page.lines().any(|l| l.starts_with(".TH ")),
        "no .TH: {page}"
    );
    assert!(
        page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"),
        "{page}"
    );
    for command in commands() {
        assert!(
            page.contains(&format!("orgledger\\-{}", command.replace('-', "\\-"))),
            "the man page does not list `{command}`"
        );
    }
    for flag in ["--db", "--config", "--log-format", "--verbose"] {
        assert!(help.contains(flag), "--help lost {flag}");
        let roff = flag.replace('-', "\\-");
        assert!(page.contains(&roff), "the man page does not show {flag}");
    }
}

#[test]
fn man_dir_writes_a_page_per_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("man1");
    let (code, _, stderr) = outputs(bin().args(["man", "--dir", out.to_str().expect("utf-8")]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(out.join("orgledger.1").is_file(), "{stderr}");
    for command in commands() {
        let page = out.join(format!("orgledger-{command}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        assert!(text.contains(".TH"), "{}: {text}", page.display());
    }
    let sync = std::fs::read_to_string(out.join("orgledger-sync.1")).expect("sync page");
    assert!(sync.contains("whitelabel\\-org"), "{sync}");
    // Pages only for real commands: none for clap's `help` pseudo-command, and no
    // page lists one.
    for page in pages(&out) {
        let name = page.file_name().map(|n| n.to_string_lossy().into_owned());
        assert!(
            name.as_deref().is_some_and(|n| !n.contains("-help")),
            "{}",
            page.display()
        );
        let text = std::fs::read_to_string(&page).expect("page");
        assert!(!text.contains("\\-help("), "{}", page.display());
    }
}

/// The `.1` files in `dir`, sorted.
fn pages(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut pages: Vec<_> = std::fs::read_dir(dir)
        .expect("ls")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "1"))
        .collect();
    pages.sort();
    pages
}

#[test]
fn the_man_pages_are_lint_clean_under_mandoc() {
    let present = std::process::Command::new("mandoc")
        .arg("-Tlint")
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok();
    if !present {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but mandoc is missing (.ci/setup installs it)"
        );
        eprintln!("note: no mandoc; skipping the man pages' lint");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, stderr) = outputs(bin().arg("man").arg("--dir").arg(dir.path()));
    assert_eq!(code, Some(0), "{stderr}");
    let pages = pages(dir.path());
    assert!(pages.len() > commands().len(), "{pages:?}");
    let (code, out, err) = outputs(
        std::process::Command::new("mandoc")
            .args(["-Tlint", "-Wwarning"])
            .args(&pages),
    );
    assert_eq!(
        (out.as_str(), err.as_str()),
        ("", ""),
        "mandoc -Tlint -Wwarning"
    );
    assert_eq!(code, Some(0));
}
