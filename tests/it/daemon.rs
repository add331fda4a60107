//! The real binary on a schedule of seconds against the sandbox.

use crate::common;
use orgledger_sandbox::{FaultSpec, Profile};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn daemon(
    sb: &orgledger_sandbox::SandboxHandle,
    db: &std::path::Path,
    out: &std::path::Path,
    sync_cron: &str,
    report_cron: &str,
) -> Child {
    daemon_with(sb, db, out, sync_cron, report_cron, &[])
}

/// [`daemon`] with more arguments (after the subcommand's own).
pub(crate) fn daemon_with(
    sb: &orgledger_sandbox::SandboxHandle,
    db: &std::path::Path,
    out: &std::path::Path,
    sync_cron: &str,
    report_cron: &str,
    extra: &[&str],
) -> Child {
    Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args([
            "--db",
            db.to_str().expect("utf-8 path"),
            "daemon",
            "--sync-cron",
            sync_cron,
            "--report-cron",
            report_cron,
        ])
        .args([
            "--whitelabel-org",
            &sb.info.whitelabel_organization_id.to_string(),
            "--no-progress",
        ])
        .args([
            "--out",
            out.to_str().expect("utf-8 path"),
            "--format",
            "csv,json",
            "--timeout",
            "5",
            // A server shut down mid-sync is an outage: waited out 2 s, not 10 minutes.
            "--outage-limit",
            "2",
        ])
        .args(extra)
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt)
        .env_remove("ORGLEDGER_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("daemon starts")
}

