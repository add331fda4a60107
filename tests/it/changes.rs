//! `orgledger changes` over a mirror synced before and after hand-made changes
//! (`/sandbox/edit`) and time travel: each form of WHEN, a change and its revert, a
//! removal and its return, empty windows, and the same rows whether one sync or
//! several saw the changes.

use crate::common;
use orgledger::sandbox::{Profile, SandboxHandle};
use orgledger::sync;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// `orgledger changes --db DB ARGS... --format json`, parsed.
fn changes(db: &Path, args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["--db", db.to_str().expect("utf-8 path"), "changes"])
        .args(args)
        .args(["--format", "json"])
        .env_remove("ORGLEDGER_DB")
        .env_remove("ORGLEDGER_CONFIG")
        .output()
        .expect("orgledger runs");
    assert!(
        out.status.success(),
        "changes {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).expect("json") {
        Value::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

/// The rows about one entity, without the columns that say when.
fn about(rows: &[Value], entity_type: &str, entity_id: &str) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["entity_type"] == entity_type && r["entity_id"] == entity_id)
        .map(|r| json!([r["kind"], r["field"], r["before"], r["after"]]))
        .collect()
}

async fn edit(sb: &SandboxHandle, body: Value) -> Value {
    let r = common::http()
        .post(format!("{}/sandbox/edit", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("edit answers");
    assert_eq!(r.status().as_u16(), 200, "{body}");
    let text = r.text().await.expect("edit body");
    serde_json::from_str(&text).expect("edit json")
}

async fn sync_now(sb: &SandboxHandle, db: &Path) -> i64 {
    sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync");
    common::count(&common::open(db), "SELECT MAX(id) FROM sync_runs")
}

/// An organization (not the white label's own) with a limit on projects and at
/// least one member: (organization, its limit, a member).
fn some_org(db: &Path) -> (i64, i64, i64) {
    common::open(db)
        .query_row(
            "SELECT o.id, CAST(o.limit_number_of_projects AS INTEGER), MIN(m.user_id) \
               FROM organizations o JOIN organization_members m ON m.organization_id = o.id \
              WHERE o.is_developer_profile = 0 AND o.limit_number_of_projects IS NOT NULL \
                AND o.id <> (SELECT MIN(id) FROM organizations) AND m.removed_at IS NULL \
              GROUP BY o.id ORDER BY o.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("an organization with a limit and a member")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_lists_hand_made_changes_for_each_form_of_when() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let first = sync_now(&sb, &db).await;
    let (org, limit, member) = some_org(&db);
    let (project, trial): (i64, i64) = common::open(&db)
        .query_row(
            "SELECT (SELECT MIN(id) FROM projects WHERE deleted_date IS NULL AND removed_at IS NULL), \
                    (SELECT MIN(id) FROM trials WHERE upgraded_date IS NULL AND deleted_date IS NULL \
                       AND expired_date IS NULL AND expiration_date > '2026-06-03')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a live project and an active trial");

    edit(&sb, json!({"edit": "set_limit", "organization": org, "field": "numberOfProjects", "value": limit + 5})).await;
    edit(
        &sb,
        json!({"edit": "remove_member", "organization": org, "user": member}),
    )
    .await;
    edit(&sb, json!({"edit": "delete_project", "project": project})).await;
    edit(&sb, json!({"edit": "upgrade_trial", "trial": trial})).await;
    let new_org = edit(&sb, json!({"edit": "add_organization", "name": "Neue Örg"})).await["id"]
        .as_i64()
        .expect("new organization id");
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    let second = sync_now(&sb, &db).await;
    // A re-sync of the same world changes nothing.
    let third = sync_now(&sb, &db).await;
    sb.shutdown().await;

    let org_id = org.to_string();
    let member_id = format!("{org}/{member}");
    let expect = |rows: &[Value]| {
        assert_eq!(
            about(rows, "organization", &org_id),
            vec![json!([
                "limit.changed",
                "limit_number_of_projects",
                limit.to_string(),
                (limit + 5).to_string()
            ])]
        );
        assert_eq!(
            about(rows, "member", &member_id),
            vec![json!([
                "member.removed",
                "role",
                about_role(rows, &member_id),
                null
            ])]
        );
        let deleted = about(rows, "project", &project.to_string());
        assert_eq!(deleted.len(), 1, "{deleted:?}");
        assert_eq!(deleted[0][0], "project.deleted");
        assert_eq!(deleted[0][3], "2026-06-01T12:00:00.000Z");
        let upgraded = about(rows, "trial", &trial.to_string());
        assert_eq!(upgraded.len(), 1, "{upgraded:?}");
        assert_eq!(upgraded[0][0], "trial.upgraded");
        assert_eq!(
            about(rows, "organization", &new_org.to_string()),
            vec![json!(["organization.added", null, null, null])]
        );
        let added = rows
            .iter()
            .find(|r| r["entity_id"].as_str() == Some(&*format!("{new_org}")))
            .expect("the new organization's row");
        assert_eq!(added["entity_name"], "Neue Örg");
        assert_eq!(added["observed_at"], "2026-06-02T12:00:00.000Z");
        assert_eq!(added["run_id"], second);
        assert!(
            rows.iter().all(|r| r["run_id"] == second),
            "only run {second} changed anything"
        );
    };
    let by_run = changes(&db, &["--since", &format!("run:{first}")]);
    expect(&by_run);
    let by_day = changes(&db, &["--since", "2026-06-01"]);
    assert_eq!(by_day, by_run);
    let by_time = changes(
        &db,
        &[
            "--since",
            "2026-06-01T13:00:00Z",
            "--until",
            "2026-06-02T12:00:00Z",
        ],
    );
    assert_eq!(by_time, by_run);
    let bounded = changes(
        &db,
        &[
            "--since",
            &format!("run:{first}"),
            "--until",
            &format!("run:{third}"),
        ],
    );
    assert_eq!(bounded, by_run);

    // Empty windows: before the change, after it, and the re-sync that changed nothing.
    assert_eq!(
        changes(&db, &["--since", "2026-05-01", "--until", "2026-06-01"]),
        Vec::<Value>::new()
    );
    assert_eq!(
        changes(&db, &["--since", "2026-06-02T12:00:01Z"]),
        Vec::<Value>::new()
    );
    assert_eq!(
        changes(&db, &["--since", &format!("run:{second}")]),
        Vec::<Value>::new()
    );

    // --kind keeps the kinds named, or every kind of an entity.
    let trials = changes(
        &db,
        &["--since", "2026-06-01", "--kind", "trial,limit.changed"],
    );
    assert!(!trials.is_empty());
    assert!(trials.iter().all(|r| {
        r["kind"]
            .as_str()
            .is_some_and(|k| k.starts_with("trial.") || k == "limit.changed")
    }));
    assert!(
        trials.iter().any(|r| r["kind"] == "trial.upgraded"
            && r["entity_id"].as_str() == Some(&*format!("{trial}")))
    );
}

/// The role the removed member had, as the mirror last saw it.
fn about_role(rows: &[Value], member_id: &str) -> Value {
    rows.iter()
        .find(|r| r["entity_id"] == member_id)
        .map(|r| r["before"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reverted_change_and_a_returning_member_show_both_rows() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let first = sync_now(&sb, &db).await;
    let (org, limit, member) = some_org(&db);
    let role: String = common::open(&db)
        .query_row(
            "SELECT role FROM organization_members WHERE organization_id = ?1 AND user_id = ?2",
            [org, member],
            |r| r.get(0),
        )
        .expect("role");
    let steps = [
        json!({"edit": "set_limit", "organization": org, "field": "numberOfProjects", "value": limit * 2 + 1}),
        json!({"edit": "set_limit", "organization": org, "field": "numberOfProjects", "value": limit}),
        json!({"edit": "remove_member", "organization": org, "user": member}),
        json!({"edit": "add_member", "organization": org, "user": member, "role": role}),
    ];
    for step in steps {
        edit(&sb, step).await;
        sync_now(&sb, &db).await;
    }
    sb.shutdown().await;
    let rows = changes(&db, &["--since", &format!("run:{first}")]);
    let (l, r) = (limit.to_string(), (limit * 2 + 1).to_string());
    assert_eq!(
        about(&rows, "organization", &org.to_string()),
        vec![
            json!(["limit.changed", "limit_number_of_projects", l, r]),
            json!(["limit.changed", "limit_number_of_projects", r, l]),
        ]
    );
    let member_rows: Vec<&Value> = rows
        .iter()
        .filter(|r| r["entity_id"] == format!("{org}/{member}"))
        .collect();
    let kinds: Vec<(&Value, &Value)> = member_rows
        .iter()
        .map(|r| (&r["kind"], &r["run_id"]))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (&json!("member.removed"), &json!(first + 3)),
            (&json!("member.added"), &json!(first + 4)),
        ]
    );
    assert_eq!(member_rows[1]["after"], role);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sync_or_several_over_the_same_changes_give_the_same_rows() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_a_dir, often) = common::scratch();
    let (_b_dir, once) = common::scratch();
    let first_often = sync_now(&sb, &often).await;
    sync_now(&sb, &often).await;
    let first_once = sync_now(&sb, &once).await;
    let (org, limit, member) = some_org(&often);
    edit(&sb, json!({"edit": "set_limit", "organization": org, "field": "totalStorage", "value": limit + 1})).await;
    edit(
        &sb,
        json!({"edit": "set_role", "organization": org, "user": member, "role": "auditor"}),
    )
    .await;
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=2").await,
        200
    );
    for _ in 0..3 {
        sync_now(&sb, &often).await;
    }
    sync_now(&sb, &once).await;
    sb.shutdown().await;
    let strip = |rows: Vec<Value>| -> Vec<Value> {
        rows.into_iter()
            .map(|mut r| {
                let o = r.as_object_mut().expect("row object");
                o.remove("observed_at");
                o.remove("run_id");
                r
            })
            .collect()
    };
    let a = strip(changes(&often, &["--since", &format!("run:{first_often}")]));
    let b = strip(changes(&once, &["--since", &format!("run:{first_once}")]));
    assert!(
        a.iter()
            .any(|r| r["kind"] == "member.role_changed" && r["after"] == "auditor"),
        "{a:?}"
    );
    assert!(
        a.iter()
            .any(|r| r["kind"] == "limit.changed" && r["field"] == "limit_total_storage")
    );
    assert_eq!(a, b);
}

/// `orgledger changes --db DB ARGS...`: its exit code and what it said on stderr.
fn changes_refused(db: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["--db", db.to_str().expect("utf-8"), "changes"])
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_run_or_kind_is_refused_with_what_is_valid() {
    let (_dir, db) = common::scratch();
    rusqlite::Connection::open(&db).expect("db");
    let (code, stderr) = changes_refused(&db, &["--since", "yesterday"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("RFC 3339"));
    let (code, stderr) = changes_refused(&db, &["--since", "run:1", "--kind", "trial.renewed"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("trial.upgraded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_changes_report_and_the_page_section_show_the_week_s_limit_change() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (scratch, db) = common::scratch();
    sync_now(&sb, &db).await;
    let (org, limit, _) = some_org(&db);
    edit(&sb, json!({"edit": "set_limit", "organization": org, "field": "numberOfProjects", "value": limit + 5})).await;
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    sync_now(&sb, &db).await;
    sb.shutdown().await;

    let as_of = common::start_date() + chrono::Days::new(1);
    let mut opts = orgledger::report::ReportOptions::new(&db, as_of);
    opts.formats = vec![
        orgledger::report::Format::Json,
        orgledger::report::Format::Html,
    ];
    opts.out_root = scratch.path().join("reports");
    let dir = orgledger::render::run(&opts).expect("reports build").dir;

    let rows = common::json_rows(&dir, "changes");
    assert_eq!(
        about(&rows, "organization", &org.to_string()),
        vec![json!([
            "limit.changed",
            "limit_number_of_projects",
            limit.to_string(),
            (limit + 5).to_string()
        ])]
    );
    let limit_changes = rows.iter().filter(|r| r["kind"] == "limit.changed").count();

    let page = std::fs::read_to_string(dir.join("index.html")).expect("index.html written");
    common::well_formed(&page).expect("the page is well-formed");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(&page, options).expect("parsed");
    assert!(
        doc.descendants()
            .any(|n| n.has_tag_name("h2") && n.attribute("id") == Some("changes")),
        "no 'What changed this week' heading"
    );
    let count_row = doc
        .descendants()
        .find(|n| n.has_tag_name("tr") && n.attribute("data-kind") == Some("limit.changed"))
        .expect("a count row for limit.changed");
    let cells: Vec<_> = count_row
        .children()
        .filter(|n| n.has_tag_name("td"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(cells, ["limit.changed", limit_changes.to_string().as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_end_reaches_the_last_run_when_the_service_clock_is_ahead() {
    // Runs are timed by the service's clock: here two days ahead of this machine's.
    let ahead = chrono::Utc::now().date_naive() + chrono::Days::new(2);
    let sb = orgledger::sandbox::start(orgledger::sandbox::SandboxOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        profile: Profile::Tiny,
        seed: 42,
        start_date: Some(ahead),
        ..orgledger::sandbox::SandboxOptions::default()
    })
    .await
    .expect("sandbox starts");
    let (_dir, db) = common::scratch();
    let first = sync_now(&sb, &db).await;
    let new_org = edit(&sb, json!({"edit": "add_organization", "name": "Vorn"})).await["id"]
        .as_i64()
        .expect("new organization id");
    let second = sync_now(&sb, &db).await;
    sb.shutdown().await;
    let observed: String = common::open(&db)
        .query_row(
            "SELECT observed_at FROM sync_runs WHERE id = ?1",
            [second],
            |r| r.get(0),
        )
        .expect("the second run's time");
    let now = orgledger::mirror::time_text(chrono::Utc::now());
    assert!(observed > now, "the run ({observed}) is after now ({now})");
    let rows = changes(&db, &["--since", &format!("run:{first}")]);
    assert_eq!(
        about(&rows, "organization", &new_org.to_string()),
        vec![json!(["organization.added", null, null, null])],
        "{rows:?}"
    );
}
