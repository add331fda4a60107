//! `storage_trends` holds `entitlements`' storage figure as the mirror's history had
//! it each day: an organization's level at the end of a synced day is what the
//! entitlements report as of that day says it used; a white label's at T is the sum
//! of its users' latest `totalStorageSizeBytes`.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::report::{self, ReportOptions, entitlements, storage_trends};
use orgledger::sandbox::Profile;
use orgledger::sync;
use polars::prelude::DataFrame;
use std::collections::BTreeMap;
use std::path::Path;

/// `report`'s whole table as of `as_of`.
fn table(db: &Path, as_of: chrono::NaiveDate, report: &str) -> DataFrame {
    let mut opts = ReportOptions::new(db, as_of);
    opts.names = vec![report.to_string()];
    let tables = report::tables(&opts).expect("the report builds");
    let kept = tables.get(report).expect("kept");
    kept.whole().expect("read back")
}

fn texts(df: &DataFrame, column: &str) -> Vec<Option<String>> {
    let c = df.column(column).expect("column");
    let c = c.str().expect("text");
    c.iter().map(|v| v.map(str::to_string)).collect()
}

fn numbers(df: &DataFrame, column: &str) -> Vec<Option<f64>> {
    let c = df.column(column).expect("column");
    let c = c
        .cast(&polars::prelude::DataType::Float64)
        .expect("numbers");
    c.f64().expect("numbers").iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_s_daily_level_is_entitlements_storage_as_of_that_day() {
    let sb = common::sandbox(Profile::Small).await;
    let (_dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    for day in 0..4 {
        if day > 0 {
            let moved = common::admin_post(&sb, "/sandbox/advance?days=1").await;
            assert_eq!(moved, 200);
        }
        let run = sync::run(&client, &opts, None).await.expect("a sync runs");
        assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    }
    let last = common::start_date() + chrono::Days::new(3);
    let trends = table(&db, last, storage_trends::NAME.as_str());
    let (kind, period, start) = (
        texts(&trends, "entity_type"),
        texts(&trends, "period"),
        texts(&trends, "period_start"),
    );
    let (ids, level) = (
        numbers(&trends, "entity_id"),
        numbers(&trends, "storage_bytes"),
    );
    let mut compared = 0;
    for day in 0..4 {
        let as_of = common::start_date() + chrono::Days::new(day);
        let ent = table(&db, as_of, entitlements::NAME.as_str());
        let (orgs, metric, used) = (
            numbers(&ent, "organization_id"),
            texts(&ent, "metric"),
            numbers(&ent, "used"),
        );
        let storage: BTreeMap<i64, Option<f64>> = (0..ent.height())
            .filter(|&r| metric[r].as_deref() == Some("storage_bytes"))
            .filter_map(|r| Some((orgs[r]? as i64, used[r])))
            .collect();
        let day_text = as_of.to_string();
        for r in 0..trends.height() {
            let row_of_day = kind[r].as_deref() == Some("organization")
                && period[r].as_deref() == Some("day")
                && start[r].as_deref() == Some(day_text.as_str());
            if !row_of_day {
                continue;
            }
            let org = ids[r].expect("an id") as i64;
            let Some(want) = storage.get(&org) else {
                continue;
            };
            assert_eq!(level[r], *want, "organization {org} on {day_text}");
            compared += 1;
        }
    }
    assert!(
        compared >= 4 * 15,
        "every organization on every synced day: {compared}"
    );

    // A white label's level at T: its users' latest storage.
    let conn = common::open(&db);
    let want: f64 = conn
        .query_row(
            "SELECT SUM(d.total_storage_size_bytes) FROM daily_metrics d \
             WHERE d.day = (SELECT MAX(x.day) FROM daily_metrics x \
                            WHERE x.user_id = d.user_id AND x.day <= ?1)",
            [last.to_string()],
            |row| row.get(0),
        )
        .expect("the users' storage");
    let today = last.to_string();
    let got: f64 = (0..trends.height())
        .filter(|&r| {
            kind[r].as_deref() == Some("whitelabel")
                && period[r].as_deref() == Some("day")
                && start[r].as_deref() == Some(today.as_str())
        })
        .filter_map(|r| level[r])
        .sum();
    assert_eq!(got, want, "the white labels' storage at T");
}
