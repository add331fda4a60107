//! Readers while a sync writes. Every document is
//! applied whole inside one transaction and the mirror is in WAL mode, so a reader
//! sees the state between two transactions, never half of one; a report as of a past
//! day is the same whatever the sync is doing; nothing corrupts.

use crate::common;
use orgledger::api::Client;
use orgledger::api::client::{ClientConfig, Credentials};
use orgledger::api::pacing::Backoff;
use orgledger::api::secret::Secret;
use orgledger::mirror;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger::sync;
use orgledger_sandbox::{Profile, SandboxHandle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// A client paced to 250 requests per second, so a Small sync lasts long enough for
/// many reads to land inside it.
fn paced(sb: &SandboxHandle) -> Client {
    let creds = Credentials {
        api_key: None,
        jwt: Some(Secret::new(sb.info.jwt.clone())),
    };
    let mut cfg = ClientConfig::new(sb.info.url.clone(), creds);
    cfg.rps = Some(250.0);
    cfg.backoff = Backoff {
        base: Duration::from_millis(20),
        cap: Duration::from_millis(200),
        max_retries: 6,
    };
    Client::new(cfg).expect("client")
}

/// What one read transaction saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    organizations: i64,
    users: i64,
    projects: i64,
}

/// Counts that only agree between transactions: a document's raw body and its rows
/// are written in the same transaction, members with their organization, metrics and
/// trials with their user. Read in one transaction (one snapshot).
fn check(db: &Path) -> Result<Seen, String> {
    let mut conn = mirror::open_ro(db).map_err(|e| e.to_string())?;
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    let one = |sql: &str| -> Result<i64, String> {
        tx.query_row(sql, [], |r| r.get(0))
            .map_err(|e| format!("{sql}: {e}"))
    };
    let orphans = [
        "SELECT COUNT(*) FROM organization_members m WHERE NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = m.organization_id)",
        "SELECT COUNT(*) FROM daily_metrics d WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = d.user_id)",
        "SELECT COUNT(*) FROM trials t WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id)",
        "SELECT COUNT(*) FROM devices d WHERE NOT EXISTS (SELECT 1 FROM project_info p WHERE p.project_id = d.project_id)",
    ];
    for sql in orphans {
        let n = one(sql)?;
        if n != 0 {
            return Err(format!("{n} orphans: {sql}"));
        }
    }
    let pairs = [
        ("organizations", "get-organization"),
        ("users", "get-whitelabel-user"),
        ("project_info", "get-project-info"),
    ];
    let mut counts = [0; 3];
    for (i, (table, operation)) in pairs.iter().enumerate() {
        let rows = one(&format!("SELECT COUNT(*) FROM {table}"))?;
        let docs = one(&format!(
            "SELECT COUNT(*) FROM raw_documents WHERE operation = '{operation}'"
        ))?;
        if rows != docs {
            return Err(format!(
                "{table}: {rows} rows but {docs} {operation} documents"
            ));
        }
        counts[i] = rows;
    }
    Ok(Seen {
        organizations: counts[0],
        users: counts[1],
        projects: counts[2],
    })
}

/// Checks the invariant in a loop until `stop`; returns what it saw.
fn reader(db: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Seen>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            match check(&db) {
                Ok(s) => seen.push(s),
                // Until the sync has created the file and its schema there is
                // nothing to read; after that, every read must succeed.
                Err(_) if seen.is_empty() => {}
                Err(e) => panic!("inconsistent read while a sync writes: {e}"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        seen
    })
}

