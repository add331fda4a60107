//! Every figure complete or flagged, over HTTP against the shaped
//! world of `numbers.rs`: organization `org` has three projects using 7,000,000 ms
//! (soft-deleted), 1,000,000 ms and 2,500,000 ms of compute. Here its compute limit
//! is 10,000 s, so the full sum (10,500 s) is over it.

use crate::common;
use crate::common::set_override;
use crate::numbers::{Shape, shaped_world, start, sync_once};
use orgledger::api::operation::project_info_path;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger::sandbox::SandboxHandle;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The shaped world with a compute limit of 10,000 s on `org`, served.
async fn served_world() -> (SandboxHandle, Shape) {
    let (mut world, shape) = shaped_world();
    if let Some(o) = world.organizations.iter_mut().find(|o| o.id == shape.org) {
        let mut limits = o.entitlement_limits.clone().unwrap_or_default();
        limits.compute_time_per_year = Some(10_000);
        o.entitlement_limits = Some(limits);
    }
    (start(world).await, shape)
}

/// `get-project-info` of `project` answers `success: false` from now on.
async fn fail_info(sb: &SandboxHandle, project: i64) {
    let body = br#"{"success":false,"error":"information unavailable"}"#.to_vec();
    set_override(sb, &project_info_path(project, None), 200, body).await;
}

/// Every built-in report as of `as_of`, in JSON, into `dir`.
fn reports(db: &Path, dir: &Path, as_of: chrono::NaiveDate) -> PathBuf {
    let mut opts = ReportOptions::new(db, as_of);
    opts.formats = vec![Format::Json];
    opts.out_root = dir.to_path_buf();
    render::run(&opts).expect("reports build").dir
}

fn observed_at(db: &Path, run: i64) -> String {
    common::open(db)
        .query_row(
            "SELECT observed_at FROM sync_runs WHERE id = ?1",
            [run],
            |r| r.get(0),
        )
        .expect("the run is recorded")
}

