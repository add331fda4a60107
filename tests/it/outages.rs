//! The service goes away mid-sync: the sync pauses, probes one request at a time,
//! and resumes; past the outage limit it stops with one error. The outages here
//! last seconds (the sandbox's `POST /sandbox/outage`), not minutes, so the tests
//! stay quick; nothing in the behaviour depends on the length.

use crate::common;
use crate::digest;
use crate::faults;
use orgledger::api::Client;
use orgledger::mirror::runs::RunStatus;
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
) -> tokio::task::JoinHandle<SyncOutcome> {
    let opts = common::sync_opts(sb, db);
    let syncing = {
        let client = client.clone();
        tokio::spawn(async move { sync::run(&client, &opts, None).await.expect("sync") })
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
    let healed = common::http()
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
    let outcome = sync_with_outage(&sb, &client, &db, 4)
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
    let outcome = sync_with_outage(&sb, &client, &db, 120)
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
    // How long it waited is measured, not the limit: on a loaded machine the
    // request that finds the limit spent can come seconds after it ran out.
    let waited: Option<u64> = messages[0]
        .strip_prefix("the service was unreachable for ")
        .and_then(|rest| rest.split_once(" s from "))
        .and_then(|(secs, _)| secs.parse().ok());
    assert!(
        waited.is_some_and(|s| (1..20).contains(&s))
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
async fn sigterm_ends_a_sync_waiting_for_the_service_within_ten_seconds() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let sb = slow_sandbox().await;
    let (_dir, db) = common::scratch();
    let mut child = Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["--db", db.to_str().expect("utf-8"), "sync", "--no-progress"])
        .args([
            "--whitelabel-org",
            &sb.info.whitelabel_organization_id.to_string(),
        ])
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt)
        .env_remove("ORGLEDGER_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sync starts");
    let (lines, seen) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    // Once discovery is done, the service goes away.
    let started = Instant::now();
    while common::count_or_zero(&db, "SELECT COUNT(*) FROM organizations") == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "no progress");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        common::admin_post(&sb, "/sandbox/outage?seconds=120").await,
        200
    );
    loop {
        let line = seen
            .recv_timeout(Duration::from_secs(30))
            .expect("the sync says it waits for the service");
        if line.contains("waiting for the service since") {
            break;
        }
    }
    let (code, took) = common::signal_and_wait(&mut child, "-TERM").await;
    assert!(took < Duration::from_secs(10), "exited within 10 s");
    assert_eq!(code, Some(143));
    assert_eq!(
        common::count(
            &common::open(&db),
            "SELECT COUNT(*) FROM sync_runs WHERE status = 'aborted'"
        ),
        1
    );
    end_outage(&sb).await;
}
