//! `compute_trends` and `usage_summary` read each user's days from the packed series
//! the sync keeps in `daily_series`; a report whose section over the daily metrics is
//! not the shipped one reads them row by row. Over a synced sandbox world, moved on
//! and synced again (days revised and added), both give the same reports, byte for
//! byte.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::report::{self, Format, ReportOptions};
use orgledger::sandbox::Profile;
use orgledger::sync;
use std::path::Path;

/// The two reports that read the packed series, and the section each reads them for.
const READERS: [(&str, &str); 2] = [("compute_trends", "daily"), ("usage_summary", "storage")];

/// Builds the [`READERS`] as of `as_of` in CSV and returns their files' text.
fn reports_csv(
    db: &Path,
    out: &Path,
    as_of: chrono::NaiveDate,
    queries: Option<&Path>,
) -> Vec<String> {
    let mut opts = ReportOptions::new(db, as_of);
    opts.names = READERS.iter().map(|(name, _)| name.to_string()).collect();
    opts.formats = vec![Format::Csv];
    opts.out_root = out.to_path_buf();
    opts.queries_dir = queries.map(Path::to_path_buf);
    let dir = report::run(&opts).expect("the reports build").dir;
    READERS
        .iter()
        .map(|(name, _)| std::fs::read_to_string(dir.join(format!("{name}.csv"))).expect("a CSV"))
        .collect()
}

/// A queries folder holding the shipped SQL of the [`READERS`] with a comment added
/// to the section each reads the series for, so they read the daily metrics row by row.
fn commented_queries(root: &Path) -> std::path::PathBuf {
    let dir = root.join("queries");
    std::fs::create_dir_all(&dir).expect("queries folder");
    let shipped = [
        include_str!("../../queries/compute_trends.sql"),
        include_str!("../../queries/usage_summary.sql"),
    ];
    for ((name, part), text) in READERS.iter().zip(shipped) {
        let marker = format!("-- part: {part}\n");
        assert!(text.contains(&marker), "{name} has a {part} section");
        let text = text.replace(
            &marker,
            &format!("{marker}-- the same figures, row by row\n"),
        );
        std::fs::write(dir.join(format!("{name}.sql")), text).expect("override");
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_from_the_packed_series_equal_reports_from_the_daily_rows() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    let first = sync::run(&client, &opts, None)
        .await
        .expect("first sync runs");
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=2").await,
        200
    );
    let second = sync::run(&client, &opts, None)
        .await
        .expect("second sync runs");
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);

    let conn = common::open(&db);
    let users_with_days = common::count(
        &conn,
        "SELECT COUNT(DISTINCT user_id) FROM daily_metrics WHERE removed_at IS NULL",
    );
    assert!(users_with_days > 50, "{users_with_days} users with days");
    assert_eq!(
        common::count(
            &conn,
            "SELECT COUNT(*) FROM daily_series WHERE series IS NOT NULL"
        ),
        users_with_days,
        "every user with days has a packed series"
    );
    let revised = common::count(
        &conn,
        &format!(
            "SELECT COUNT(DISTINCT user_id) FROM daily_metrics WHERE run_id = {}",
            second.run_id
        ),
    );
    assert!(
        revised > 0,
        "the second sync wrote days of users it had packed"
    );
    drop(conn);

    let as_of = common::start_date() + chrono::Duration::days(2);
    let packed = reports_csv(&db, &dir.path().join("packed"), as_of, None);
    let queries = commented_queries(dir.path());
    let rows = reports_csv(&db, &dir.path().join("rows"), as_of, Some(&queries));
    assert!(
        packed[0].lines().count() > 1000,
        "{} lines",
        packed[0].lines().count()
    );
    let header: Vec<&str> = packed[1]
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .collect();
    let growth = header
        .iter()
        .position(|c| *c == "storage_growth_bytes")
        .expect("a storage growth column");
    let grown = packed[1]
        .lines()
        .skip(1)
        .filter(|l| !matches!(l.split(',').nth(growth), None | Some("") | Some("0")))
        .count();
    assert!(grown > 10, "{grown} usage_summary rows with storage growth");
    for (i, (name, _)) in READERS.iter().enumerate() {
        assert!(
            packed[i] == rows[i],
            "{name}: the two reads of the daily metrics differ"
        );
    }
}

/// `orgledger status --format json`'s packed series section, one row.
fn series_status(db: &Path) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args([
            "--db",
            db.to_str().expect("utf-8 path"),
            "status",
            "--format",
            "json",
        ])
        .env_remove("ORGLEDGER_CONFIG")
        .env_remove("ORGLEDGER_DB")
        .output()
        .expect("status runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    json["packed_daily_series"][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_sync_by_an_earlier_build_reports_read_the_rows_and_status_says_so() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    let first = sync::run(&client, &opts, None).await.expect("sync runs");
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let status = series_status(&db);
    assert_eq!(status["reports_read_them"], "yes", "{status}");
    assert_eq!(status["kept_through_run"], first.run_id, "{status}");
    let as_of = common::start_date();
    let packed = reports_csv(&db, &dir.path().join("packed"), as_of, None);

    // What a build from before the series does: a run that writes the rows alone.
    let conn = common::open(&db);
    conn.execute_batch(
        "INSERT INTO sync_runs (started_at, observed_at, finished_at, status) \
         VALUES ('2026-06-01T13:00:00.000Z', '2026-06-01T12:30:00.000Z', \
                 '2026-06-01T13:00:01.000Z', 'succeeded');
         UPDATE daily_metrics SET cpu_compute_time_seconds = cpu_compute_time_seconds + 3600 \
         WHERE day = (SELECT MAX(day) FROM daily_metrics);",
    )
    .expect("an earlier build's run");
    drop(conn);
    let status = series_status(&db);
    assert_eq!(
        status["reports_read_them"], "no: they read daily_metrics",
        "{status}"
    );
    let after = reports_csv(&db, &dir.path().join("after"), as_of, None);
    let queries = commented_queries(dir.path());
    let rows = reports_csv(&db, &dir.path().join("rows"), as_of, Some(&queries));
    assert!(
        after[0] == rows[0],
        "compute_trends reads the rows the earlier build wrote"
    );
    assert!(
        after[0] != packed[0],
        "the earlier build's hour shows in compute_trends"
    );

    // The next sync by this build rebuilds the series from the rows.
    let next = sync::run(&client, &opts, None).await.expect("sync runs");
    assert_eq!(next.status, RunStatus::Succeeded, "{:?}", next.errors);
    let status = series_status(&db);
    assert_eq!(status["reports_read_them"], "yes", "{status}");
    assert_eq!(status["kept_through_run"], next.run_id, "{status}");
}
