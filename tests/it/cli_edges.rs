//! What a user meets at the edges of the command line, through the binary: a
//! closed pipe ends a command quietly, every command that takes a date refuses the
//! same impossible dates with the same words, and usage mistakes (a bad cron field,
//! a misspelled report, an empty query) exit 2 saying what is wrong.

use crate::common::{self, orgledger};
use std::process::{Command, Output, Stdio};

/// Exit code of a usage mistake.
const USAGE: i32 = 2;

/// Runs `cmd` with its standard output closed before it writes anything.
fn with_closed_stdout(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    drop(child.stdout.take());
    child.wait_with_output().expect("ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_each_printing_command_quietly() {
    let (sb, _dir, db) = common::synced().await;
    let commands: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["query", "SELECT * FROM organizations"],
        vec!["changes", "--since", "run:1", "--all-fields"],
    ];
    for args in commands {
        let out = with_closed_stdout(orgledger(&db).args(&args));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} said: {stderr}");
    }
    let out = with_closed_stdout(
        orgledger(&db)
            .args(["api", "list-organizations"])
            .env("ORGLEDGER_BASE_URL", &sb.info.url)
            .env("ORGLEDGER_JWT", &sb.info.jwt),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "api said: {stderr}");
}

/// The `error:` line of a command that must fail with `code`.
fn error_line(cmd: &mut Command, code: i32) -> String {
    let out = cmd.output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in: {stderr}"))
        .to_string()
}

/// The part of an error line after the flag or command that led to it.
fn reason(line: &str) -> &str {
    line.split_once("no data as of")
        .map(|(_, rest)| rest)
        .or_else(|| line.split_once("the as-of date").map(|(_, rest)| rest))
        .unwrap_or(line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_date_taking_command_refuses_impossible_dates_with_the_same_words() {
    let (_sb, dir, db) = common::synced().await;
    let out_dir = dir.path().join("reports");
    let out = out_dir.to_str().expect("utf-8");
    for (day, words) in [
        ("2030-01-01", "is in the future"),
        ("2026-05-01", "holds data from 2026-06-01 on"),
    ] {
        let report = error_line(
            orgledger(&db).args(["report", "--out", out, "--as-of", day]),
            USAGE,
        );
        let query = error_line(
            orgledger(&db).args(["query", "SELECT 1", "--as-of", day]),
            USAGE,
        );
        let changes = error_line(
            orgledger(&db).args(["changes", "--since", "run:1", "--until", day]),
            USAGE,
        );
        let alerts = error_line(
            orgledger(&db).args(["alerts", "--dry-run", "--as-of", day]),
            USAGE,
        );
        for line in [&report, &query, &changes, &alerts] {
            assert!(line.contains(words), "{line}");
            assert_eq!(reason(line), reason(&report));
        }
    }
    // A window that starts before the first sync reads from the mirror's start.
    let early = orgledger(&db)
        .args(["changes", "--since", "2026-05-01"])
        .output()
        .expect("runs");
    assert!(
        early.status.success(),
        "{}",
        String::from_utf8_lossy(&early.stderr)
    );
    let inverted = error_line(
        orgledger(&db).args(["changes", "--since", "2026-06-03", "--until", "2026-06-02"]),
        USAGE,
    );
    assert!(
        inverted.contains("a window must end after it starts"),
        "{inverted}"
    );
    for args in [
        vec!["changes", "--since", "2026-11-31"],
        vec!["report", "--as-of", "2026-11-31"],
        vec!["query", "SELECT 1", "--as-of", "2026-11-31"],
    ] {
        let out = orgledger(&db).args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(USAGE), "{args:?}: {stderr}");
        assert!(
            stderr.contains("`2026-11-31` is not a calendar date; give it as YYYY-MM-DD"),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_mistakes_exit_2_and_say_what_is_wrong() {
    let (_sb, dir, db) = common::synced().await;
    let cron = error_line(
        orgledger(&db).args(["daemon", "--sync-cron", "0 99 * * * *"]),
        USAGE,
    );
    assert!(
        cron.contains("the minute field `99` is not valid"),
        "{cron}"
    );
    let out = dir.path().join("r");
    let report = error_line(
        orgledger(&db).args([
            "report",
            "entitlement",
            "--out",
            out.to_str().expect("utf-8"),
        ]),
        USAGE,
    );
    assert!(
        report.contains("unknown report \"entitlement\"; did you mean \"entitlements\"?"),
        "{report}"
    );
    let far = error_line(
        orgledger(&db).args(["report", "billing", "--out", out.to_str().expect("utf-8")]),
        USAGE,
    );
    assert!(
        far.contains("unknown report \"billing\"; valid reports: "),
        "{far}"
    );
    let query = error_line(orgledger(&db).args(["query", " ; "]), USAGE);
    assert!(query.contains("the query is empty"), "{query}");
}
