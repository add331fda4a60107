//! Reports end to end: the sandbox serves a world, the sync mirrors it,
//! the report is built with the server gone (offline), and the numbers equal what
//! this test computes by hand from the API's own answers.

use crate::common;
use orgledger::render;
use orgledger::report::{Format, ReportOptions, Thresholds};
use orgledger::sync;
use orgledger_sandbox::Profile;
use serde_json::Value;
use std::collections::HashMap;

/// The status rule of the design, with the default thresholds (80 %, 100 %): over
/// the limit is exceeded, exactly at it is at_limit.
fn status(used: f64, limit: Option<f64>) -> &'static str {
    match limit {
        None => "no_limit",
        Some(limit) if limit <= 0.0 => {
            if used > 0.0 {
                "exceeded"
            } else {
                "ok"
            }
        }
        Some(limit) if used > limit => "exceeded",
        Some(limit) if used == limit => "at_limit",
        Some(limit) if 100.0 * used / limit >= 80.0 => "warning",
        Some(_) => "ok",
    }
}

fn trial_status(t: &orgledger::api::models::Trial, today: chrono::NaiveDate) -> &'static str {
    let on_or_before = |d: Option<orgledger::api::Timestamp>| d.is_some_and(|d| d.date() <= today);
    if on_or_before(t.upgraded_date) {
        "upgraded"
    } else if on_or_before(t.deleted_date) {
        "deleted"
    } else if on_or_before(t.expired_date) || on_or_before(t.expiration_date) {
        "expired"
    } else if t
        .expiration_date
        .is_some_and(|d| (d.date() - today).num_days() <= 14)
    {
        "expiring"
    } else {
        "active"
    }
}

