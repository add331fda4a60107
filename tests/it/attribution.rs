//! Every project attributed, developer profiles identified by the data, limits from
//! every source, over HTTP against a `tiny` sandbox world with
//! the default hard cases (ids and descriptions in `orgledger_sandbox::hard_cases`).

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::report::{self, Format, ReportOptions, Thresholds};
use orgledger::sandbox::Profile;
use orgledger::sandbox::hard_cases::{org, project, user};
use orgledger::sync;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Syncs a `tiny` world with the default hard cases once and builds every built-in
/// report as of the test date, in JSON. Returns the scratch folders, the mirror and
/// the reports' folder.
async fn synced_and_reported() -> (tempfile::TempDir, tempfile::TempDir, PathBuf, PathBuf) {
    let sb = common::sandbox(Profile::Tiny).await;
    let (scratch, db) = common::scratch();
    let run = sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync runs");
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    let out = tempfile::tempdir().expect("tempdir");
    let mut opts = ReportOptions::new(&db, common::start_date());
    opts.formats = vec![Format::Json];
    opts.out_root = out.path().to_path_buf();
    opts.thresholds = Thresholds::default();
    let dir = report::run(&opts).expect("reports build").dir;
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
