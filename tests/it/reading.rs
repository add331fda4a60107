//! What a person reads on the pages and in the workbook, over a mirror of the small
//! world with 30 daily syncs: a metric's chart has a point for every day, a limit
//! projected past 10 years reads "not within 10 years" where a person reads it
//! while the files keep its date, an exceeded metric says since when it has been
//! over, and no page shows a raw timestamp or Markdown (tidy still finds no error).

use crate::common;
use crate::html::csv_rows;
use calamine::{Data, Reader, Xlsx, open_workbook};
use chrono::{Days, NaiveDate};
use orgledger::render::{self, ReportOutcome};
use orgledger::report::{self, Format, ReportOptions, entitlements};
use orgledger::sync;
use orgledger_sandbox::Profile;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Daily syncs after the first.
const DAYS: u64 = 30;

/// The small world synced once a day for [`DAYS`] days after its first sync.
async fn mirror(dir: &Path) -> PathBuf {
    let sb = common::sandbox(Profile::Small).await;
    let db = dir.join("mirror.db");
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    for day in 0..=DAYS {
        if day > 0 {
            assert_eq!(
                common::admin_post(&sb, "/sandbox/advance?days=1").await,
                200
            );
        }
        let run = sync::run(&client, &opts, None).await.expect("a sync runs");
        assert!(run.errors.is_empty(), "day {day}: {:?}", run.errors);
    }
    sb.shutdown().await;
    db
}

fn build(db: &Path, as_of: NaiveDate, out: &Path) -> ReportOutcome {
    let mut opts = ReportOptions::new(db, as_of);
    opts.formats = vec![Format::Csv, Format::Json, Format::Html, Format::Xlsx];
    opts.out_root = out.to_path_buf();
    render::run(&opts).expect("report run")
}

/// Each organization's page, by id.
fn pages(outcome: &ReportOutcome) -> BTreeMap<i64, String> {
    let id = |path: &Path| -> i64 {
        let stem = path.file_stem().and_then(|s| s.to_str());
        stem.and_then(|s| s.parse().ok()).expect("orgs/<id>.html")
    };
    outcome
        .pages
        .iter()
        .map(|f| (id(&f.path), std::fs::read_to_string(&f.path).expect("page")))
        .collect()
}

/// A metric as the pages name it.
fn metric_label(metric: &str) -> &str {
    match metric {
        "storage_bytes" => "storage",
        "compute_seconds" => "compute time",
        "gpu_compute_seconds" => "GPU time",
        other => other,
    }
}

/// The cells of the row of a page's limits table that is about `metric`.
fn limit_row(page: &str, metric: &str) -> Vec<String> {
    let start = page.find("<h2 id=\"limits\"").expect("a limits section");
    let table = &page[start
        ..page[start..]
            .find("</table>")
            .map_or(page.len(), |e| start + e)];
    let first = format!("<td>{}</td>", metric_label(metric));
    let row = table
        .split("<tr")
        .find(|row| row.contains(&first))
        .unwrap_or_else(|| panic!("no row of {metric}"));
    row.split("<td>")
        .skip(1)
        .map(|cell| text_of(&cell[..cell.find("</td>").expect("closed cell")]))
        .collect()
}

