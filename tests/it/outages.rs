//! The service goes away mid-sync: the sync pauses, probes one request at a time,
//! and resumes; past the outage limit it stops with one error. The outages here
//! last seconds (the sandbox's `POST /sandbox/outage`), not minutes, so the tests
//! stay quick; nothing in the behaviour depends on the length.

use crate::common;
use crate::digest;
use crate::faults;
use orgledger::api::Client;
use orgledger::api::outage::Phase;
use orgledger::mirror::runs::RunStatus;
use orgledger::shutdown::{Shutdown, Signal};
use orgledger::sync::{self, SyncOutcome};
use orgledger_sandbox::{FaultSpec, Profile, SandboxHandle};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A `small` world whose answers take 20 ms, so a sync lasts long enough to be
/// interrupted in its middle.
async fn slow_sandbox() -> SandboxHandle {
    let faults: FaultSpec = "latency=20".parse().expect("spec");
    common::start(Profile::Small, faults, None).await
}

/// Starts a sync and, once it has sent `after` requests, an outage of `seconds`.
async fn sync_with_outage(
    sb: &SandboxHandle,
    client: &Client,
    db: &std::path::Path,
    seconds: u64,
    shutdown: Option<Shutdown>,
) -> tokio::task::JoinHandle<SyncOutcome> {
    let opts = common::sync_opts(sb, db);
    let syncing = {
        let client = client.clone();
        tokio::spawn(async move { sync::run(&client, &opts, shutdown).await.expect("sync") })
    };
    let started = Instant::now();
    while client.traffic().requests.load(Ordering::Relaxed) < 100 {
        assert!(!syncing.is_finished(), "the sync ended before its middle");
        assert!(started.elapsed() < Duration::from_secs(30), "no progress");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let route = format!("/sandbox/outage?seconds={seconds}");
    assert_eq!(common::admin_post(sb, &route).await, 200);
    assert!(!syncing.is_finished(), "the outage began mid-sync");
    syncing
}

async fn end_outage(sb: &SandboxHandle) {
    let healed = reqwest::Client::new()
        .delete(format!("{}/sandbox/outage", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("outage ends");
    assert_eq!(healed.status().as_u16(), 200);
}

fn run_message(db: &std::path::Path, run_id: i64) -> String {
    common::open(db)
        .query_row(
            "SELECT COALESCE(message, '') FROM sync_runs WHERE id = ?1",
            [run_id],
            |r| r.get(0),
        )
        .expect("run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_mid_sync_is_waited_out_and_the_mirror_equals_a_clean_sync() {
    // Latency changes no answer: the world is the one a plain `small` sandbox serves.
    let expected = faults::clean_digest(Profile::Small).await;
    let sb = slow_sandbox().await;
    let (_dir, db) = common::scratch();
    let client = common::admin(&sb);
    // Each document's own retries (20 to 200 ms apart) are spent in well under a
    // second: without the pause, a 4-second outage fails hundreds of documents.
    let outcome = sync_with_outage(&sb, &client, &db, 4, None)
        .await
        .await
        .expect("joined");
    assert_eq!(
        outcome.status,
        RunStatus::Succeeded,
        "the outage was waited out: {:?}",
        outcome.errors
    );
    let conn = common::open(&db);
    assert_eq!(common::count(&conn, "SELECT COUNT(*) FROM sync_errors"), 0);
    assert_eq!(digest::current_state(&conn).expect("digest"), expected);
    let message = run_message(&db, outcome.run_id);
    assert!(
        message.contains("waited") && message.contains("for the service (1 outage)"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_limit_ends_partial_with_one_error() {
    let sb = slow_sandbox().await;
    let (_dir, db) = common::scratch();
    let client = common::admin_with(&sb, |cfg| cfg.outage.limit = Duration::from_secs(1));
    let started = Instant::now();
    let outcome = sync_with_outage(&sb, &client, &db, 120, None)
        .await
        .await
        .expect("joined");
    let elapsed = started.elapsed();
    end_outage(&sb).await;
    assert_eq!(outcome.status, RunStatus::Partial, "{:?}", outcome.errors);
    assert!(elapsed < Duration::from_secs(20), "gave up in {elapsed:?}");
    let conn = common::open(&db);
    let messages: Vec<String> = conn
        .prepare("SELECT message FROM sync_errors")
        .expect("sql")
        .query_map([], |r| r.get(0))
        .expect("errors")
        .collect::<Result<_, _>>()
        .expect("errors");
    assert_eq!(
        messages.len(),
        1,
        "one error, not one per document: {messages:?}"
    );
    assert!(
        messages[0].starts_with("the service was unreachable for 1 s from ")
            && messages[0].contains("HTTP 503")
            && messages[0].contains("documents not fetched"),
        "{}",
        messages[0]
    );
    assert_eq!(
        common::count(
            &conn,
            "SELECT COUNT(*) FROM organizations WHERE removed_at IS NOT NULL"
        ),
        0,
        "a partial run marks nothing removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_request_ends_a_sync_waiting_for_the_service_within_ten_seconds() {
    let sb = slow_sandbox().await;
    let (_dir, db) = common::scratch();
    let client = common::admin(&sb);
    let (trigger, shutdown) = Shutdown::manual();
    let mut phase = client.outage().subscribe();
    let syncing = sync_with_outage(&sb, &client, &db, 120, Some(shutdown)).await;
    tokio::time::timeout(
        Duration::from_secs(20),
        phase.wait_for(|p| matches!(p, Phase::Waiting { .. })),
    )
    .await
    .expect("the sync waits for the service")
    .expect("phase");
    let sent = Instant::now();
    trigger.stop(Signal::Terminate);
    let outcome = tokio::time::timeout(Duration::from_secs(10), syncing)
        .await
        .expect("stopped within 10 s")
        .expect("joined");
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert_eq!(outcome.status, RunStatus::Aborted);
    end_outage(&sb).await;
}
