//! A service that allows N requests per second (the sandbox's `rps=N`, 429 with
//! `Retry-After` past it): the sync slows to its pace instead of meeting a storm of
//! 429s, and `--rps` stays a hard cap below it. A service that answers 429 at
//! random (`429=P`) is waited out 429 by 429 and never sets a pace. The 429s are
//! counted by the sandbox (`GET /sandbox/stats`), not by the client under test.

use crate::common;
use crate::digest;
use crate::faults;
use orgledger::mirror::runs::RunStatus;
use orgledger::sync;
use orgledger_sandbox::{FaultSpec, Profile, SandboxHandle};
use std::time::Instant;

/// API requests the sandbox received and answered 429.
async fn served(sb: &SandboxHandle) -> (u64, u64) {
    let body = common::http()
        .get(format!("{}/sandbox/stats", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("stats answer")
        .bytes()
        .await
        .expect("stats body");
    let stats: serde_json::Value = serde_json::from_slice(&body).expect("stats JSON");
    let field = |name: &str| stats[name].as_u64().expect(name);
    (field("requests"), field("rateLimited"))
}

/// One sync into `db`, which must succeed, and how long it took in seconds.
async fn timed_sync(
    sb: &SandboxHandle,
    client: &orgledger::api::Client,
    db: &std::path::Path,
) -> (sync::SyncOutcome, f64) {
    let started = Instant::now();
    let outcome = sync::run(client, &common::sync_opts(sb, db), None)
        .await
        .expect("sync");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.errors);
    (outcome, seconds)
}

/// What `sync_runs.message` says of run `run_id`.
fn run_message(conn: &rusqlite::Connection, run_id: i64) -> String {
    conn.query_row(
        "SELECT message FROM sync_runs WHERE id = ?1",
        [run_id],
        |r| r.get(0),
    )
    .expect("run message")
}

/// What one sync of `small` against a faulty service left: the client (its
/// throttle), the time, the sandbox's counts and the run's message.
struct FaultySync {
    client: orgledger::api::Client,
    seconds: f64,
    requests: u64,
    limited: u64,
    note: String,
}

/// One sync of `small` against `spec`, which must store the fault-free world.
async fn sync_small_against(spec: &str) -> FaultySync {
    let expected = faults::clean_digest(Profile::Small).await;
    let spec: FaultSpec = spec.parse().expect("spec");
    let sb = common::start(Profile::Small, spec, None).await;
    let (_dir, db) = common::scratch();
    let client = common::admin(&sb);
    let (outcome, seconds) = timed_sync(&sb, &client, &db).await;
    let mirror = common::open(&db);
    assert_eq!(digest::current_state(&mirror).expect("digest"), expected);
    let (requests, limited) = served(&sb).await;
    let note = run_message(&mirror, outcome.run_id);
    FaultySync {
        client,
        seconds,
        requests,
        limited,
        note,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_rate_limit_the_sync_settles_near_it_with_few_429s() {
    const LIMIT: f64 = 40.0;
    let FaultySync {
        client,
        seconds,
        requests,
        limited,
        note,
    } = sync_small_against(&format!("rps={LIMIT}")).await;
    let share = limited as f64 / requests as f64;
    assert!(
        share < 0.05,
        "{limited} of {requests} requests answered 429 ({:.1} %)",
        share * 100.0
    );
    // Near the limit: the requests the service accepted came at more than half
    // its pace on average, over the whole sync (its start and end included).
    let pace = (requests - limited) as f64 / seconds;
    assert!(
        pace > LIMIT / 2.0 && pace <= LIMIT * 1.05,
        "{pace:.1} requests/s against a limit of {LIMIT}"
    );
    assert_eq!(
        client.throttle().limited_count(),
        limited,
        "client and service agree"
    );
    assert!(
        note.contains(&format!("answered {limited} requests with 429")),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_per_second_cap_below_the_service_limit_meets_no_429() {
    const CAP: f64 = 10.0;
    let spec: FaultSpec = "rps=20".parse().expect("spec");
    let sb = common::start(Profile::Tiny, spec, None).await;
    let (_dir, db) = common::scratch();
    let client = common::admin_with(&sb, |cfg| cfg.rps = Some(CAP));
    let (_outcome, seconds) = timed_sync(&sb, &client, &db).await;
    let (requests, limited) = served(&sb).await;
    assert_eq!(limited, 0, "the cap kept the sync under the limit");
    assert!(
        seconds >= (requests - 1) as f64 / CAP,
        "{requests} requests in {seconds:.2} s break a cap of {CAP}/s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_429s_cost_their_pauses_and_never_lower_the_pace() {
    let FaultySync {
        client,
        limited,
        note,
        ..
    } = sync_small_against("429=0.02").await;
    assert!(limited >= 1, "the service answered some 429s");
    assert_eq!(client.throttle().limited_count(), limited);
    // Lone 429s among accepted answers show no limit: paused for, never paced.
    assert_eq!(client.throttle().ceiling(), None, "no pace was set");
    assert!(
        note.contains(&format!("answered {limited} requests with 429"))
            && note.contains("not paced"),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_answered_429_eight_times_then_200_is_stored_with_its_retries_unspent() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let client = common::admin(&sb);
    // An organization the white label lists, not the white label itself (that one
    // is fetched during discovery).
    let org = sb.info.whitelabel_organization_id + 1;
    let path = format!("/v1/api/organizations/{org}");
    let route = format!("/sandbox/fail?path={path}&status=429&times=8");
    assert_eq!(common::admin_post(&sb, &route).await, 200);
    let (outcome, seconds) = timed_sync(&sb, &client, &db).await;
    assert_eq!(outcome.totals.errors, 0, "{:?}", outcome.errors);
    let conn = common::open(&db);
    assert_eq!(
        common::count(
            &conn,
            &format!("SELECT COUNT(*) FROM organizations WHERE id = {org} AND name IS NOT NULL")
        ),
        1,
        "the organization is stored"
    );
    let (_, limited) = served(&sb).await;
    assert_eq!(limited, 8);
    assert_eq!(client.throttle().limited_count(), 8);
    let note = run_message(&conn, outcome.run_id);
    // Eight 429s are more than the five retries a document has: spent on them,
    // the document would have waited for a second pass at the end of the run.
    assert!(!note.contains("second pass"), "{note}");
    // Each 429 waited its Retry-After of 1 s once (by every request, together).
    assert!(seconds >= 8.0, "{seconds:.2} s");
}
