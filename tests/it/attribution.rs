//! Every project attributed, developer profiles identified by the data, limits from
//! every source, over HTTP against a `tiny` sandbox world with
//! the default hard cases (ids and descriptions in `orgledger_sandbox::hard_cases`).

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions, Thresholds};
use orgledger::sandbox::Profile;
use orgledger::sandbox::hard_cases::{org, project, user};
use orgledger::sync;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// Syncs a `tiny` world with the default hard cases once and builds every built-in
/// report as of the test date, in JSON. Returns the scratch folders, the mirror and
/// the reports' folder.
async fn synced_and_reported() -> (tempfile::TempDir, tempfile::TempDir, PathBuf, PathBuf) {
    synced_and_reported_in(&[Format::Json]).await
}

/// The same, in `formats`.
async fn synced_and_reported_in(
    formats: &[Format],
) -> (tempfile::TempDir, tempfile::TempDir, PathBuf, PathBuf) {
    let sb = common::sandbox(Profile::Tiny).await;
    let (scratch, db) = common::scratch();
    let run = sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync runs");
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    let out = tempfile::tempdir().expect("tempdir");
    let mut opts = ReportOptions::new(&db, common::start_date());
    opts.formats = formats.to_vec();
    opts.out_root = out.path().to_path_buf();
    opts.thresholds = Thresholds::default();
    let dir = render::run(&opts).expect("reports build").dir;
    (scratch, out, db, dir)
}

