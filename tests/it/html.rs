//! `index.html` is well-formed, self-contained, accessible,
//! its charts plot exactly the numbers of the CSV files, it keeps personal data out
//! under `redact_pii`, and headless Chromium renders it to something not blank.

use crate::common;
use orgledger::render::{self, ReportOutcome};
use orgledger::report::{Format, ReportOptions};
use orgledger::sync;
use orgledger_sandbox::Profile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Syncs a small sandbox once into `dir` and returns the mirror's path.
async fn mirror(dir: &Path) -> PathBuf {
    let sb = common::sandbox(Profile::Small).await;
    let db = dir.join("mirror.db");
    sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    sb.shutdown().await;
    db
}

fn build(db: &Path, out: &Path, redact: bool) -> ReportOutcome {
    let mut opts = ReportOptions::new(db, common::start_date());
    opts.formats = vec![Format::Csv, Format::Html];
    opts.out_root = out.to_path_buf();
    opts.redact_pii = redact;
    render::run(&opts).expect("report run")
}

fn page(outcome: &ReportOutcome) -> String {
    std::fs::read_to_string(outcome.dir.join("index.html")).expect("index.html written")
}

/// The values of attribute `name` on every element of `html`.
fn attr_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" {name}=\"");
    html.match_indices(&needle)
        .filter_map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// A CSV file as rows of column → text.
