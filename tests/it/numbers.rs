//! Numbers finance can trust, from the data layer up, over HTTP against a
//! sandbox serving a hand-shaped world: soft-deleted projects still count, an
//! organization without projects has compute 0, a 2^60 limit survives every way it
//! can be written, a `+02:00` midnight record keeps its day, and a departed user's
//! trials leave with them. Every expected figure is written out by hand.

use crate::common;
use orgledger::api::Timestamp;
use orgledger::api::operation::{organization_path, project_info_path, whitelabel_user_path};
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions, Thresholds};
use orgledger::sandbox::generate::generate;
use orgledger::sandbox::{FaultSpec, Profile, SandboxHandle, World};
use orgledger::sync::{self, SyncOutcome};
use serde_json::Value;
use std::path::Path;

/// 2^60 seconds: a limit no f64 printing may mangle.
const BIG_LIMIT: i64 = 1 << 60;

/// The shaped parts of the world.
pub(crate) struct Shape {
    /// The organization with exactly three projects, the first soft-deleted.
    pub org: i64,
    /// Its projects: (id, compute used in ms).
    pub projects: [(i64, i64); 3],
    /// An organization left without projects.
    pub empty_org: i64,
    /// The deleted project's `deletedDate` as the mirror writes it.
    pub deleted_date: String,
}

/// The tiny generated world, reshaped: organization `org` keeps three projects
/// using 1,000,000 ms, 2,500,000 ms and (soft-deleted three days ago) 7,000,000 ms of
/// compute, with a compute limit of 2^60 s; `empty_org` loses all of its projects.
pub(crate) fn shaped_world() -> (World, Shape) {
    let mut world = generate(Profile::Tiny, 42, common::start_date());
    let now = world.now;
    let regular: Vec<i64> = world
        .organizations
        .iter()
        .filter(|o| o.whitelabel_id.is_some() && !o.is_developer_profile)
        .filter(|o| o.deleted_date.is_none())
        .map(|o| o.id)
        .collect();
    let owned = |world: &World, org: i64| -> Vec<usize> {
        (0..world.projects.len())
            .filter(|&i| {
                let p = &world.projects[i];
                p.owner_organization_id == org && !p.removed
            })
            .collect()
    };
    let org = *regular
        .iter()
        .find(|&&o| owned(&world, o).len() >= 3)
        .expect("an organization with three projects");
    let empty_org = *regular
        .iter()
        .find(|&&o| o != org)
        .expect("a second regular organization");
    for i in owned(&world, empty_org) {
        world.projects[i].removed = true;
    }
    let mine = owned(&world, org);
    for &i in &mine[3..] {
        world.projects[i].removed = true;
    }
    let used = [7_000_000, 1_000_000, 2_500_000];
    let mut projects = [(0, 0); 3];
    for (k, &i) in mine[..3].iter().enumerate() {
        let p = &mut world.projects[i];
        p.compute.used_ms = used[k];
        p.compute.total_ms = 20_000_000;
        p.compute.daily_ms = 0;
        p.deleted_date = None;
        p.full_deletion_date = None;
        p.scheduled_full_deletion_date = None;
        if k == 0 {
            p.deleted_date = Some(now - chrono::Duration::days(3));
            p.scheduled_full_deletion_date = Some(now + chrono::Duration::days(27));
        }
        projects[k] = (p.id, used[k]);
    }
    if let Some(o) = world.organizations.iter_mut().find(|o| o.id == org) {
        let mut limits = o.entitlement_limits.clone().unwrap_or_default();
        limits.compute_time_per_year = Some(BIG_LIMIT);
        o.entitlement_limits = Some(limits);
    }
    let deleted_date = Timestamp(now - chrono::Duration::days(3)).as_text();
    (
        world,
        Shape {
            org,
            projects,
            empty_org,
            deleted_date,
        },
    )
}

pub(crate) async fn start(world: World) -> SandboxHandle {
    common::start(Profile::Tiny, FaultSpec::default(), Some(world)).await
}

pub(crate) async fn sync_once(sb: &SandboxHandle, db: &Path) -> SyncOutcome {
    sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync runs")
}

/// Builds `names` as of the test date into `dir`, in CSV and JSON.
fn build(db: &Path, dir: &Path, names: &[&str]) -> std::path::PathBuf {
    let mut opts = ReportOptions::new(db, common::start_date());
    opts.names = names.iter().map(|n| n.to_string()).collect();
    opts.formats = vec![Format::Csv, Format::Json];
    opts.out_root = dir.to_path_buf();
    opts.thresholds = Thresholds::default();
    render::run(&opts).expect("reports build").dir
}

