//! What the first commands say, through the real binary: a wrong `--whitelabel-org`,
//! sync failures printed once with a query that can be pasted, where the demo's
//! mirror is, the help of each command, `status` and `query --format json`, and the
//! demo page's cards and chart labels.

use crate::common::{self, arg, bin, outputs};
use orgledger::sandbox::{Profile, SandboxHandle};
use orgledger::sync;
use std::path::Path;
use std::process::Command;

/// The binary on `db`, connected to the sandbox with its JWT.
fn connected(sb: &SandboxHandle, db: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(["--db", arg(db)])
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt);
    cmd
}

/// A mirror of the sandbox's world, synced in this process.
async fn synced(sb: &SandboxHandle, db: &Path) {
    let outcome = sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
}

/// Runs a command line as a user pastes it into a POSIX shell, in `dir`.
fn pasted(line: &str, dir: &Path) -> (Option<i32>, String, String) {
    outputs(
        common::clean(Command::new("sh"))
            .args(["-c", line])
            .current_dir(dir),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_whitelabel_org_stops_the_sync_at_once_in_one_line_naming_the_option() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let (code, stdout, stderr) =
        outputs(connected(&sb, &db).args(["sync", "--no-progress", "--whitelabel-org", "4242"]));
    assert_eq!(code, Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("4242")).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains("--whitelabel-org 4242"), "{stderr}");
    assert!(lines[0].contains("HTTP 404"), "the answer: {stderr}");
    assert!(stdout.contains("sync run 1 failed"), "{stdout}");
    let conn = common::open(&db);
    assert_eq!(common::count(&conn, "SELECT COUNT(*) FROM users"), 0);
    assert_eq!(common::count(&conn, "SELECT COUNT(*) FROM sync_errors"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sync_failure_is_printed_once_and_the_query_for_the_rest_runs_as_pasted() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    synced(&sb, &db).await;
    let projects: Vec<i64> = {
        let conn = common::open(&db);
        let mut stmt = conn
            .prepare("SELECT p.id FROM projects p JOIN project_info i ON i.project_id = p.id WHERE p.removed_at IS NULL AND p.deleted_date IS NULL ORDER BY p.id LIMIT 12")
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("ids")
    };
    assert_eq!(projects.len(), 12);
    for p in &projects {
        let route = format!("/sandbox/fail?path=/v1/api/{p}&status=404");
        assert_eq!(common::admin_post(&sb, &route).await, 200);
    }
    let config = dir.path().join("orgledger.toml");
    let wl = sb.info.whitelabel_organization_id;
    std::fs::write(&config, format!("whitelabel_org = {wl}\n")).expect("config");
    let (code, _, stderr) =
        outputs(connected(&sb, &db).args(["--config", arg(&config), "sync", "--no-progress"]));
    assert_eq!(code, Some(3), "{stderr}");
    for p in &projects {
        let url = format!("{}/v1/api/{p}:", sb.info.url);
        assert!(stderr.matches(&url).count() <= 1, "{url} once: {stderr}");
    }
    assert_eq!(stderr.matches("  failed: ").count(), 10, "{stderr}");
    let tip = stderr
        .lines()
        .find_map(|l| l.split_once("... and 2 more: ").map(|(_, tip)| tip))
        .unwrap_or_else(|| panic!("a query for the rest: {stderr}"));
    assert!(tip.contains(&format!("--db {}", arg(&db))), "{tip}");
    assert!(tip.contains(&format!("--config {}", arg(&config))), "{tip}");
    let (code, rows, err) = pasted(tip, Path::new("/"));
    assert_eq!(code, Some(0), "{tip}: {err}");
    let listed = rows.lines().filter(|l| l.starts_with("get-project-info"));
    assert_eq!(listed.count(), 12, "{rows}");
}

/// Runs the demo on a one-day `small` world into `dir/out`, from `dir`.
fn demo(dir: &Path) -> String {
    let (code, stdout, stderr) = outputs(
        bin()
            .current_dir(dir)
            .args(["demo", "--days", "1", "--out", "out"]),
    );
    assert_eq!(code, Some(0), "{stderr}");
    stdout
}

#[test]
fn the_demo_says_where_its_mirror_is_and_ends_with_the_commands_that_read_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stdout = demo(dir.path());
    let last = stdout.lines().last().expect("a last line");
    let (status, query) = last
        .strip_prefix("look inside: ")
        .and_then(|rest| rest.split_once("   or: "))
        .unwrap_or_else(|| panic!("the commands: {last}"));
    assert!(status.ends_with(" --db out/demo.db status"), "{last}");
    let (code, shown, err) = pasted(status, dir.path());
    assert_eq!(code, Some(0), "{status}: {err}");
    assert!(shown.starts_with("mirror: out/demo.db\n"), "{shown}");
    let (code, rows, err) = pasted(query, dir.path());
    assert_eq!(code, Some(0), "{query}: {err}");
    assert!(rows.lines().count() > 2, "{rows}");
    assert!(!dir.path().join("orgledger.db").exists());

    let (_, help, _) = outputs(bin().args(["demo", "--help"]));
    assert!(help.contains("reports/demo.db"), "{help}");
    let (_, help, _) = outputs(bin().args(["status", "--help"]));
    assert!(help.contains("[default: orgledger.db"), "{help}");
}

#[test]
fn the_page_cards_show_no_backticks_and_chart_labels_are_whole_or_carry_their_whole_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo(dir.path());
    let day = std::fs::read_dir(dir.path().join("out"))
        .expect("out")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir())
        .expect("the as-of folder");
    let page = std::fs::read_to_string(day.join("index.html")).expect("page");
    common::well_formed(&page).expect("well-formed");
    let cards = &page[page.find("<ul class=\"cards\">").expect("cards")..];
    let cards = &cards[..cards.find("</ul>").expect("end of cards")];
    assert!(!cards.contains('`'), "{cards}");
    for text in page.split("<text ").skip(1) {
        let text = &text[..text.find("</text>").expect("closed")];
        if text.contains('…') {
            assert!(
                text.contains("<title>"),
                "a cut label without its whole name: {text}"
            );
        }
    }
    // The demo's longest names fit whole: the usage bar's and the trial's.
    let label = |whole: &str| format!(">\n{whole}\n</text>");
    assert!(page.contains(&label("Hard case: storage at the limit · storage")));
    assert!(page.contains(&label(
        "#401 Hard Case Departing (Hard case: trial of a departing user)"
    )));
}

