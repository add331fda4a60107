//! The workbook holds every report's CSV rows: each number equal to the CSV's (the
//! 2^60 limit as text with its 19 digits), booleans and dates typed; it is listed in
//! the manifest with its checksum, and its "Needs action" sheet has the run's rows
//! that need action.

use crate::common;
use crate::html::csv_rows;
use crate::numbers::{shaped_world, start, sync_once};
use calamine::{Data, Reader, Xlsx, open_workbook};
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use serde_json::Value;
use sha2::Digest;
use std::path::Path;

/// Excel's serial of a CSV date or UTC timestamp.
fn serial(text: &str) -> f64 {
    let ms = match chrono::DateTime::parse_from_rfc3339(text) {
        Ok(at) => at.timestamp_millis(),
        Err(_) => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .expect("a date or a timestamp")
            .and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp_millis(),
    };
    25_569.0 + ms as f64 / 86_400_000.0
}

/// Checks one cell against the CSV's text and the JSON's typed value; returns
/// whether it is an integer written as text.
fn check(report: &str, column: &str, cell: &Data, csv: &str, json: &Value) -> bool {
    let at = format!("{report}.{column}: cell {cell:?}, CSV {csv:?}");
    match (json, cell) {
        // An empty text is an empty cell, as it is an empty CSV field.
        (Value::Null, Data::Empty) => assert_eq!(csv, "", "{at}"),
        (Value::String(s), Data::Empty) => {
            assert_eq!(s, "", "{at}");
            assert_eq!(csv, "", "{at}");
        }
        (Value::Number(_), Data::Float(x)) => {
            assert_eq!(Some(*x), csv.parse::<f64>().ok(), "{at}");
        }
        (Value::Number(n), Data::String(digits)) => {
            assert_eq!(digits, csv, "{at}");
            assert!(n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0));
            let significant = digits.trim_start_matches('-').trim_end_matches('0').len();
            assert!(significant > 15, "only long integers are text: {at}");
            return true;
        }
        (Value::Bool(b), Data::Bool(c)) => {
            assert_eq!(b, c, "{at}");
            assert_eq!(csv, b.to_string(), "{at}");
        }
        (Value::String(s), Data::String(t)) => {
            assert_eq!(s, t, "{at}");
            assert_eq!(csv, s, "{at}");
        }
        (Value::String(s), Data::DateTime(dt)) => {
            assert_eq!(csv, s, "{at}");
            assert!((dt.as_f64() - serial(s)).abs() < 1e-8, "{at}");
        }
        _ => panic!("unexpected cell type: {at}, JSON {json}"),
    }
    false
}

fn check_sheet(
    wb: &mut Xlsx<std::io::BufReader<std::fs::File>>,
    dir: &Path,
    report: &str,
) -> usize {
    let csv = csv_rows(&dir.join(format!("{report}.csv")));
    let json = common::json_rows(dir, report);
    let range = wb.worksheet_range(report).expect("a sheet per report");
    let mut rows = range.rows();
    let header: Vec<String> = rows
        .next()
        .expect("header row")
        .iter()
        .map(|d| d.to_string())
        .collect();
    let header_csv = std::fs::read_to_string(dir.join(format!("{report}.csv"))).expect("csv");
    assert_eq!(
        header.join(","),
        header_csv.lines().next().unwrap_or_default(),
        "{report}"
    );
    let mut as_text = 0;
    let mut count = 0;
    for ((cells, csv_row), json_row) in rows.zip(&csv).zip(&json) {
        for (column, cell) in header.iter().zip(cells) {
            if check(report, column, cell, &csv_row[column], &json_row[column]) {
                as_text += 1;
            }
        }
        count += 1;
    }
    assert_eq!(count, csv.len(), "{report}: every CSV row");
    assert_eq!(range.height(), csv.len() + 1, "{report}: no other rows");
    as_text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbook_has_every_csv_row_with_typed_cells_and_exact_numbers() {
    let (world, shape) = shaped_world();
    let sb = start(world).await;
    let (dir, db) = common::scratch();
    sync_once(&sb, &db).await;
    sb.shutdown().await;
    let mut opts = ReportOptions::new(&db, common::start_date());
    opts.formats = vec![Format::Csv, Format::Json, Format::Xlsx];
    opts.out_root = dir.path().join("r");
    let outcome = render::run(&opts).expect("reports build");

    let path = outcome
        .dir
        .join(format!("orgledger-{}.xlsx", common::start_date()));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.manifest).expect("manifest"))
            .expect("manifest JSON");
    let entry = manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["format"] == "xlsx")
        .expect("the workbook is in the manifest")
        .clone();
    let bytes = std::fs::read(&path).expect("the workbook is written");
    assert_eq!(
        entry["file"],
        path.file_name().expect("name").to_string_lossy().as_ref()
    );
    assert_eq!(entry["sha256"], hex::encode(sha2::Sha256::digest(&bytes)));
    assert_eq!(entry["bytes"], bytes.len());

    let mut wb: Xlsx<_> = open_workbook(&path).expect("the workbook opens");
    let reports: Vec<String> = outcome
        .files
        .iter()
        .filter(|f| f.format == Format::Csv)
        .map(|f| f.report.clone())
        .collect();
    let names = wb.sheet_names();
    assert_eq!(names.first().map(String::as_str), Some("Needs action"));
    assert_eq!(names.last().map(String::as_str), Some("About"));
    assert_eq!(names.len(), reports.len() + 2, "{names:?}");
    let mut as_text = 0;
    for report in &reports {
        as_text += check_sheet(&mut wb, &outcome.dir, report);
    }
    // The 2^60 compute limit of the shaped organization, and its remaining.
    assert!(as_text >= 1, "the 2^60 limit is text");
    let entitlements = wb.worksheet_range("entitlements").expect("sheet");
    assert!(
        entitlements
            .rows()
            .any(|r| r.contains(&Data::String("1152921504606846976".into()))),
        "organization {}: the limit keeps its 19 digits",
        shape.org
    );

    let needs = wb.worksheet_range("Needs action").expect("sheet");
    let statuses = |names: &[&str]| {
        needs
            .rows()
            .filter(|r| {
                r.iter()
                    .any(|c| names.iter().any(|n| *c == Data::String(n.to_string())))
            })
            .count()
    };
    let counts = outcome.attention.counts();
    assert_eq!(
        statuses(&["warning", "at_limit", "exceeded"]),
        counts.limits
    );
    assert_eq!(statuses(&["expiring", "expired"]), counts.trials);
}