fn rows(dir: &std::path::Path, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).expect("report file");
    match serde_json::from_str(&text).expect("json") {
        Value::Array(rows) => rows,
        other => panic!("{name}.json is not an array: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_match_hand_computations_from_the_api_and_need_no_network() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    let client = common::admin(&sb);
    let outcome = sync::run(&client, &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);

    // Expected values, from the API.
    let today = common::start_date();
    let wl = sb.info.whitelabel_organization_id;
    let mut expected: HashMap<(i64, &str), (f64, Option<f64>)> = HashMap::new();
    let mut trials: HashMap<i64, &'static str> = HashMap::new();
    let listing = client
        .list_organizations()
        .await
        .expect("list-organizations")
        .value
        .organizations;
    for org in &listing {
        let id = org.id.expect("id");
        let full = client
            .get_organization(id)
            .await
            .expect("get-organization")
            .value;
        let o = full.organization.as_ref().expect("organization");
        if o.is_developer_profile == Some(true) || o.deleted_date.is_some() {
            continue; // developer profiles come from daily metrics; unit tests cover them
        }
        let limits = full.entitlement_limits.clone().unwrap_or_default();
        let storage: i64 = full.datasets.iter().filter_map(|d| d.total_file_size).sum();
        let projects = o
            .projects
            .iter()
            .filter(|p| p.owner_organization_id == Some(id))
            .filter(|p| p.deleted_date.is_none_or(|d| d.date() > today))
            .count();
        expected.insert(
            (id, "storage_bytes"),
            (storage as f64, limits.total_storage.map(|q| q.as_f64())),
        );
        expected.insert(
            (id, "users"),
            (
                o.users.len() as f64,
                limits.number_of_users.map(|q| q.as_f64()),
            ),
        );
        expected.insert(
            (id, "projects"),
            (
                projects as f64,
                limits.number_of_projects.map(|q| q.as_f64()),
            ),
        );
        for member in o.users.iter().filter_map(|u| u.id) {
            let user = client
                .get_whitelabel_user(wl, member)
                .await
                .expect("get-whitelabel-user")
                .value
                .user
                .expect("user");
            for t in &user.trials {
                trials.insert(t.id.expect("trial id"), trial_status(t, today));
            }
        }
    }
    assert!(
        expected.len() >= 30,
        "enough organizations to mean something"
    );

    // The report, with the service gone.
    sb.shutdown().await;
    let out = dir.path().join("reports");
    let mut opts = ReportOptions::new(&db, today);
    opts.formats = vec![Format::Json];
    opts.out_root = out.clone();
    opts.thresholds = Thresholds::default();
    let built = render::run(&opts).expect("report without network");
    assert_eq!(built.run_id, Some(outcome.run_id));

    let mut checked = 0;
    for row in rows(&built.dir, "entitlements") {
        let id = row["organization_id"].as_i64().expect("organization_id");
        let metric = row["metric"].as_str().expect("metric");
        let Some(&(used, limit)) = expected.get(&(id, metric)) else {
            continue;
        };
        assert_eq!(row["used"].as_f64(), Some(used), "org {id} {metric} used");
        assert_eq!(row["limit"].as_f64(), limit, "org {id} {metric} limit");
        assert_eq!(
            row["status"].as_str(),
            Some(status(used, limit)),
            "org {id} {metric} status"
        );
        if let Some(limit) = limit {
            let pct = row["pct_used"].as_f64().expect("pct_used");
            // pct_used is rounded to two decimals, on its status's side of a threshold.
            assert!(
                (pct - 100.0 * used / limit).abs() <= 0.01 + 1e-9,
                "org {id} {metric} pct {pct}"
            );
            assert_eq!(
                row["remaining"].as_f64(),
                Some(limit - used),
                "org {id} {metric} remaining"
            );
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        expected.len(),
        "every expected row is in the report"
    );

    let mut seen_statuses = std::collections::BTreeSet::new();
    for row in rows(&built.dir, "trials") {
        let id = row["trial_id"].as_i64().expect("trial_id");
        let want = trials.get(&id).copied();
        if want.is_some() {
            assert_eq!(row["status"].as_str(), want, "trial {id}");
            seen_statuses.insert(row["status"].as_str().unwrap_or("").to_string());
        }
    }
    assert!(
        seen_statuses.len() >= 4,
        "the small world has trials in most states: {seen_statuses:?}"
    );
}

/// Three syncs a week apart (so the mirror has history), then every built-in report
/// as of the last sync's day: none is empty, organizations' trends come from the
/// history, and the terminal summary names the top compute users.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_over_three_weekly_syncs_has_rows_and_organization_trends() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    for round in 0..3 {
        if round > 0 {
            assert_eq!(
                common::admin_post(&sb, "/sandbox/advance?days=7").await,
                200
            );
        }
        let outcome = sync::run(&client, &opts, None).await.expect("sync runs");
        assert_eq!(
            outcome.status,
            orgledger::mirror::runs::RunStatus::Succeeded
        );
    }
    let as_of = common::start_date() + chrono::Days::new(14);
    let mut ropts = ReportOptions::new(&db, as_of);
    ropts.out_root = dir.path().join("out");
    // Every table the later steps read back waits on disk (none in memory), and
    // reads back as its file has it.
    ropts.memory_per_table = 0;
    let outcome = render::run(&ropts).expect("reports");
    // compute_trends and usage_summary went to their files batch by batch; the
    // run keeps the others.
    let kept: Vec<&str> = outcome.tables.names().collect();
    assert_eq!(
        kept,
        [
            "changes",
            "entitlements",
            "project_compute",
            "storage_trends",
            "trials"
        ]
    );
    let csv = std::fs::read_to_string(outcome.dir.join("project_compute.csv")).expect("csv");
    let on_disk = outcome.tables.get("project_compute").expect("kept");
    assert!(on_disk.on_disk());
    let on_disk = on_disk.whole().expect("read back");
    assert_eq!(on_disk.height(), csv.lines().count() - 1);
    assert_eq!(outcome.files.len(), 14);
    for f in &outcome.files {
        assert!(f.path.is_file(), "{}", f.path.display());
    }
    assert!(outcome.run_id.is_some());
    for f in &outcome.files {
        assert!(f.rows > 0, "{} is empty", f.report);
    }
    let trends = std::fs::read_to_string(outcome.dir.join("compute_trends.csv")).expect("csv");
    assert!(
        trends.lines().any(|l| l.starts_with("organization,")),
        "organization trends come from three syncs of history"
    );
    let top = outcome.top_users.as_ref().expect("top users");
    assert!(!top.is_empty() && top.len() <= 10, "{}", top.len());
    assert!(render::summary(&outcome).contains("Top compute users"));
}