pub(crate) fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).expect("csv opens");
    let headers: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.expect("csv record");
            headers
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// Numbers compare as numbers (exactly: both sides print the same f64), the rest
/// as text.
fn same_value(page: &str, csv: &str) -> bool {
    match (page.parse::<f64>(), csv.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => page == csv,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_page_is_well_formed_self_contained_and_accessible() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = mirror(dir.path()).await;
    let outcome = build(&db, &dir.path().join("out"), false);
    let html = page(&outcome);

    if let Err(e) = common::well_formed(&html) {
        panic!("index.html is not well-formed: {e}");
    }
    // Nothing from elsewhere: no scripts, stylesheets, fonts, images or CDNs; links
    // are relative (the CSV files next to the page) or in-page anchors.
    for banned in ["<script", "<link", "<img", "<iframe", "@import", "url("] {
        assert!(!html.contains(banned), "page contains {banned}");
    }
    for value in attr_values(&html, "src")
        .into_iter()
        .chain(attr_values(&html, "href"))
    {
        assert!(
            !value.contains("://") && !value.starts_with("//"),
            "external resource {value}"
        );
    }
    let hrefs = attr_values(&html, "href");
    for csv in ["entitlements.csv", "trials.csv", "compute_trends.csv"] {
        assert!(hrefs.contains(&csv), "no link to {csv}");
        assert!(outcome.dir.join(csv).is_file(), "{csv} is next to the page");
    }
    // Accessible basics: language, title, every chart an image with a title and a
    // description, axis descriptions in the SVG text.
    assert!(html.contains("<html lang=\"en\""));
    assert!(html.contains("<title>orgledger report as of 2026-06-01</title>"));
    let svgs: Vec<&str> = html.split("<svg ").skip(1).collect();
    assert_eq!(svgs.len(), 5, "usage, three trend windows, trials");
    for svg in &svgs {
        let head = &svg[..svg.find('>').expect("svg tag ends")];
        assert!(head.contains("role=\"img\""), "{head}");
        assert!(head.contains("aria-labelledby=\""), "{head}");
        assert!(svg.contains("<title id=\""), "chart without <title>");
        assert!(svg.contains("<desc id=\""), "chart without <desc>");
        assert!(svg.contains("<text"), "chart without text (axis labels)");
    }
    for axis in [
        "share of the limit used (%)",
        "hours",
        "day starting",
        "week starting",
        "month starting",
        "date",
    ] {
        assert!(html.contains(axis), "axis label {axis:?} missing");
    }
    // Units a person reads.
    assert!(html.contains(" GB<") && html.contains(" h<"));
    // The page is in the manifest like every other file.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&outcome.manifest).expect("manifest"))
            .expect("manifest parses");
    let entry = manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["file"] == "index.html")
        .expect("index.html in the manifest");
    assert_eq!(entry["format"], "html");
    assert_eq!(entry["bytes"].as_u64(), Some(html.len() as u64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_chart_points_equal_the_csv_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = mirror(dir.path()).await;
    let outcome = build(&db, &dir.path().join("out"), false);
    let html = page(&outcome);

    let mut csvs: HashMap<String, Vec<HashMap<String, String>>> = HashMap::new();
    let mut checked: HashMap<String, usize> = HashMap::new();
    // Each chart is a <figure data-chart data-source data-points> whose table rows
    // carry the CSV row key, column and the value the chart was drawn from (the
    // chart and the table are drawn from the same numbers).
    for figure in html.split("<figure ").skip(1) {
        let figure = &figure[..figure.find("</figure>").expect("figure closes")];
        let chart = attr_values(figure, "data-chart")[0].to_string();
        let source = attr_values(figure, "data-source")[0].to_string();
        let points: usize = attr_values(figure, "data-points")[0]
            .parse()
            .expect("data-points");
        let rows = csvs
            .entry(source.clone())
            .or_insert_with(|| csv_rows(&outcome.dir.join(&source)));
        let keys = attr_values(figure, "data-key");
        let columns = attr_values(figure, "data-column");
        let values = attr_values(figure, "data-value");
        assert_eq!(keys.len(), points, "{chart}: rows vs data-points");
        assert_eq!(columns.len(), points);
        assert_eq!(values.len(), points);
        for ((key, column), value) in keys.iter().zip(&columns).zip(&values) {
            let key = unescape(key);
            let wanted: Vec<(&str, &str)> =
                key.split(';').filter_map(|kv| kv.split_once('=')).collect();
            assert!(!wanted.is_empty(), "{chart}: point without key");
            let matching: Vec<&HashMap<String, String>> = rows
                .iter()
                .filter(|r| {
                    wanted
                        .iter()
                        .all(|(k, v)| r.get(*k).map(String::as_str) == Some(v))
                })
                .collect();
            assert_eq!(matching.len(), 1, "{chart}: {key} matches one CSV row");
            let csv_value = matching[0]
                .get(*column)
                .unwrap_or_else(|| panic!("{source} has no column {column}"));
            assert!(
                same_value(&unescape(value), csv_value),
                "{chart} {key} {column}: page {value} vs CSV {csv_value}"
            );
        }
        *checked.entry(chart).or_default() += points;
    }
    // The small world has limits with percentages, daily metrics and trials.
    for chart in ["usage", "trend-day", "trend-week", "trend-month"] {
        assert!(
            checked.get(chart).copied().unwrap_or(0) > 0,
            "{chart} has no data points: {checked:?}"
        );
    }
    assert!(checked.contains_key("trials"), "{checked:?}");
    // The day chart shows the white label and ten users over 30 days at most.
    assert!(checked["trend-day"] <= 11 * 30, "{checked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_page_keeps_personal_data_out_when_redacting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = mirror(dir.path()).await;
    let plain = build(&db, &dir.path().join("plain"), false);
    let redacted = build(&db, &dir.path().join("redacted"), true);
    let html = page(&redacted);
    assert!(common::well_formed(&html).is_ok());
    let mut people: Vec<String> = Vec::new();
    for row in csv_rows(&plain.dir.join("trials.csv")) {
        people.extend(["user_name", "user_email"].map(|c| row[c].clone()));
    }
    for row in csv_rows(&plain.dir.join("compute_trends.csv")) {
        if row["entity_type"] == "user" {
            people.push(row["entity_name"].clone());
        }
    }
    people.retain(|p| p.len() > 3);
    people.sort();
    people.dedup();
    assert!(!people.is_empty());
    // The unredacted page does name them (so the check below means something).
    let plain_html = page(&plain);
    assert!(people.iter().any(|p| plain_html.contains(p.as_str())));
    // The page says no more than the redacted CSV files: organization names are kept
    // by design, and a developer profile's organization is named after its person.
    let mut redacted_csvs = String::new();
    for f in &redacted.files {
        if f.format == Format::Csv {
            redacted_csvs.push_str(&std::fs::read_to_string(&f.path).expect("csv"));
        }
    }
    let mut hidden = 0;
    for person in &people {
        if person.contains('@') || !redacted_csvs.contains(person.as_str()) {
            assert!(
                !html.contains(person.as_str()),
                "redacted page names {person}"
            );
            hidden += 1;
        }
    }
    assert!(hidden > 0);
    assert!(
        !html.contains(".example"),
        "an e-mail domain on the redacted page"
    );
    assert!(html.contains("Personal data is replaced by pseudonyms."));
}

/// `chromium` or `chromium-browser` on PATH.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Chromium, or None (with a note) where it is not installed; on CI it must be.
pub(crate) fn chromium() -> Option<PathBuf> {
    let found = find_chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but chromium is not installed (.ci/setup installs it)"
        );
        eprintln!("note: chromium not on PATH; skipping the headless rendering test");
    }
    found
}

/// A PNG screenshot of `page` by headless Chromium at `size`, its profile in `dir`.
pub(crate) async fn screenshot(
    chromium: &Path,
    page: &Path,
    size: (u32, u32),
    dir: &Path,
) -> Vec<u8> {
    let shot = dir.join("shot.png");
    let mut child = tokio::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium-profile").display()
        ))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("chromium starts");
    let status = tokio::time::timeout(std::time::Duration::from_secs(90), child.wait())
        .await
        .expect("chromium finishes within 90 s")
        .expect("chromium exit status");
    assert!(status.success(), "chromium failed: {status}");
    let bytes = std::fs::read(&shot).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_page_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = mirror(dir.path()).await;
    let outcome = build(&db, &dir.path().join("out"), false);
    let index = outcome
        .dir
        .join("index.html")
        .canonicalize()
        .expect("index.html");
    let bytes = screenshot(&chromium, &index, (1280, 800), dir.path()).await;
    // Not blank, without a PNG decoder: a blank 1280×800 screenshot compresses to a
    // few KB, while the page's first screen (text, cards, the usage chart's bars and
    // labels) is well over 20 KB.
    assert!(
        bytes.len() > 20_000,
        "screenshot is {} bytes: the page rendered blank",
        bytes.len()
    );
}