/// The text of some markup, its tags left out.
fn text_of(markup: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in markup.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// Every text a person can read or hear on a page: its text nodes (the charts'
/// labels, titles and descriptions among them), not its styles or attributes.
fn readable_text(page: &str) -> String {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(page, options).expect("well-formed");
    doc.descendants()
        .filter(|n| n.is_text())
        .filter(|n| n.parent().is_none_or(|p| !p.has_tag_name("style")))
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A timestamp as the API writes it (`2026-11-15T12:00:00...`) anywhere in `text`.
fn raw_timestamp(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..b.len()).find_map(|i| {
        let shaped = b[i] == b'T'
            && (1..=2).all(|k| i >= k && digit(i - k))
            && [1, 2, 4, 5, 7, 8].iter().all(|k| digit(i + k))
            && b.get(i + 3) == Some(&b':')
            && b.get(i + 6) == Some(&b':');
        shaped.then(|| &text[i.saturating_sub(10)..(i + 9).min(text.len())])
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_thirty_daily_syncs_the_pages_and_the_workbook_read_as_a_person_reads_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = mirror(dir.path()).await;
    let first = common::start_date();
    let as_of = first + Days::new(DAYS);
    let outcome = build(&db, as_of, &dir.path().join("out"));
    let pages = pages(&outcome);
    let limits = csv_rows(&outcome.dir.join("entitlements.csv"));

    a_metric_s_chart_has_a_point_for_every_day(&pages);
    far_projections_read_not_within_ten_years_where_a_person_reads_them(
        &outcome, &pages, &limits, as_of,
    );
    an_exceeded_metric_says_the_first_day_it_was_over(&db, &pages, &limits, first, as_of);
    no_page_shows_a_raw_timestamp_or_markdown(&outcome, &pages, dir.path());
}

/// Each metric chart of every page: a point a day from the first sync to T (the
/// window of 90 days holds them all).
fn a_metric_s_chart_has_a_point_for_every_day(pages: &BTreeMap<i64, String>) {
    let days = DAYS as usize + 1;
    let mut charts = 0;
    for (id, page) in pages {
        for svg in page.split("<svg ").skip(1) {
            let svg = &svg[..svg.find("</svg>").expect("closed svg")];
            if !svg.contains("aria-labelledby=\"chart-metric-") {
                continue;
            }
            charts += 1;
            assert_eq!(
                svg.matches("<circle").count(),
                days,
                "orgs/{id}.html: a point a day"
            );
            assert_eq!(
                svg.matches("</title></circle>").count(),
                days,
                "orgs/{id}.html: each with its value"
            );
        }
    }
    assert!(
        charts > pages.len(),
        "{charts} metric charts over {} pages",
        pages.len()
    );
}

fn far_projections_read_not_within_ten_years_where_a_person_reads_them(
    outcome: &ReportOutcome,
    pages: &BTreeMap<i64, String>,
    limits: &[HashMap<String, String>],
    as_of: NaiveDate,
) {
    let horizon = (as_of + chrono::Months::new(120)).to_string();
    let far: Vec<&HashMap<String, String>> = limits
        .iter()
        .filter(|r| !r["projected_exhaustion"].is_empty() && r["projected_exhaustion"] > horizon)
        .collect();
    assert!(
        !far.is_empty(),
        "the small world has a limit projected past 10 years"
    );
    let json = common::json_rows(&outcome.dir, entitlements::NAME.as_str());
    for row in &far {
        let (id, metric, date) = (
            &row["organization_id"],
            &row["metric"],
            &row["projected_exhaustion"],
        );
        let org = id.parse::<i64>().expect("id");
        let page = &pages[&org];
        let cells = limit_row(page, metric);
        assert_eq!(
            cells.last().map(String::as_str),
            Some("not within 10 years"),
            "orgs/{id}.html {metric}: {cells:?}"
        );
        assert!(!page.contains(date.as_str()), "orgs/{id}.html shows {date}");
        let kept = json
            .iter()
            .find(|j| j["organization_id"].as_i64() == Some(org) && j["metric"] == metric.as_str())
            .expect("the JSON row");
        assert_eq!(
            kept["projected_exhaustion"],
            date.as_str(),
            "the JSON keeps the date"
        );
    }
    // The workbook: its "Needs action" sheet says it as the page does; its
    // entitlements sheet keeps the date.
    let path = outcome.dir.join(format!("orgledger-{as_of}.xlsx"));
    let mut book: Xlsx<_> = open_workbook(&path).expect("the workbook opens");
    let action = book.worksheet_range("Needs action").expect("the sheet");
    let shown: Vec<Vec<String>> = action
        .rows()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
    let mut in_action = 0;
    for row in far
        .iter()
        .filter(|r| ["warning", "at_limit", "exceeded"].contains(&r["status"].as_str()))
    {
        let name = format!("{} (#{})", row["organization_name"], row["organization_id"]);
        let line = shown
            .iter()
            .find(|l| {
                l.first() == Some(&name)
                    && l.get(1).map(String::as_str) == Some(metric_label(&row["metric"]))
            })
            .unwrap_or_else(|| panic!("{name} {} needs action", row["metric"]));
        assert_eq!(
            line.get(7).map(String::as_str),
            Some("not within 10 years"),
            "{line:?}"
        );
        in_action += 1;
    }
    assert!(
        in_action > 0,
        "a limit that needs action is projected past 10 years"
    );
    let sheet = book
        .worksheet_range(entitlements::NAME.as_str())
        .expect("the entitlements sheet");
    let header: Vec<String> = sheet
        .rows()
        .next()
        .expect("header")
        .iter()
        .map(|c| c.to_string())
        .collect();
    let at = header
        .iter()
        .position(|h| h == "projected_exhaustion")
        .expect("the column");
    let excel_epoch = NaiveDate::from_ymd_opt(1899, 12, 30).expect("date");
    let beyond = (as_of + chrono::Months::new(120) - excel_epoch).num_days() as f64;
    let dates = sheet
        .rows()
        .skip(1)
        .filter(|r| matches!(&r[at], Data::DateTime(d) if d.as_f64() > beyond))
        .count();
    assert_eq!(
        dates,
        far.len(),
        "the entitlements sheet keeps every far date as a date"
    );
}

/// The day each exceeded metric was first over its limit in the spell that lasts
/// to T, by the entitlements report as of each day, against what its page says.
fn an_exceeded_metric_says_the_first_day_it_was_over(
    db: &Path,
    pages: &BTreeMap<i64, String>,
    limits: &[HashMap<String, String>],
    first: NaiveDate,
    as_of: NaiveDate,
) {
    let exceeded: Vec<(String, String)> = limits
        .iter()
        .filter(|r| r["status"] == "exceeded")
        .map(|r| (r["organization_id"].clone(), r["metric"].clone()))
        .collect();
    assert!(
        !exceeded.is_empty(),
        "the small world has an exceeded limit"
    );
    // Each day's status of each exceeded metric, oldest first.
    let mut statuses: HashMap<(String, String), Vec<(NaiveDate, String)>> = HashMap::new();
    for day in first.iter_days().take_while(|d| *d <= as_of) {
        let mut opts = ReportOptions::new(db, day);
        opts.names = vec![entitlements::NAME.as_str().to_string()];
        let tables = report::tables(&opts).expect("entitlements as of the day");
        let kept = tables
            .get(entitlements::NAME)
            .expect("kept")
            .whole()
            .expect("read");
        let text = |column: &str| -> Vec<String> {
            let c = kept
                .column(column)
                .expect(column)
                .cast(&polars::prelude::DataType::String)
                .expect("text");
            c.str()
                .expect("text")
                .iter()
                .map(|v| v.unwrap_or("").to_string())
                .collect()
        };
        let (orgs, metrics, status) = (text("organization_id"), text("metric"), text("status"));
        for ((org, metric), status) in orgs.into_iter().zip(metrics).zip(status) {
            if exceeded.contains(&(org.clone(), metric.clone())) {
                statuses
                    .entry((org, metric))
                    .or_default()
                    .push((day, status));
            }
        }
    }
    for (org, metric) in &exceeded {
        let days = &statuses[&(org.clone(), metric.clone())];
        let spell = days
            .iter()
            .rev()
            .take_while(|(_, s)| s == "exceeded")
            .count();
        let since = days[days.len() - spell].0;
        let expected = if since == first {
            format!("before {first} (the first sync)")
        } else {
            format!("on {since}")
        };
        let page = &pages[&org.parse::<i64>().expect("id")];
        let cells = limit_row(page, metric);
        assert_eq!(
            cells.last(),
            Some(&expected),
            "orgs/{org}.html {metric}: {cells:?}"
        );
    }
}

fn no_page_shows_a_raw_timestamp_or_markdown(
    outcome: &ReportOutcome,
    pages: &BTreeMap<i64, String>,
    dir: &Path,
) {
    let index = std::fs::read_to_string(outcome.dir.join("index.html")).expect("index.html");
    let all = std::iter::once(("index.html".to_string(), &index))
        .chain(pages.iter().map(|(id, p)| (format!("orgs/{id}.html"), p)));
    for (name, page) in all {
        let text = readable_text(page);
        assert!(!text.contains('`'), "{name} shows a backtick");
        assert_eq!(raw_timestamp(&text), None, "{name} shows a raw timestamp");
    }
    // Exact times stay on hover: the changes' and the source line's.
    assert!(
        index.contains(" title=\"20"),
        "index.html keeps exact times on hover"
    );
    let Some(tidy) = crate::smtp::tidy() else {
        return;
    };
    let busiest = pages.values().max_by_key(|p| p.len()).expect("a page");
    for (name, page) in [
        ("index.html", &index),
        ("the busiest organization page", busiest),
    ] {
        let file = dir.join("tidy.html");
        std::fs::write(&file, page).expect("write");
        let out = std::process::Command::new(&tidy)
            .args(["-q", "-e"])
            .arg(&file)
            .output()
            .expect("tidy runs");
        let said = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = said.lines().filter(|l| l.contains("Error:")).collect();
        assert!(errors.is_empty(), "tidy on {name}: {errors:?}");
    }
}