/// A command's `--help`.
fn help(command: &[&str]) -> String {
    let (code, text, err) = outputs(bin().args(command).arg("--help"));
    assert_eq!(code, Some(0), "{err}");
    text
}

#[test]
fn each_help_lists_its_own_options_first_and_not_the_global_ones_it_ignores() {
    let sync = help(&["sync"]);
    let global = sync.find("Global options:").expect("a heading of its own");
    assert!(
        sync.find("--whitelabel-org").expect("own option") < global,
        "{sync}"
    );
    assert!(
        sync.find("--db <PATH>").expect("global option") > global,
        "{sync}"
    );
    for command in [&["sandbox"][..], &["bench"], &["completions"], &["man"]] {
        let text = help(command);
        assert!(!text.contains("--db"), "{command:?}: {text}");
        assert!(!text.contains("--config"), "{command:?}: {text}");
        assert!(text.contains("--verbose"), "{command:?}: {text}");
    }
    for command in [
        &["api"][..],
        &["api", "get-organization"],
        &["project", "create"],
    ] {
        let text = help(command);
        for ignored in ["--db", "--concurrency", "--rps", "--outage-limit"] {
            assert!(
                !text.contains(ignored),
                "{command:?} lists {ignored}: {text}"
            );
        }
        assert!(text.contains("--config"), "{command:?}: {text}");
    }
    assert!(help(&["api"]).contains("--base-url"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_empty_sections_in_words_and_names_no_internals() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    synced(&sb, &db).await;
    let (code, text, err) = outputs(bin().args(["--db", arg(&db), "status"]));
    assert_eq!(code, Some(0), "{err}");
    for internal in [
        "packed",
        "users_not_prepared",
        "reports_read",
        "daily_series",
    ] {
        assert!(!text.contains(internal), "{internal}: {text}");
    }
    assert!(text.contains("\nrecent errors: none\n"), "{text}");
    assert!(text.contains("\nalert outbox: no events\n"), "{text}");
    assert!(text.contains("ready for reports"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.is_empty() && line.chars().all(|c| c == '-' || c == ' ') {
            let next = lines.get(i + 1).copied().unwrap_or("");
            assert!(
                !next.is_empty(),
                "a table without rows before line {i}: {text}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_json_keeps_the_columns_in_the_order_of_the_select() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    synced(&sb, &db).await;
    let sql = "SELECT name, id AS a_id, 'x' AS zz, 1 AS b FROM organizations ORDER BY id LIMIT 2";
    let (code, json, err) =
        outputs(bin().args(["--db", arg(&db), "query", sql, "--format", "json"]));
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).expect("JSON rows");
    assert_eq!(rows.len(), 2);
    let first = &json[..json.find('}').expect("an object")];
    let at = |key: &str| {
        first
            .find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("{key}: {json}"))
    };
    assert!(
        at("name") < at("a_id") && at("a_id") < at("zz") && at("zz") < at("b"),
        "{json}"
    );
}
