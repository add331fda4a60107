//! `compute_trends` and `usage_summary` read each user's days from the packed series
//! the sync keeps in `daily_series`, or row by row from `daily_metrics` when some
//! user's days could not be packed (or the as-of date is in history). Over a synced
//! sandbox world, moved on and synced again (days revised and added), both give the
//! same reports, byte for byte.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger::sandbox::Profile;
use orgledger::sync;
use std::path::Path;

/// The two reports that read the users' days.
const READERS: [&str; 2] = ["compute_trends", "usage_summary"];

/// Builds the [`READERS`] as of `as_of` in CSV and returns their files' text.
fn reports_csv(db: &Path, out: &Path, as_of: chrono::NaiveDate) -> Vec<String> {
    let mut opts = ReportOptions::new(db, as_of);
    opts.names = READERS.iter().map(|name| name.to_string()).collect();
    opts.formats = vec![Format::Csv];
    opts.out_root = out.to_path_buf();
    let dir = render::run(&opts).expect("the reports build").dir;
    READERS
        .iter()
        .map(|name| std::fs::read_to_string(dir.join(format!("{name}.csv"))).expect("a CSV"))
        .collect()
}

/// What a user whose days have no packed form leaves: a NULL series, which sends
/// every user's days to the rows.
fn unpack_one_user(db: &Path) {
    let conn = common::open(db);
    conn.execute_batch(
        "UPDATE daily_series SET series = NULL WHERE user_id = (SELECT MIN(user_id) FROM daily_series)",
    )
    .expect("a NULL series");
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
    let packed = reports_csv(&db, &dir.path().join("packed"), as_of);
    unpack_one_user(&db);
    assert_eq!(series_status(&db)["reports_read"], "daily_metrics");
    let rows = reports_csv(&db, &dir.path().join("rows"), as_of);
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
    for (i, name) in READERS.iter().enumerate() {
        assert!(
            packed[i] == rows[i],
            "{name}: the two reads of the daily metrics differ"
        );
    }
}

/// `orgledger status --format json`'s daily figures section, one row.
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
    json["daily_figures"][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_that_could_not_be_packed_shows_in_status_and_the_next_write_of_its_days_packs_it()
{
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    let first = sync::run(&client, &opts, None).await.expect("sync runs");
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let status = series_status(&db);
    assert_eq!(status["reports_read"], "prepared figures", "{status}");
    assert_eq!(status["users_not_prepared"], 0, "{status}");

    unpack_one_user(&db);
    let status = series_status(&db);
    assert_eq!(status["reports_read"], "daily_metrics", "{status}");
    assert_eq!(status["users_not_prepared"], 1, "{status}");

    // A day later every user's document lists a new day: the user's series is
    // rebuilt from their rows.
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    let next = sync::run(&client, &opts, None).await.expect("sync runs");
    assert_eq!(next.status, RunStatus::Succeeded, "{:?}", next.errors);
    let status = series_status(&db);
    assert_eq!(status["reports_read"], "prepared figures", "{status}");
}
