//! `orgledger report` and `orgledger demo` through the binary: an as-of date the
//! mirror cannot answer for is refused (exit 2) with the day its data starts, the
//! demo's terminal summary counts exactly what its HTML cards and CSV files say,
//! and the list of files a report run prints says what each file holds.

use crate::common;
use crate::html::csv_rows;
use orgledger::sandbox::Profile;
use orgledger::sync;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary with no credentials, URL, mirror or config from the environment.
fn orgledger(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(args)
        .env_remove("ORGLEDGER_JWT")
        .env_remove("ORGLEDGER_API_KEY")
        .env_remove("ORGLEDGER_BASE_URL")
        .env_remove("ORGLEDGER_DB")
        .env_remove("ORGLEDGER_CONFIG")
        .env("NO_COLOR", "1")
        .output()
        .expect("orgledger runs")
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_as_of_before_the_first_sync_or_in_the_future_exits_2_naming_the_first_day() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    sb.shutdown().await;
    let first: String = common::open(&db)
        .query_row(
            "SELECT substr(MIN(observed_at), 1, 10) FROM sync_runs",
            [],
            |r| r.get(0),
        )
        .expect("first run");
    assert_eq!(first, common::start_date().to_string());
    let out = dir.path().join("reports");
    let report = |as_of: &str| {
        orgledger(&[
            "--db",
            utf8(&db),
            "report",
            "--as-of",
            as_of,
            "--out",
            utf8(&out),
        ])
    };

    let before = report("2020-01-01");
    let stderr = String::from_utf8_lossy(&before.stderr);
    assert_eq!(before.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("holds data from {first} on")),
        "{stderr}"
    );
    assert!(stderr.contains("2020-01-01"), "{stderr}");
    assert!(
        !out.join("2020-01-01").exists(),
        "no files of zeros are written"
    );

    let future = report("2999-01-01");
    let stderr = String::from_utf8_lossy(&future.stderr);
    assert_eq!(future.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("in the future"), "{stderr}");
    assert!(!out.join("2999-01-01").exists());

    // The first day itself has data.
    let first_day = report(&first);
    assert!(
        first_day.status.success(),
        "{}",
        String::from_utf8_lossy(&first_day.stderr)
    );
    assert!(out.join(&first).join("entitlements.csv").is_file());
}

/// The first number after `prefix` in the line that starts with it, and the numbers
/// in its parentheses.
fn summary_numbers(text: &str, prefix: &str) -> Vec<usize> {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in the summary:\n{text}"));
    line[prefix.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().expect("number"))
        .collect()
}

/// The `data-*` numbers of the card `<li data-count="{name}" ...>`.
fn card(html: &str, name: &str) -> HashMap<String, usize> {
    let start = html
        .find(&format!("<li data-count=\"{name}\""))
        .unwrap_or_else(|| panic!("no {name} card"));
    let tag = &html[start..start + html[start..].find('>').expect("tag ends")];
    tag.split(" data-")
        .skip(1)
        .filter_map(|attr| {
            let (key, value) = attr.split_once("=\"")?;
            let value = value.trim_end_matches('"');
            Some((key.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The one dated folder the demo wrote its reports into.
fn report_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("out dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn demo_summary_counts_equal_the_html_cards_and_the_csv_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("demo");
    let run = orgledger(&["demo", "--days", "30", "--out", utf8(&out)]);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reports = report_dir(&out);
    let html = std::fs::read_to_string(reports.join("index.html")).expect("index.html");

    // From the CSV files.
    let entitlements = csv_rows(&reports.join("entitlements.csv"));
    let per_status = |s: &str| entitlements.iter().filter(|r| r["status"] == s).count();
    let (exceeded, at_limit, warning) = (
        per_status("exceeded"),
        per_status("at_limit"),
        per_status("warning"),
    );
    let orgs: BTreeSet<&str> = entitlements
        .iter()
        .filter(|r| matches!(r["status"].as_str(), "exceeded" | "at_limit" | "warning"))
        .map(|r| r["organization_id"].as_str())
        .collect();
    let trials = csv_rows(&reports.join("trials.csv"));
    let expired = trials.iter().filter(|r| r["status"] == "expired").count();
    let expiring = trials.iter().filter(|r| r["status"] == "expiring").count();
    let flagged = csv_rows(&reports.join("project_compute.csv"))
        .iter()
        .filter(|r| r["flagged"] == "true")
        .count();
    let limits = exceeded + at_limit + warning;
    // The demo world has something in each list, so equal counts mean something.
    assert!(limits > 0 && expired + expiring > 0, "{stdout}");

    // The terminal summary.
    assert_eq!(
        summary_numbers(&stdout, "Limits at warning, at the limit or over: "),
        vec![limits, orgs.len(), exceeded, at_limit, warning],
        "{stdout}"
    );
    assert_eq!(
        summary_numbers(&stdout, "Trials expiring or expired: "),
        vec![expired + expiring, expired, expiring],
        "{stdout}"
    );
    assert_eq!(
        summary_numbers(&stdout, "Projects over the compute budget flag: "),
        vec![flagged],
        "{stdout}"
    );

    // The HTML cards.
    let c = card(&html, "limits");
    assert_eq!(c["value"], limits);
    assert_eq!(c["organizations"], orgs.len());
    assert_eq!(
        (c["exceeded"], c["at-limit"], c["warning"]),
        (exceeded, at_limit, warning)
    );
    let c = card(&html, "trials");
    assert_eq!(
        (c["value"], c["expired"], c["expiring"]),
        (expired + expiring, expired, expiring)
    );
    assert_eq!(card(&html, "projects")["value"], flagged);
    assert!(
        !stdout.contains("\n\n\n"),
        "two blank lines in a row:\n{stdout}"
    );

    the_file_list_says_what_each_file_holds(&out);
}

/// `report` over the demo's mirror in CSV, HTML and the workbook: each line of its
/// file list counts what a person opens the file for.
fn the_file_list_says_what_each_file_holds(demo: &Path) {
    let out = demo.join("again");
    let run = orgledger(&[
        "--db",
        utf8(&demo.join("demo.db")),
        "report",
        "--format",
        "csv,html,xlsx",
        "--out",
        utf8(&out),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reports = report_dir(&out);
    // The number at the start of the line that lists `file`, and the word after it.
    let holds = |file: &str| -> (usize, String) {
        let line = stdout
            .lines()
            .find(|l| l.ends_with(file))
            .unwrap_or_else(|| panic!("no line for {file}:\n{stdout}"));
        let mut words = line.split_whitespace();
        let n = words.next().and_then(|w| w.parse().ok()).expect("a count");
        (n, words.next().unwrap_or("").to_string())
    };
    let pages = std::fs::read_dir(reports.join("orgs"))
        .expect("orgs/")
        .count();
    assert_eq!(holds("index.html"), (pages, "organizations".to_string()));
    let rows = csv_rows(&reports.join("entitlements.csv")).len();
    assert_eq!(holds("entitlements.csv"), (rows, "rows".to_string()));
    let book = std::fs::read_dir(&reports)
        .expect("report folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "xlsx"))
        .expect("the workbook");
    let sheets = calamine::open_workbook_auto(&book)
        .map(|b| calamine::Reader::sheet_names(&b).len())
        .expect("the workbook opens");
    let name = book.file_name().and_then(|n| n.to_str()).expect("name");
    assert_eq!(holds(name), (sheets, "sheets".to_string()));
}
