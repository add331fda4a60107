//! `compute_trends` reads each user's days from the packed series the sync keeps in
//! `daily_compute`; a report whose `daily` section is not the shipped one reads the
//! daily metrics row by row. Over a synced sandbox world, moved on and synced again
//! (days revised and added), both give the same report, byte for byte.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::report::{self, Format, ReportOptions};
use orgledger::sandbox::Profile;
use orgledger::sync;
use std::path::Path;

/// Builds `compute_trends` as of `as_of` in CSV and returns the file's text.
fn compute_trends_csv(
    db: &Path,
    out: &Path,
    as_of: chrono::NaiveDate,
    queries: Option<&Path>,
) -> String {
    let mut opts = ReportOptions::new(db, as_of);
    opts.names = vec!["compute_trends".into()];
    opts.formats = vec![Format::Csv];
    opts.out_root = out.to_path_buf();
    opts.queries_dir = queries.map(Path::to_path_buf);
    let dir = report::run(&opts).expect("compute_trends builds").dir;
    std::fs::read_to_string(dir.join("compute_trends.csv")).expect("the report's CSV")
}

/// A queries folder whose `compute_trends.sql` is the shipped one with a comment
/// added to its `daily` section, so the report reads the daily metrics row by row.
fn commented_queries(root: &Path) -> std::path::PathBuf {
    let shipped = include_str!("../../queries/compute_trends.sql");
    let marker = "-- part: daily\n";
    assert!(shipped.contains(marker));
    let text = shipped.replace(
        marker,
        &format!("{marker}-- the same figures, row by row\n"),
    );
    let dir = root.join("queries");
    std::fs::create_dir_all(&dir).expect("queries folder");
    std::fs::write(dir.join("compute_trends.sql"), text).expect("override");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compute_trends_from_the_packed_series_equals_compute_trends_from_the_daily_rows() {
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
            "SELECT COUNT(*) FROM daily_compute WHERE series IS NOT NULL"
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
    let packed = compute_trends_csv(&db, &dir.path().join("packed"), as_of, None);
    let queries = commented_queries(dir.path());
    let rows = compute_trends_csv(&db, &dir.path().join("rows"), as_of, Some(&queries));
    assert!(
        packed.lines().count() > 1000,
        "{} lines",
        packed.lines().count()
    );
    assert!(packed == rows, "the two reads of the daily metrics differ");
}