fn project_row(dir: &Path, id: i64) -> Value {
    common::json_rows(dir, "project_compute")
        .into_iter()
        .find(|r| r["project_id"].as_i64() == Some(id))
        .unwrap_or_else(|| panic!("no project_compute row for project {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_whose_information_fails_leaves_its_rows_incomplete_with_a_lower_bound_status() {
    let (sb, shape) = served_world().await;
    let (failing, _) = shape.projects[1];
    fail_info(&sb, failing).await;
    let (scratch, db) = common::scratch();
    let run = sync_once(&sb, &db).await;
    assert_eq!(run.status, RunStatus::Partial, "{:?}", run.errors);
    let dir = reports(&db, scratch.path(), common::start_date());
    let when = observed_at(&db, run.run_id);

    // Known: 7,000,000 + 2,500,000 ms = 9,500 s of 10,000 s = 95 % → warning, a
    // lower bound (with the failing project's 1,000 s it would be 10,500 s, exceeded).
    let ent = common::json_rows(&dir, "entitlements");
    let compute = common::entitlement(&ent, shape.org, "compute_seconds");
    assert_eq!(compute["used"].as_f64(), Some(9_500.0), "{compute}");
    assert_eq!(compute["pct_used"].as_f64(), Some(95.0), "{compute}");
    assert_eq!(compute["status"], "warning");
    assert_eq!(compute["complete"], false);
    assert_eq!(
        compute["missing"],
        format!(
            "project {failing} (get-project-info failed in sync run {}: {})",
            run.run_id,
            stored_message(&db, run.run_id, failing)
        )
    );
    assert_eq!(compute["data_as_of"], when.as_str());
    // The organization's other figures do not need project information.
    let storage = common::entitlement(&ent, shape.org, "storage_bytes");
    assert_eq!(
        (&storage["complete"], &storage["missing"]),
        (&Value::Bool(true), &Value::from(""))
    );

    // The project's own row: no figures, flagged unknown, incomplete.
    let row = project_row(&dir, failing);
    assert_eq!(row["time_used_ms"], Value::Null);
    assert_eq!(row["flagged"], Value::Null);
    assert_eq!(row["complete"], false);
    assert_eq!(row["organization_id"].as_i64(), Some(shape.org));
    let other = project_row(&dir, shape.projects[2].0);
    assert_eq!(other["complete"], true);
    assert_eq!(other["data_as_of"], when.as_str());

    // The organization's trend rows carry the same gap; users' rows carry none.
    let trends = common::json_rows(&dir, "compute_trends");
    let org_rows: Vec<&Value> = trends
        .iter()
        .filter(|r| {
            r["entity_type"] == "organization" && r["entity_id"].as_i64() == Some(shape.org)
        })
        .collect();
    assert!(!org_rows.is_empty());
    assert!(
        org_rows
            .iter()
            .all(|r| r["complete"] == false && r["missing"] == compute["missing"])
    );
    let user_row = trends
        .iter()
        .find(|r| r["entity_type"] == "user")
        .expect("a user row");
    assert_eq!(user_row["complete"], Value::Null);
    // usage_summary's organization rows need only the organization's document.
    let usage = common::json_rows(&dir, "usage_summary");
    let usage_row = usage
        .iter()
        .find(|r| r["scope"] == "organization" && r["id"].as_i64() == Some(shape.org))
        .expect("a usage row");
    assert_eq!(usage_row["complete"], true);
}

fn stored_message(db: &Path, run: i64, project: i64) -> String {
    common::open(db)
        .query_row(
            "SELECT message FROM sync_errors WHERE run_id = ?1 AND entity = ?2",
            rusqlite::params![run, format!("project {project}")],
            |r| r.get(0),
        )
        .expect("the failure is recorded")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_stored_version_keeps_the_row_complete_and_dates_it() {
    let (sb, shape) = served_world().await;
    let (scratch, db) = common::scratch();
    let first = sync_once(&sb, &db).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    let (failing, _) = shape.projects[1];
    fail_info(&sb, failing).await;
    let second = sync_once(&sb, &db).await;
    assert_eq!(second.status, RunStatus::Partial, "{:?}", second.errors);
    let day = common::start_date() + chrono::Days::new(1);
    let dir = reports(&db, scratch.path(), day);
    let (then, now) = (
        observed_at(&db, first.run_id),
        observed_at(&db, second.run_id),
    );
    assert!(then < now, "{then} < {now}");

    // The failing project's information of the first run counts: 10,500 s of
    // 10,000 s = 105 % → exceeded, complete, dated by the first run.
    let compute = common::entitlement(
        &common::json_rows(&dir, "entitlements"),
        shape.org,
        "compute_seconds",
    );
    assert_eq!(compute["used"].as_f64(), Some(10_500.0), "{compute}");
    assert_eq!(compute["status"], "exceeded");
    assert_eq!(compute["complete"], true);
    assert_eq!(compute["missing"], "");
    assert_eq!(compute["data_as_of"], then.as_str());
    let row = project_row(&dir, failing);
    assert_eq!(row["time_used_ms"].as_i64(), Some(1_000_000));
    assert_eq!(
        (&row["complete"], &row["data_as_of"]),
        (&Value::Bool(true), &Value::from(then.as_str()))
    );
    let fresh = project_row(&dir, shape.projects[2].0);
    assert_eq!(fresh["data_as_of"], now.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_2_to_the_60_plus_1_is_stored_and_reported_exactly() {
    const LIMIT: i64 = (1 << 60) + 1;
    let (mut world, shape) = shaped_world();
    if let Some(o) = world.organizations.iter_mut().find(|o| o.id == shape.org) {
        let mut limits = o.entitlement_limits.clone().unwrap_or_default();
        limits.compute_time_per_year = Some(LIMIT);
        o.entitlement_limits = Some(limits);
    }
    let sb = start(world).await;
    let (scratch, db) = common::scratch();
    let run = sync_once(&sb, &db).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    // 2^60 + 1 has no f64: only an integer column keeps it.
    let (kind, stored): (String, i64) = common::open(&db)
        .query_row(
            "SELECT typeof(limit_compute_time_per_year), limit_compute_time_per_year \
             FROM organizations WHERE id = ?1",
            [shape.org],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the organization is stored");
    assert_eq!(
        (kind.as_str(), stored),
        ("integer", 1_152_921_504_606_846_977)
    );

    let mut opts = ReportOptions::new(&db, common::start_date());
    opts.names = vec!["entitlements".to_string()];
    opts.formats = vec![Format::Csv, Format::Json];
    opts.out_root = scratch.path().to_path_buf();
    let dir = render::run(&opts).expect("reports build").dir;
    let json = std::fs::read_to_string(dir.join("entitlements.json")).expect("json");
    assert!(
        json.contains(r#""limit":1152921504606846977,"#),
        "JSON keeps every digit"
    );
    let csv = std::fs::read_to_string(dir.join("entitlements.csv")).expect("csv");
    let line = csv
        .lines()
        .find(|l| l.starts_with(&format!("{},", shape.org)) && l.contains(",compute_seconds,"))
        .expect("the CSV row");
    // used 7,000 + 1,000 + 2,500 = 10,500 s of 1,152,921,504,606,846,977 s.
    assert!(
        line.contains(",10500,1152921504606846977,"),
        "CSV row: {line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_hard_cases_attribute_twin_profiles_and_flag_a_never_served_deleted_project() {
    use orgledger::sandbox::hard_cases::{org, project};
    let sb = common::sandbox(orgledger::sandbox::Profile::Tiny).await;
    let (scratch, db) = common::scratch();
    let run = sync_once(&sb, &db).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    let dir = reports(&db, scratch.path(), common::start_date());

    // 299906 names no owner organization and its user 19907 has two developer
    // profiles: the one whose get-organization answer lists it is its organization.
    let row = project_row(&dir, project::DEV_TWIN_A);
    assert_eq!(
        (&row["organization_id"], &row["complete"]),
        (&Value::from(org::DEV_TWIN_A), &Value::Bool(true))
    );
    // 299903 was deleted before the first sync and get-project-info answers 404: expected
    // (the run succeeded), but its compute is unknown, so organization 902's sum is a
    // lower bound.
    let gone = project_row(&dir, project::DELETED_GONE);
    assert_eq!(
        (&gone["time_used_ms"], &gone["complete"]),
        (&Value::Null, &Value::Bool(false))
    );
    let compute = common::entitlement(
        &common::json_rows(&dir, "entitlements"),
        org::ODD_PROJECTS,
        "compute_seconds",
    );
    assert_eq!(compute["complete"], false);
    assert_eq!(
        compute["missing"],
        format!(
            "project {} (deleted; the service no longer serves its information and none is stored)",
            project::DELETED_GONE
        )
    );
    // A project whose information is stored is complete.
    assert_eq!(project_row(&dir, project::DELETED_SERVED)["complete"], true);
}

/// Runs the binary on the mirror `db` against the sandbox; returns its exit code and
/// what it wrote to stderr.
fn orgledger(sb: &SandboxHandle, db: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["--db", db.to_str().expect("utf-8 path")])
        .args(args)
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt)
        .env_remove("ORGLEDGER_API_KEY")
        .output()
        .expect("orgledger runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sync_cli(sb: &SandboxHandle, db: &Path) -> Option<i32> {
    let org = sb.info.whitelabel_organization_id.to_string();
    let (code, stderr) = orgledger(sb, db, &["sync", "--whitelabel-org", &org, "--no-progress"]);
    assert!(matches!(code, Some(0 | 3)), "sync: {code:?}\n{stderr}");
    code
}

/// `compute_trends` as of the sandbox's start, through the binary.
fn trends_cli(sb: &SandboxHandle, db: &Path, out: &Path) -> Vec<Value> {
    let as_of = common::start_date().to_string();
    let mut args = vec![
        "report",
        "compute_trends",
        "--as-of",
        &as_of,
        "--format",
        "json",
    ];
    args.extend(["--out", out.to_str().expect("utf-8 path")]);
    let (code, stderr) = orgledger(sb, db, &args);
    assert_eq!(code, Some(0), "report: {stderr}");
    common::json_rows(&out.join(&as_of), "compute_trends")
}

/// Leaves one user's packed series NULL (what a user whose days have no packed form
/// leaves), so the report reads every user's days row by row.
fn read_rows_from_now_on(db: &Path) {
    let conn = common::open(db);
    conn.execute_batch(
        "UPDATE daily_series SET series = NULL WHERE user_id = (SELECT MIN(user_id) FROM daily_series)",
    )
    .expect("a NULL series");
}

/// The last day a `compute_trends` row covers: its period's, or T.
fn last_day(row: &Value, today: chrono::NaiveDate) -> chrono::NaiveDate {
    let start: chrono::NaiveDate = row["period_start"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a period start: {row}"));
    let end = match row["period"].as_str() {
        Some("day") => start,
        Some("week") => start + chrono::Duration::days(6),
        _ => {
            let next = start + chrono::Months::new(1);
            next - chrono::Duration::days(1)
        }
    };
    end.min(today)
}

/// The rows of one entity.
fn entity_rows<'a>(rows: &'a [Value], kind: &str, id: i64) -> Vec<&'a Value> {
    let found: Vec<&Value> = rows
        .iter()
        .filter(|r| r["entity_type"] == kind && r["entity_id"].as_i64() == Some(id))
        .collect();
    assert!(!found.is_empty(), "no compute_trends rows of {kind} {id}");
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daily_records_on_one_day_flag_the_trend_rows_built_from_that_day() {
    let sb = common::sandbox(orgledger::sandbox::Profile::Tiny).await;
    let (scratch, db) = common::scratch();
    assert_eq!(sync_cli(&sb, &db), Some(0), "a clean first sync");
    let clean = trends_cli(&sb, &db, &scratch.path().join("clean"));
    let today = common::start_date();
    let day = today - chrono::Duration::days(5);
    let conn = common::open(&db);
    // A user of the white label with a record on that day (its timestamp in UTC).
    let (user, whitelabel): (i64, i64) = conn
        .query_row(
            "SELECT u.id, o.whitelabel_id FROM users u \
             JOIN organizations o ON o.id = u.whitelabel_organization_id \
             JOIN daily_metrics d ON d.user_id = u.id AND d.day = ?1 \
             WHERE d.date LIKE ?1 || 'T00:00:00%' AND o.whitelabel_id IS NOT NULL \
             ORDER BY u.id LIMIT 1",
            [day.to_string()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a white label user with a record on the day");
    drop(conn);

    // Its document with one more record written at 00:30 of that day in +02:00 (the
    // evening before in UTC): it is filed under its written date, where a record is.
    let path =
        orgledger::api::operation::whitelabel_user_path(sb.info.whitelabel_organization_id, user);
    let mut body: Value =
        serde_json::from_str(&common::served(&sb, &path).await).expect("the user's answer");
    let metrics = body["user"]["dailyMetrics"]
        .as_array_mut()
        .expect("daily metrics");
    let mut late = metrics
        .iter()
        .find(|m| {
            m["date"]
                .as_str()
                .is_some_and(|d| d.starts_with(&day.to_string()))
        })
        .cloned()
        .expect("the day's record");
    late["date"] = Value::from(format!("{day}T00:30:00+02:00"));
    late["computeTimeSeconds"] = Value::from(777_777);
    metrics.push(late);
    set_override(&sb, &path, 200, serde_json::to_vec(&body).expect("body")).await;
    assert_eq!(
        sync_cli(&sb, &db),
        Some(3),
        "the collision makes the run partial"
    );

    let packed = trends_cli(&sb, &db, &scratch.path().join("packed"));
    read_rows_from_now_on(&db);
    let rows = trends_cli(&sb, &db, &scratch.path().join("rows"));
    assert_eq!(
        packed, rows,
        "both reads of the daily metrics give the same rows"
    );

    // Every row of the user and of its white label reads the 60 days up to its last
    // day (rolling sums), so exactly those whose last day is on or after the day read
    // it; the others are as on any user's rows.
    let named = format!("user {user} on {day}");
    for (kind, id) in [("user", user), ("whitelabel", whitelabel)] {
        for row in entity_rows(&packed, kind, id) {
            if last_day(row, today) < day {
                assert_eq!(row["complete"], Value::Null, "{row}");
                assert_eq!(row["missing"], Value::Null, "{row}");
                continue;
            }
            assert_eq!(row["complete"], false, "{row}");
            let missing = row["missing"].as_str().unwrap_or_default();
            assert!(
                missing.starts_with(&format!("{named} (get-whitelabel-user in sync run "))
                    && missing.contains(&format!("2 records for the day {day}")),
                "{missing}"
            );
        }
    }
    // Every other row says what it said before the collision.
    let key = |r: &Value| {
        let key = ["entity_type", "entity_id", "period", "period_start"];
        key.map(|k| r[k].to_string()).join(" ")
    };
    let before: std::collections::HashMap<String, &Value> =
        clean.iter().map(|r| (key(r), r)).collect();
    let mut others = 0;
    for row in &packed {
        let id = row["entity_id"].as_i64();
        let affected = (row["entity_type"] == "user" && id == Some(user))
            || (row["entity_type"] == "whitelabel" && id == Some(whitelabel));
        if affected {
            continue;
        }
        let was = before
            .get(&key(row))
            .unwrap_or_else(|| panic!("a new row: {row}"));
        assert_eq!(
            (&row["complete"], &row["missing"]),
            (&was["complete"], &was["missing"]),
            "{row}"
        );
        others += 1;
    }
    assert!(others > 100, "{others} other rows");
}