fn errors_of(conn: &rusqlite::Connection, run: i64) -> i64 {
    common::count(
        conn,
        &format!("SELECT COUNT(*) FROM sync_errors WHERE run_id = {run}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_projects_count_and_an_organization_without_projects_uses_zero() {
    let (world, shape) = shaped_world();
    let sb = start(world).await;
    let (dir, db) = common::scratch();
    let first = sync_once(&sb, &db).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let conn = common::open(&db);
    let (deleted, deleted_ms) = shape.projects[0];
    assert_eq!(
        common::count(
            &conn,
            &format!("SELECT compute_time_used_ms FROM project_info WHERE project_id = {deleted}")
        ),
        deleted_ms,
        "the soft-deleted project's information is fetched"
    );

    // 7,000,000 + 1,000,000 + 2,500,000 ms = 10,500 s, the deleted project included.
    let out = build(
        &db,
        &dir.path().join("first"),
        &["entitlements", "project_compute"],
    );
    let rows = common::json_rows(&out, "entitlements");
    let compute = common::entitlement(&rows, shape.org, "compute_seconds");
    assert_eq!(compute["used"].as_f64(), Some(10_500.0), "{compute}");
    assert_eq!(compute["source"], "project_info+projects");
    // No projects: the sum over none is 0 (no limit is set, so the status says so).
    let empty = common::entitlement(&rows, shape.empty_org, "compute_seconds");
    assert_eq!(empty["used"].as_f64(), Some(0.0), "{empty}");
    assert_ne!(empty["status"], "no_data", "{empty}");
    assert_eq!(empty["source"], "project_info+projects");
    let projects = common::json_rows(&out, "project_compute");
    let row = projects
        .iter()
        .find(|r| r["project_id"].as_i64() == Some(deleted))
        .expect("the deleted project is listed");
    // 7,000,000 of 20,000,000 ms = 35 %.
    assert_eq!(row["time_used_ms"].as_i64(), Some(7_000_000));
    assert_eq!(row["pct_used"].as_f64(), Some(35.0));
    assert_eq!(
        row["deleted_date"].as_str(),
        Some(shape.deleted_date.as_str()),
        "{row}"
    );
    let live = projects
        .iter()
        .find(|r| r["project_id"].as_i64() == Some(shape.projects[1].0))
        .expect("a live project is listed");
    assert_eq!(live["deleted_date"], Value::Null);

    // The service stops serving the deleted project (404): expected, not an error;
    // the stored information stays, and so does the organization's figure.
    let path = project_info_path(deleted, None);
    assert_eq!(
        common::admin_post(&sb, &format!("/sandbox/fail?path={path}&status=404")).await,
        200
    );
    let second = sync_once(&sb, &db).await;
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);
    assert_eq!(errors_of(&conn, second.run_id), 0);
    // `success: false` naming the missing project means the same.
    let healed = common::http()
        .delete(format!("{}/sandbox/fail?path={path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("fail route answers");
    assert_eq!(healed.status().as_u16(), 200);
    let refusal = format!(r#"{{"success":false,"error":"Project {deleted} not found"}}"#);
    common::set_override(&sb, &path, 200, refusal.into_bytes()).await;
    let third = sync_once(&sb, &db).await;
    assert_eq!(third.status, RunStatus::Succeeded, "{:?}", third.errors);
    assert_eq!(errors_of(&conn, third.run_id), 0);
    assert_eq!(
        common::count(
            &conn,
            &format!(
                "SELECT compute_time_used_ms FROM project_info \
                 WHERE project_id = {deleted} AND removed_at IS NULL"
            )
        ),
        7_000_000,
        "the last stored information stays"
    );
    let out = build(&db, &dir.path().join("third"), &["entitlements"]);
    let compute = common::entitlement(
        &common::json_rows(&out, "entitlements"),
        shape.org,
        "compute_seconds",
    );
    assert_eq!(compute["used"].as_f64(), Some(10_500.0), "{compute}");

    // A live project that is not found is still a failure.
    let live_path = project_info_path(shape.projects[1].0, None);
    common::admin_post(&sb, &format!("/sandbox/fail?path={live_path}&status=404")).await;
    let fourth = sync_once(&sb, &db).await;
    assert_eq!(fourth.status, RunStatus::Partial);
    assert_eq!(errors_of(&conn, fourth.run_id), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_to_the_60_limit_survives_every_spelling_and_is_printed_in_plain_digits() {
    let (world, shape) = shaped_world();
    let sb = start(world).await;
    let (dir, db) = common::scratch();
    let conn_path = db.clone();
    let path = organization_path(shape.org);
    let body = common::served(&sb, &path).await;
    let plain = BIG_LIMIT.to_string();
    assert_eq!(plain, "1152921504606846976");
    assert!(body.contains(&plain), "the limit is served as an integer");
    for spelling in [
        "1152921504606846976",
        "1.152921504606846976e18",
        "1152921504606846976.0",
    ] {
        common::set_override(&sb, &path, 200, body.replace(&plain, spelling).into_bytes()).await;
        let run = sync_once(&sb, &db).await;
        assert_eq!(
            run.status,
            RunStatus::Succeeded,
            "{spelling}: {:?}",
            run.errors
        );
        let conn = common::open(&conn_path);
        let (stored, text): (f64, String) = conn
            .query_row(
                "SELECT limit_compute_time_per_year, \
                 printf('%d', CAST(limit_compute_time_per_year AS INTEGER)) \
                 FROM organizations WHERE id = ?1",
                [shape.org],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("the organization is stored");
        assert_eq!(stored, BIG_LIMIT as f64, "{spelling}");
        assert_eq!(text, plain, "{spelling}");
    }

    let out = build(&db, &dir.path().join("r"), &["entitlements"]);
    let row = common::entitlement(
        &common::json_rows(&out, "entitlements"),
        shape.org,
        "compute_seconds",
    );
    assert_eq!(row["limit"].as_u64(), Some(1 << 60), "{row}");
    let json = std::fs::read_to_string(out.join("entitlements.json")).expect("json");
    assert!(
        json.contains(r#""limit":1152921504606846976,"#),
        "JSON: no exponent"
    );
    let csv = std::fs::read_to_string(out.join("entitlements.csv")).expect("csv");
    let line = csv
        .lines()
        .find(|l| l.starts_with(&format!("{},", shape.org)) && l.contains(",compute_seconds,"))
        .expect("the CSV row");
    // used 10,500 s; limit 2^60, no `e18`, no `.0`.
    assert!(
        line.contains(",10500,1152921504606846976,"),
        "CSV row: {line}"
    );
}

/// The tiny generated world, served and synced once (cleanly) into a scratch mirror.
async fn synced_tiny_world() -> (
    SandboxHandle,
    tempfile::TempDir,
    std::path::PathBuf,
    rusqlite::Connection,
) {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let first = sync_once(&sb, &db).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let conn = common::open(&db);
    (sb, dir, db, conn)
}

/// The user with the most daily-metrics days and their get-whitelabel-user answer.
async fn busiest_user(sb: &SandboxHandle, conn: &rusqlite::Connection) -> (i64, String, Value) {
    let user = common::count(
        conn,
        "SELECT user_id FROM daily_metrics GROUP BY user_id ORDER BY COUNT(*) DESC, user_id LIMIT 1",
    );
    let path = whitelabel_user_path(sb.info.whitelabel_organization_id, user);
    let body: Value = serde_json::from_str(&common::served(sb, &path).await)
        .expect("get-whitelabel-user answers JSON");
    (user, path, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plus_two_midnight_record_is_its_own_day_and_a_second_record_that_day_repeats_it() {
    let (sb, _dir, db, conn) = synced_tiny_world().await;
    let (user, path, mut body) = busiest_user(&sb, &conn).await;
    let days = common::count(
        &conn,
        &format!("SELECT COUNT(*) FROM daily_metrics WHERE user_id = {user}"),
    );
    let metrics = body["user"]["dailyMetrics"]
        .as_array_mut()
        .expect("daily metrics");
    let last = metrics.last().cloned().expect("a last record");
    let last_day: chrono::NaiveDate = last["date"].as_str().expect("date")[..10]
        .parse()
        .expect("a day");
    let next = last_day + chrono::Duration::days(1);
    // Midnight of the next day at +02:00 is 22:00 UTC on the last day: in UTC it
    // would repeat the last day; the platform means the next one.
    let mut record = last.clone();
    record["date"] = Value::from(format!("{next}T00:00:00+02:00"));
    record["cpuComputeTimeSeconds"] = Value::from(4242);
    metrics.push(record);
    let once = serde_json::to_vec(&body).expect("body");
    common::set_override(&sb, &path, 200, once).await;
    let second = sync_once(&sb, &db).await;
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);
    let (stored, cpu, date): (i64, i64, String) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM daily_metrics WHERE user_id = ?1), \
             cpu_compute_time_seconds, date FROM daily_metrics WHERE user_id = ?1 AND day = ?2",
            rusqlite::params![user, next.to_string()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the new day is stored");
    assert_eq!((stored, cpu), (days + 1, 4242));
    assert_eq!(
        date,
        format!("{last_day}T22:00:00.000Z"),
        "the instant is kept"
    );

    // 23:30 at -05:00 is 04:30 UTC the day after, but the same written day: a
    // repeated key, reported against the user and that day.
    let metrics = body["user"]["dailyMetrics"]
        .as_array_mut()
        .expect("daily metrics");
    let mut again = metrics.last().cloned().expect("the new record");
    again["date"] = Value::from(format!("{next}T23:30:00-05:00"));
    again["cpuComputeTimeSeconds"] = Value::from(4343);
    metrics.push(again);
    common::set_override(&sb, &path, 200, serde_json::to_vec(&body).expect("body")).await;
    let third = sync_once(&sb, &db).await;
    assert_eq!(third.status, RunStatus::Partial, "{:?}", third.errors);
    let message: String = conn
        .query_row(
            "SELECT message FROM sync_errors WHERE run_id = ?1 AND entity = ?2",
            rusqlite::params![third.run_id, format!("user {user} on {next}")],
            |r| r.get(0),
        )
        .expect("the repeat is recorded against the user and the day");
    assert!(
        message.starts_with(&format!("daily_metrics: 2 records for the day {next}")),
        "{message}"
    );
    let cpu = common::count(
        &conn,
        &format!(
            "SELECT cpu_compute_time_seconds FROM daily_metrics WHERE user_id = {user} AND day = '{next}'"
        ),
    );
    assert_eq!(cpu, 4343, "the last record of the day is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_departed_user_takes_their_trials_and_organization_summaries_along() {
    let (sb, _dir, db, conn) = synced_tiny_world().await;
    // A member of exactly one organization, with a trial and organization summaries.
    let (user, org): (i64, i64) = conn
        .query_row(
            "SELECT m.user_id, MIN(m.organization_id) FROM organization_members m \
             WHERE m.user_id IN (SELECT user_id FROM trials) \
               AND m.user_id IN (SELECT user_id FROM user_organizations) \
             GROUP BY m.user_id HAVING COUNT(*) = 1 ORDER BY m.user_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a single-organization user with a trial");
    let live = |table: &str| {
        common::count(
            &conn,
            &format!("SELECT COUNT(*) FROM {table} WHERE user_id = {user} AND removed_at IS NULL"),
        )
    };
    let (trials, summaries) = (live("trials"), live("user_organizations"));
    assert!(trials >= 1 && summaries >= 1);

    // The organization no longer lists the user: nobody lists them any more.
    let path = organization_path(org);
    let mut body: Value = serde_json::from_str(&common::served(&sb, &path).await)
        .expect("get-organization answers JSON");
    let members = body["organization"]["users"]
        .as_array_mut()
        .expect("members");
    members.retain(|m| m["id"].as_i64() != Some(user));
    common::set_override(&sb, &path, 200, serde_json::to_vec(&body).expect("body")).await;
    let second = sync_once(&sb, &db).await;
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);
    let removed_with = |table: &str, key: &str| {
        common::count(
            &conn,
            &format!(
                "SELECT COUNT(*) FROM {table} WHERE {key} = {user} AND removed_run = {}",
                second.run_id
            ),
        )
    };
    assert_eq!(removed_with("users", "id"), 1, "the user is gone");
    assert_eq!(removed_with("trials", "user_id"), trials);
    assert_eq!(removed_with("user_organizations", "user_id"), summaries);
    assert_eq!(live("trials") + live("user_organizations"), 0);
    // Nobody else's rows were touched.
    assert_eq!(
        common::count(
            &conn,
            &format!(
                "SELECT COUNT(*) FROM trials WHERE user_id <> {user} AND removed_run = {}",
                second.run_id
            )
        ),
        0
    );
}