/// A user's compute seconds in their daily-metrics record of the test date.
fn compute_of(db: &Path, user: i64) -> i64 {
    common::count(
        &common::open(db),
        &format!(
            "SELECT total_current_contract_compute_time_seconds FROM daily_metrics \
             WHERE user_id = {user} AND day = '{}'",
            common::start_date()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_report_has_each_key_once_with_a_user_of_two_developer_profiles() {
    let (_scratch, _out, _db, dir) = synced_and_reported().await;
    let reports: [(&str, &[&str]); 5] = [
        ("entitlements", &["organization_id", "metric"]),
        ("trials", &["trial_id"]),
        ("project_compute", &["project_id"]),
        (
            "compute_trends",
            &["entity_type", "entity_id", "period", "period_start"],
        ),
        ("usage_summary", &["scope", "id", "window_days"]),
    ];
    for (name, key) in reports {
        let rows = common::json_rows(&dir, name);
        assert!(!rows.is_empty(), "{name} has rows");
        let mut seen = HashSet::new();
        for r in &rows {
            let k: Vec<String> = key.iter().map(|c| r[*c].to_string()).collect();
            assert!(seen.insert(k.clone()), "{name}: key {k:?} appears twice");
        }
    }
    // The user's two profiles and the profile with a pending member: five rows each.
    let ent = common::json_rows(&dir, "entitlements");
    for id in [org::DEV_TWIN_A, org::DEV_TWIN_B, org::DEV_PENDING_MEMBER] {
        let n = ent
            .iter()
            .filter(|r| r["organization_id"].as_i64() == Some(id))
            .count();
        assert_eq!(n, 5, "organization {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_developer_profile_is_its_admins_and_its_projects_are_attributed_to_it() {
    let (_scratch, _out, db, dir) = synced_and_reported().await;
    let ent = common::json_rows(&dir, "entitlements");
    // Profile 907 lists its admin 19905 and a pending member 19906; the summaries of
    // both mark it a developer profile, only 19905's as admin. Its compute is 19905's.
    let owner = compute_of(&db, user::DEV_OWNER);
    let pending = compute_of(&db, user::DEV_PENDING);
    assert_ne!(owner, pending, "the world tells the two members apart");
    let row = common::entitlement(&ent, org::DEV_PENDING_MEMBER, "compute_seconds");
    assert_eq!(row["source"], "daily_metrics");
    assert_eq!(row["used"].as_i64(), Some(owner));
    // User 19907's two profiles each show that user's figures.
    let twins = compute_of(&db, user::DEV_TWINS);
    for id in [org::DEV_TWIN_A, org::DEV_TWIN_B] {
        let row = common::entitlement(&ent, id, "compute_seconds");
        assert_eq!(row["used"].as_i64(), Some(twins), "organization {id}");
    }

    // Project 299905 names no owner organization, only its developer-profile user
    // 19905, whose only profile is 907. 19907 has two profiles: each of 299906 and
    // 299907 belongs to the one whose get-organization answer lists it. A regular
    // project keeps its owner.
    let pc = common::json_rows(&dir, "project_compute");
    let org_of = |id: i64| -> (Value, Value) {
        let r = pc
            .iter()
            .find(|r| r["project_id"].as_i64() == Some(id))
            .unwrap_or_else(|| panic!("no row for project {id}"));
        (r["organization_id"].clone(), r["organization_name"].clone())
    };
    assert_eq!(
        org_of(project::DEV_PENDING),
        (
            Value::from(org::DEV_PENDING_MEMBER),
            Value::from("Hard case: developer profile with a pending member")
        )
    );
    for (project, org) in [
        (project::DEV_TWIN_A, org::DEV_TWIN_A),
        (project::DEV_TWIN_B, org::DEV_TWIN_B),
    ] {
        assert_eq!(org_of(project).0, Value::from(org), "project {project}");
    }
    assert_eq!(
        org_of(project::DELETED_SERVED).0,
        Value::from(org::ODD_PROJECTS)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_known_only_through_summaries_takes_its_limits_from_them() {
    let (_scratch, _out, _db, dir) = synced_and_reported().await;
    let ent = common::json_rows(&dir, "entitlements");
    // Organization 910 (403 from get-organization) is only in user 19901's summaries, with
    // entitlementLimits {users 5, projects 10} and a user count of 1.
    let users = common::entitlement(&ent, org::OUTSIDE_WHITE_LABEL, "users");
    assert_eq!(
        users["organization_name"],
        "Hard case: outside the white label"
    );
    assert_eq!(users["limit"].as_i64(), Some(5));
    assert_eq!(users["limit_source"], "user_summary");
    assert_eq!(users["used"].as_i64(), Some(1));
    assert_eq!(users["source"], "user_organizations");
    // 1 of 5 = 20 % → ok.
    assert_eq!(users["pct_used"].as_f64(), Some(20.0));
    assert_eq!(users["status"], "ok");
    let projects = common::entitlement(&ent, org::OUTSIDE_WHITE_LABEL, "projects");
    assert_eq!(projects["limit"].as_i64(), Some(10));
    assert_eq!(projects["limit_source"], "user_summary");
    // No storage limit anywhere: no limit and no source for it.
    let storage = common::entitlement(&ent, org::OUTSIDE_WHITE_LABEL, "storage_bytes");
    assert_eq!(storage["limit"], Value::Null);
    assert_eq!(storage["limit_source"], Value::Null);
    // A limit read through get-organization says so: organization 906's 2^60 s.
    let huge = common::entitlement(&ent, org::HUGE_LIMITS, "compute_seconds");
    assert_eq!(huge["limit"].as_i64(), Some(1 << 60));
    assert_eq!(huge["limit_source"], "organization");
}

/// A calendar day `days` before the test date, as `YYYY-MM-DD` (text order is day
/// order).
fn days_before(days: u64) -> String {
    (common::start_date() - chrono::Days::new(days))
        .format("%Y-%m-%d")
        .to_string()
}

/// The day of a JSON timestamp cell, `None` when empty.
fn day_of(cell: &Value) -> Option<String> {
    cell.as_str().map(|t| t.chars().take(10).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_and_page_puts_each_project_in_the_same_organization() {
    let (_scratch, _out, db, dir) = synced_and_reported_in(&[Format::Json, Format::Html]).await;
    let today = days_before(0);
    // The projects of each organization by `project_compute`, the rule's table.
    let pc = common::json_rows(&dir, "project_compute");
    let mut projects: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
    for r in &pc {
        if let Some(org) = r["organization_id"].as_i64() {
            projects.entry(org).or_default().push(r);
        }
    }
    // The developer profiles whose projects name no owner organization are among them.
    for id in [org::DEV_TWIN_A, org::DEV_TWIN_B, org::DEV_PENDING_MEMBER] {
        assert!(projects.contains_key(&id), "organization {id} has projects");
    }

    // compute_trends: every organization with a project with information has its rows.
    let trends = common::json_rows(&dir, "compute_trends");
    let with_rows: BTreeSet<i64> = trends
        .iter()
        .filter(|r| r["entity_type"] == "organization")
        .filter_map(|r| r["entity_id"].as_i64())
        .collect();
    for (org, rows) in &projects {
        if rows.iter().any(|r| r["time_used_ms"].as_i64().is_some()) {
            assert!(
                with_rows.contains(org),
                "compute_trends rows of organization {org}"
            );
        }
    }

    // entitlements: where projects and compute are counted over projects, they are
    // this organization's projects.
    let ent = common::json_rows(&dir, "entitlements");
    let mut checked = 0;
    for (org, rows) in &projects {
        let Some(count) = ent.iter().find(|r| {
            r["organization_id"].as_i64() == Some(*org)
                && r["metric"] == "projects"
                && r["source"] == "projects"
        }) else {
            continue;
        };
        let live = rows.iter().filter(|r| r["deleted_date"].is_null()).count();
        assert_eq!(
            count["used"].as_u64(),
            Some(live as u64),
            "organization {org}"
        );
        let compute = common::entitlement(&ent, *org, "compute_seconds");
        if compute["source"] == "project_info+projects" {
            let ms: i64 = rows.iter().filter_map(|r| r["time_used_ms"].as_i64()).sum();
            let used = compute["used"].as_f64().unwrap_or(f64::NAN);
            assert!(
                (used - ms as f64 / 1000.0).abs() < 1e-6,
                "organization {org}"
            );
        }
        checked += 1;
    }
    assert!(checked > 3, "{checked} organizations checked");

    // usage_summary: the projects created in the last 30 days and the stale ones.
    let conn = common::open(&db);
    let mut stmt = conn
        .prepare("SELECT id, created FROM projects")
        .expect("prepare");
    let created: BTreeMap<i64, Option<String>> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .map(|(id, c): (i64, Option<String>)| (id, c.map(|c| c.chars().take(10).collect())))
        .collect();
    let (window_start, stale_before) = (days_before(29), days_before(90));
    let summary = common::json_rows(&dir, "usage_summary");
    for (org, rows) in &projects {
        let Some(s) = summary.iter().find(|r| {
            r["scope"] == "organization"
                && r["id"].as_i64() == Some(*org)
                && r["window_days"].as_i64() == Some(30)
        }) else {
            continue;
        };
        let added = rows
            .iter()
            .filter_map(|r| created.get(&r["project_id"].as_i64()?)?.clone())
            .filter(|d| *d >= window_start && *d <= today)
            .count();
        let stale = rows
            .iter()
            .filter(|r| r["deleted_date"].is_null())
            .filter(|r| day_of(&r["last_accessed"]).is_some_and(|d| d < stale_before))
            .count();
        assert_eq!(
            s["projects_added"].as_u64(),
            Some(added as u64),
            "organization {org}"
        );
        assert_eq!(
            s["stale_projects"].as_u64(),
            Some(stale as u64),
            "organization {org}"
        );
    }
    for id in [org::DEV_TWIN_A, org::DEV_TWIN_B, org::DEV_PENDING_MEMBER] {
        assert!(
            summary.iter().any(|r| r["id"].as_i64() == Some(id)),
            "usage_summary rows of organization {id}"
        );
    }

    // The organization pages list each project on its organization's page.
    for (org, rows) in &projects {
        let page = std::fs::read_to_string(dir.join(format!("orgs/{org}.html")))
            .unwrap_or_else(|e| panic!("orgs/{org}.html: {e}"));
        for r in rows {
            let id = r["project_id"].as_i64().expect("project id");
            assert!(
                page.contains(&format!(">{id}<")),
                "project {id} on the page of organization {org}"
            );
        }
    }
}