pub(crate) fn runs(db: &std::path::Path, status: &str) -> i64 {
    let Ok(conn) = rusqlite::Connection::open(db) else {
        return 0;
    };
    conn.query_row(
        "SELECT COUNT(*) FROM sync_runs WHERE status = ?1",
        [status],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

/// A Tiny sandbox started again on the address of one that was shut down.
pub(crate) async fn revive(addr: &str) -> orgledger_sandbox::SandboxHandle {
    orgledger_sandbox::start(orgledger_sandbox::SandboxOptions {
        addr: addr.parse().expect("same address"),
        profile: Profile::Tiny,
        seed: 42,
        start_date: Some(common::start_date()),
        faults: FaultSpec::default(),
        ..orgledger_sandbox::SandboxOptions::default()
    })
    .await
    .expect("sandbox back on the same port")
}

pub(crate) async fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends SIGTERM and returns (exit code, seconds to exit, stderr).
async fn terminate(mut child: Child) -> (Option<i32>, f64, String) {
    let (code, took) = common::signal_and_wait(&mut child, "-TERM").await;
    let mut err = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut err);
    }
    (code, took.as_secs_f64(), err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncs_and_reports_on_schedule_then_stops_cleanly() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let out = dir.path().join("reports");
    let child = daemon(&sb, &db, &out, "*/2 * * * * *", "*/3 * * * * *");
    wait_until("two syncs", Duration::from_secs(40), || {
        runs(&db, "succeeded") >= 2
    })
    .await;
    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    wait_until("a report", Duration::from_secs(20), || {
        out.join(&today).join("manifest.json").exists()
    })
    .await;
    let (code, secs, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "clean exit; stderr:\n{stderr}");
    assert!(secs < 10.0, "exited within 10 s ({secs:.1})");
    assert_eq!(runs(&db, "running"), 0, "no run left running");
    assert!(!stderr.contains(&sb.info.jwt), "the JWT is never logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_during_a_long_sync_is_skipped_and_sigterm_aborts_it() {
    let faults: FaultSpec = "slow=1".parse().expect("fault spec");
    let sb = common::start(Profile::Tiny, faults, None).await;
    let (dir, db) = common::scratch();
    let child = daemon(
        &sb,
        &db,
        &dir.path().join("r"),
        "* * * * * *",
        "0 0 0 1 1 *",
    );
    wait_until("a running sync", Duration::from_secs(20), || {
        runs(&db, "running") >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (code, secs, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(secs < 10.0, "exited within 10 s ({secs:.1})");
    assert!(
        stderr.contains("sync tick skipped"),
        "overlapping ticks are skipped; stderr:\n{stderr}"
    );
    assert_eq!(runs(&db, "running"), 0, "the interrupted run is marked");
    assert!(
        runs(&db, "aborted") >= 1,
        "the interrupted run is marked aborted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_a_dead_server_and_recovers() {
    let sb = common::sandbox(Profile::Tiny).await;
    let addr = sb.info.url.trim_start_matches("http://").to_string();
    let (dir, db) = common::scratch();
    let child = daemon(
        &sb,
        &db,
        &dir.path().join("r"),
        "*/2 * * * * *",
        "0 0 0 1 1 *",
    );
    wait_until("a first sync", Duration::from_secs(30), || {
        runs(&db, "succeeded") >= 1
    })
    .await;
    sb.shutdown().await;
    wait_until("a failed sync", Duration::from_secs(30), || {
        runs(&db, "failed") >= 1
    })
    .await;
    let before = runs(&db, "succeeded");
    let revived = revive(&addr).await;
    wait_until("a sync after recovery", Duration::from_secs(30), || {
        runs(&db, "succeeded") > before
    })
    .await;
    let (code, _, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(
        stderr.contains("next tick will try again") || stderr.contains("discovery failed"),
        "the failure was logged:\n{stderr}"
    );
    revived.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_mirror_is_synced_at_start_and_the_log_says_when_each_job_is_due() {
    use chrono::Datelike;
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let out = dir.path().join("r");
    // Schedules that are not due for weeks: only the start can sync.
    let (sync_cron, report_cron) = ("0 0 5 1 1 *", "0 30 5 1 1 *");
    let child = daemon(&sb, &db, &out, sync_cron, report_cron);
    wait_until("a sync at start", Duration::from_secs(30), || {
        runs(&db, "succeeded") >= 1
    })
    .await;
    wait_until("the sync job's end", Duration::from_secs(10), || {
        runs(&db, "running") == 0
    })
    .await;
    let (code, _, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let year = chrono::Utc::now().year() + 1;
    for due in [
        format!("next_sync=\"{year}-01-01 05:00:00 UTC\""),
        format!("next_report=\"{year}-01-01 05:30:00 UTC\""),
    ] {
        assert!(stderr.contains(&due), "{due} in:\n{stderr}");
    }
    assert!(stderr.contains("syncing now"), "{stderr}");

    // A mirror with a finished sync waits for its schedule, unless told otherwise.
    // The daemon decides right after it logs "daemon started" and before it waits
    // for a signal: stopped once that line is out, it has decided, and a stop it
    // took while waiting ("stop requested") with no "syncing now" before it is a
    // start without a sync, however slowly the machine got there.
    let mut child = daemon(&sb, &db, &out, sync_cron, report_cron);
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let log = log.clone();
        let mut pipe = child.stderr.take().expect("stderr is piped");
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                log.lock()
                    .expect("log")
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
    };
    wait_until("the daemon's start", Duration::from_secs(30), || {
        log.lock().expect("log").contains("daemon started")
    })
    .await;
    let (code, _) = common::signal_and_wait(&mut child, "-TERM").await;
    reader.join().expect("stderr reader");
    let stderr = log.lock().expect("log").clone();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("stop requested"), "{stderr}");
    assert!(
        !stderr.contains("syncing now"),
        "no sync at start:\n{stderr}"
    );
    assert_eq!(runs(&db, "succeeded"), 1, "no sync at start:\n{stderr}");
    let child = daemon_with(&sb, &db, &out, sync_cron, report_cron, &["--sync-now"]);
    wait_until("a sync asked for", Duration::from_secs(30), || {
        runs(&db, "succeeded") >= 2
    })
    .await;
    let (code, _, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_ticks_missed_during_a_long_sync_run_the_report_once_and_the_log_says_so() {
    // Every answer takes 0.7 s: a sync of seconds, over which a report due every
    // second falls due again and again.
    let faults: FaultSpec = "latency=700".parse().expect("fault spec");
    let sb = common::start(Profile::Tiny, faults, None).await;
    let (dir, db) = common::scratch();
    let started = Instant::now();
    orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("a mirror to report on");
    let sync_took = started.elapsed();
    let out = dir.path().join("r");
    let child = daemon_with(
        &sb,
        &db,
        &out,
        "0 0 0 1 1 *",
        "* * * * * *",
        &["--sync-now"],
    );
    wait_until("the sync at start", Duration::from_secs(60), || {
        runs(&db, "succeeded") >= 2
    })
    .await;
    // The report that waited runs, and the ticks after the sync run it once each.
    const AFTER: u64 = 3;
    tokio::time::sleep(Duration::from_secs(AFTER)).await;
    let (code, _, stderr) = terminate(child).await;
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let written = stderr.matches("reports written").count();
    let folded: u64 = stderr
        .lines()
        .filter(|l| l.contains("report job runs once for"))
        .filter_map(|l| {
            l.split("skipped=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    // Ticks piled up would each have run the report as soon as the sync ended:
    // about one per second of the sync, within the seconds after it.
    let piled = sync_took.as_secs();
    assert!(
        piled >= AFTER + 3,
        "the sync ({sync_took:?}) must outlast the ticks after it for the test to tell"
    );
    assert!(
        written >= 1 && written as u64 <= AFTER + 2,
        "{written} report runs in the {AFTER} s after a sync of {sync_took:?}:\n{stderr}"
    );
    assert!(
        folded + 1 >= piled.saturating_sub(2),
        "the log says {folded} ticks were skipped over a sync of {sync_took:?}:\n{stderr}"
    );
}