/// CSV reports of the mirror as of `day`: file name and SHA-256 of each.
fn csv_digests(db: &Path, out: &Path, day: chrono::NaiveDate) -> Vec<(String, String)> {
    let mut opts = ReportOptions::new(db, day);
    opts.formats = vec![Format::Csv];
    opts.out_root = out.to_path_buf();
    let outcome = render::run(&opts).expect("a report while a sync writes succeeds");
    outcome
        .files
        .iter()
        .map(|f| (f.report.clone(), f.sha256.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_and_reports_see_whole_transactions_while_a_sync_writes() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    let client = paced(&sb);
    let opts = common::sync_opts(&sb, &db);

    // 1. A first sync into an empty mirror, read all along.
    let stop = Arc::new(AtomicBool::new(false));
    let watching = reader(db.clone(), stop.clone());
    let first = sync::run(&client, &opts, None).await.expect("first sync");
    stop.store(true, Ordering::SeqCst);
    let seen = watching.join().expect("reader thread");
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let last = check(&db).expect("consistent at the end");
    let midway = seen
        .iter()
        .filter(|s| s.organizations + s.users + s.projects > 0 && **s != last)
        .count();
    assert!(
        midway >= 5,
        "the reader saw {midway} states in the middle of the sync ({} reads)",
        seen.len()
    );
    assert!(
        seen.windows(2)
            .all(|w| w[0].organizations <= w[1].organizations
                && w[0].users <= w[1].users
                && w[0].projects <= w[1].projects),
        "a first sync only adds"
    );

    // 2. The next day's sync, with reports as of the first day built all along:
    // history as of a past day does not move while new versions are written.
    let day1 = common::start_date();
    let baseline = csv_digests(&db, &dir.path().join("baseline"), day1);
    assert!(!baseline.is_empty());
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    let running = Arc::new(AtomicBool::new(true));
    let reports = {
        let (db, out, running) = (db.clone(), dir.path().join("during"), running.clone());
        let baseline = baseline.clone();
        std::thread::spawn(move || {
            let mut during = 0;
            while running.load(Ordering::SeqCst) {
                let digests = csv_digests(&db, &out, day1);
                assert_eq!(digests, baseline, "a report as of a past day moved");
                if running.load(Ordering::SeqCst) {
                    during += 1;
                }
            }
            during
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watching = reader(db.clone(), stop.clone());
    let second = sync::run(&client, &opts, None).await.expect("second sync");
    running.store(false, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    let during = reports.join().expect("report thread");
    let seen = watching.join().expect("reader thread");
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);
    assert!(
        second.totals.rows.updated + second.totals.rows.inserted > 0,
        "the second sync wrote"
    );
    assert!(during >= 1, "no report was built while the sync wrote");
    assert!(
        seen.len() >= 5,
        "only {} reads during the second sync",
        seen.len()
    );

    let conn = common::open(&db);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity check");
    assert_eq!(integrity, "ok");
    check(&db).expect("consistent at the end");
    assert_eq!(
        csv_digests(&db, &dir.path().join("after"), day1),
        baseline,
        "and after it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_writing_the_mirror_mid_sync_makes_the_sync_wait_not_fail() {
    let sb = common::sandbox(Profile::Small).await;
    let (_dir, db) = common::scratch();
    let client = paced(&sb);
    let opts = common::sync_opts(&sb, &db);
    let first = sync::run(&client, &opts, None).await.expect("first sync");
    assert_eq!(first.status, RunStatus::Succeeded);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    // What `check`, `backup` or `alerts` do from another process: small writes in
    // transactions of their own, all through the sync.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut conn = rusqlite::Connection::open(&db).expect("open");
            conn.busy_timeout(Duration::from_secs(10)).expect("timeout");
            let mut writes = 0;
            while !stop.load(Ordering::SeqCst) {
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .expect("write lock");
                tx.execute(
                    "INSERT INTO maintenance_runs (kind, at, outcome) VALUES ('check', '2026-06-02T00:00:00Z', 'ok')",
                    [],
                )
                .expect("insert");
                tx.commit().expect("commit");
                writes += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            writes
        })
    };
    let second = sync::run(&client, &opts, None).await.expect("second sync");
    stop.store(true, Ordering::SeqCst);
    let writes = writer.join().expect("writer thread");
    assert_eq!(second.status, RunStatus::Succeeded, "{:?}", second.errors);
    assert!(writes >= 2, "only {writes} writes during the sync");
}

/// `orgledger check` over and over until `stop`, counting the finished runs in
/// `runs`: every outcome that was not "sound", with what it said.
fn check_loop(
    db: PathBuf,
    stop: Arc<AtomicBool>,
    runs: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut failed = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let (code, out, err) = common::outputs(common::orgledger(&db).arg("check"));
            runs.fetch_add(1, Ordering::SeqCst);
            if code != Some(0) || !out.contains("sound") {
                failed.push(format!("exit {code:?}\n{out}{err}"));
            }
        }
        failed
    })
}

/// Syncs a day further at least `min` times, and on until `runs` has reached
/// `min` as well (at most `most` syncs): on a loaded machine a check takes longer
/// than a sync of the small world, and the checks must have run beside the syncs.
async fn sync_days_beside(
    sb: &SandboxHandle,
    sync: impl Fn(&SandboxHandle) -> (Option<i32>, String, String),
    runs: &AtomicUsize,
    (min, most): (usize, usize),
) -> Vec<(Option<i32>, String, String)> {
    let mut syncs = Vec::new();
    for day in 0..most {
        if day >= min && runs.load(Ordering::SeqCst) >= min {
            break;
        }
        assert_eq!(
            common::admin_post(sb, "/sandbox/advance?days=1").await,
            200,
            "day {day}"
        );
        syncs.push(sync(sb));
    }
    syncs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_in_a_loop_during_syncs_backups_exports_and_reports_finds_nothing_and_refuses_no_sync()
 {
    let faults: orgledger_sandbox::FaultSpec = "latency=5".parse().expect("spec");
    let sb = common::start(Profile::Small, faults, None).await;
    let (dir, db) = common::scratch();
    let sync = |sb: &SandboxHandle| common::outputs(&mut common::sync_command(sb, &db));
    let (code, _, err) = sync(&sb);
    assert_eq!(code, Some(0), "first sync: {err}");
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let checks = check_loop(db.clone(), stop.clone(), runs.clone());
    // The other readers, from processes of their own, beside the first of the syncs.
    let readers = {
        let (db, out) = (db.clone(), dir.path().to_path_buf());
        std::thread::spawn(move || {
            let commands: [&[&str]; 3] = [
                &["backup", "--out"],
                &["export", "--out"],
                &["report", "--format", "csv,json", "--out"],
            ];
            commands
                .iter()
                .enumerate()
                .map(|(i, args)| {
                    let mut cmd = common::orgledger(&db);
                    cmd.args(*args).arg(out.join(format!("out-{i}")));
                    let (code, _, err) = common::outputs(&mut cmd);
                    (args[0], code, err)
                })
                .collect::<Vec<_>>()
        })
    };
    let syncs = sync_days_beside(&sb, sync, &runs, (3, 20)).await;
    let readers = readers.join().expect("readers");
    stop.store(true, Ordering::SeqCst);
    let failed = checks.join().expect("check loop");
    let runs = runs.load(Ordering::SeqCst);
    for (i, (code, _, err)) in syncs.iter().enumerate() {
        assert_eq!(*code, Some(0), "sync {i} refused or failed: {err}");
    }
    for (what, code, err) in readers {
        assert_eq!(code, Some(0), "{what}: {err}");
    }
    assert!(
        failed.is_empty(),
        "{} of {runs} checks: {failed:#?}",
        failed.len()
    );
    assert!(runs >= 3, "only {runs} checks ran during the syncs");
}
