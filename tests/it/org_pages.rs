//! A page per organization (`orgs/<id>.html`, with the HTML format): one for every
//! organization of `entitlements`, linked from `index.html`, well-formed and
//! self-contained, showing the organization's own rows of the reports, its history,
//! members, changes and alerts; personal data kept out under `redact_pii`; and
//! headless Chromium renders one with every section present.

use crate::common;
use crate::html::{chromium, csv_rows, screenshot};
use orgledger::render::{self, ReportOutcome};
use orgledger::report::{Format, ReportOptions};
use orgledger::sync;
use orgledger_sandbox::Profile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A small world synced twice, 15 days apart (sparse history: no sync on the days
/// between), with its alerts evaluated; returns the mirror and the day of the second
/// sync.
async fn mirror(dir: &Path) -> (PathBuf, chrono::NaiveDate) {
    let sb = common::sandbox(Profile::Small).await;
    let db = dir.join("mirror.db");
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    sync::run(&client, &opts, None).await.expect("first sync");
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=15").await,
        200
    );
    sync::run(&client, &opts, None).await.expect("second sync");
    sb.shutdown().await;
    let as_of = common::start_date() + chrono::Days::new(15);
    let jsonl = dir.join("alerts.jsonl");
    let alerts = common::orgledger(&db)
        .args(["alerts", "--as-of", &as_of.to_string(), "--jsonl"])
        .arg(&jsonl)
        .output()
        .expect("alerts run");
    assert!(
        alerts.status.success(),
        "{}",
        String::from_utf8_lossy(&alerts.stderr)
    );
    (db, as_of)
}

fn build(db: &Path, as_of: chrono::NaiveDate, out: &Path, redact: bool) -> ReportOutcome {
    let mut opts = ReportOptions::new(db, as_of);
    opts.formats = vec![Format::Csv, Format::Html];
    opts.out_root = out.to_path_buf();
    opts.redact_pii = redact;
    render::run(&opts).expect("report run")
}

/// Each organization's page text, by id.
fn pages(outcome: &ReportOutcome) -> BTreeMap<i64, String> {
    outcome
        .pages
        .iter()
        .map(|f| {
            let id = f
                .path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok())
                .expect("orgs/<id>.html");
            (id, std::fs::read_to_string(&f.path).expect("page"))
        })
        .collect()
}

/// The text between `<h2 id="{id}"` and the next `<h2`.
fn section<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<h2 id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let rest = &page[start + 4..];
    &rest[..rest.find("<h2").unwrap_or(rest.len())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_organization_has_a_page_with_its_own_rows_history_changes_and_alerts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, as_of) = mirror(dir.path()).await;
    let outcome = build(&db, as_of, &dir.path().join("out"), false);
    let pages = pages(&outcome);

    let limits = csv_rows(&outcome.dir.join("entitlements.csv"));
    let mut orgs: BTreeMap<i64, Vec<&std::collections::HashMap<String, String>>> = BTreeMap::new();
    for row in &limits {
        orgs.entry(row["organization_id"].parse().expect("id"))
            .or_default()
            .push(row);
    }
    assert!(orgs.len() > 10, "{} organizations", orgs.len());
    assert_eq!(
        pages.keys().collect::<Vec<_>>(),
        orgs.keys().collect::<Vec<_>>(),
        "a page for every organization of entitlements, and no other"
    );
    let index = std::fs::read_to_string(outcome.dir.join("index.html")).expect("index");
    let manifest = std::fs::read_to_string(&outcome.manifest).expect("manifest");
    for (id, rows) in &orgs {
        let page = &pages[id];
        common::well_formed(page).unwrap_or_else(|e| panic!("orgs/{id}.html: {e}"));
        assert!(
            index.contains(&format!("href=\"orgs/{id}.html\"")),
            "index links {id}"
        );
        assert!(
            manifest.contains(&format!("\"orgs/{id}.html\"")),
            "manifest lists {id}"
        );
        for outside in ["<script", "src=\"http", "href=\"http"] {
            assert!(!page.contains(outside), "orgs/{id}.html has {outside}");
        }
        let table = section(page, "limits");
        for row in rows {
            assert!(
                table.contains(&format!("<td>{}</td>", row["used_human"])),
                "{id}: {row:?}"
            );
            assert!(
                table.contains(&format!("<td>{}</td>", row["limit_human"])),
                "{id}: {row:?}"
            );
        }
        for id in [
            "limits", "trials", "projects", "members", "changes", "alerts",
        ] {
            section(page, id);
        }
    }
    // Two syncs 15 days apart: a point for each of the 16 days, the days between
    // them holding what the first sync saw.
    let charted = pages
        .values()
        .find(|p| p.contains("<svg"))
        .expect("a page with charts");
    assert!(
        charted.contains("one value a day (16 days;"),
        "the chart's text says its days"
    );
    let chart = &charted[charted
        .find("aria-labelledby=\"chart-metric-0")
        .expect("a metric chart")..];
    let chart = &chart[..chart.find("</svg>").expect("closed")];
    assert_eq!(chart.matches("</title></circle>").count(), 16, "{chart}");
    let full = |p: &&String| {
        ["trials", "changes", "alerts"]
            .iter()
            .all(|s| section(p, s).contains("<table"))
    };
    assert!(
        pages.values().any(|p| full(&p)),
        "some organization has trials, changes and alerts"
    );
    // The projects of an organization are its project_compute rows.
    let projects = csv_rows(&outcome.dir.join("project_compute.csv"));
    for p in projects.iter().take(50) {
        let Ok(org) = p["organization_id"].parse::<i64>() else {
            continue;
        };
        let Some(page) = pages.get(&org) else {
            continue;
        };
        assert!(
            section(page, "projects").contains(&format!("<td>{}</td>", p["project_id"])),
            "project {} on the page of {org}",
            p["project_id"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_pages_keep_personal_data_out_when_redacting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, as_of) = mirror(dir.path()).await;
    let plain = pages(&build(&db, as_of, &dir.path().join("plain"), false));
    let redacted = pages(&build(&db, as_of, &dir.path().join("redacted"), true));
    // The style sheet's `@media` is not an address: only the body counts.
    let body = |page: &str| page[page.find("<body").unwrap_or(0)..].to_string();
    assert!(
        plain.values().any(|p| body(p).contains('@')),
        "members' e-mails are shown"
    );
    for (id, page) in &redacted {
        let page = body(page);
        if let Some(at) = page.find('@') {
            let around = &page[at.saturating_sub(200)..(at + 40).min(page.len())];
            panic!("orgs/{id}.html has an e-mail address: {around}");
        }
        let members = section(&page, "members");
        if members.contains("<table") {
            assert!(members.contains("user-"), "orgs/{id}.html: pseudonyms");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_page_with_every_section_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, as_of) = mirror(dir.path()).await;
    let outcome = build(&db, as_of, &dir.path().join("out"), false);
    let (id, _) = pages(&outcome)
        .into_iter()
        .find(|(_, p)| {
            ["trials", "projects", "members", "changes", "alerts"]
                .iter()
                .all(|s| section(p, s).contains("<table"))
                && p.contains("<svg")
        })
        .expect("an organization with every section");
    let page = outcome.dir.join(format!("orgs/{id}.html"));
    let bytes = screenshot(&chromium, &page, (1280, 1600), dir.path()).await;
    // A blank screenshot compresses to a few KB; tables and charts to far more.
    assert!(
        bytes.len() > 40_000,
        "screenshot is {} bytes: blank",
        bytes.len()
    );
}
