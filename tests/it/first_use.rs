//! What a new user meets in the first hour, through the
//! real binary against the sandbox on port 0 with a real SQLite file: `--db` on
//! something that is not a mirror, `query` trying to write, a sync with an API key
//! only, Ctrl-C during a sync, logs in a pipe, exit codes and error lines.

use crate::common;
use orgledger::sandbox::{FaultSpec, Profile, SandboxHandle};
use orgledger::sync;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary with a clean environment: no credentials, no URL, no config.
fn orgledger(db: &Path) -> Command {
    common::orgledger(db)
}

/// The binary connected to the sandbox with its JWT.
fn with_jwt(sb: &SandboxHandle, db: &Path) -> Command {
    let mut cmd = orgledger(db);
    cmd.env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt);
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("orgledger runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

/// Statuses of the mirror's runs, newest first, as `status --format json` shows them.
fn run_statuses(db: &Path) -> Vec<String> {
    let out = run(orgledger(db).args(["status", "--format", "json"]));
    assert!(out.status.success(), "status: {}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    json["last_runs"]
        .as_array()
        .expect("last_runs")
        .iter()
        .map(|r| r["status"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn synced_mirror(sb: &SandboxHandle, db: &Path) {
    let outcome = sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_or_a_foreign_file_as_db_is_refused_and_keeps_its_mode() {
    let sb = common::sandbox(Profile::Tiny).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("shared");
    std::fs::create_dir(&folder).expect("mkdir");
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "shopping list\n").expect("write");
    std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let wl = sb.info.whitelabel_organization_id.to_string();

    for (path, what) in [
        (&folder, "(a directory)"),
        (&notes, "(not an SQLite database)"),
    ] {
        for args in [
            vec!["status"],
            vec!["query", "SELECT 1"],
            vec!["sync", "--no-progress", "--whitelabel-org", &wl],
        ] {
            let out = run(with_jwt(&sb, path).args(&args));
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{args:?} on {}: {err}",
                path.display()
            );
            assert!(err.contains(what), "{args:?}: {err}");
            assert!(err.contains("not an orgledger mirror"), "{args:?}: {err}");
            assert!(err.contains("left untouched"), "{args:?}: {err}");
            let shown = path.display().to_string();
            assert_eq!(err.matches(&shown).count(), 1, "the path once: {err}");
            assert!(!err.contains("unable to open"), "{args:?}: {err}");
        }
        assert!(
            !Path::new(&format!("{}.lock", path.display())).exists(),
            "no lock file next to {}",
            path.display()
        );
    }
    assert_eq!(mode(&folder), 0o755, "the directory keeps its mode");
    assert_eq!(mode(&notes), 0o644, "the file keeps its mode");
    assert_eq!(
        std::fs::read_to_string(&notes).expect("read"),
        "shopping list\n"
    );
    assert_eq!(std::fs::read_dir(&folder).expect("ls").count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_refuses_vacuum_attach_and_state_pragmas_and_creates_no_file() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    synced_mirror(&sb, &db).await;
    let copy = dir.path().join("copy.db");
    let attached = dir.path().join("attached.db");
    for (sql, refused) in [
        (
            format!("VACUUM INTO '{}'", copy.display()),
            "changes the database file",
        ),
        (
            format!("ATTACH '{}' AS other", attached.display()),
            "ATTACH",
        ),
        (
            "PRAGMA journal_mode=DELETE".to_string(),
            "PRAGMA journal_mode = DELETE",
        ),
        ("SELECT load_extension('x')".to_string(), "load_extension()"),
        (
            "DELETE FROM organizations".to_string(),
            "DELETE from organizations",
        ),
    ] {
        let out = run(orgledger(&db).args(["query", &sql]));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{sql} must fail: {err}");
        assert!(err.contains("`query` is read-only"), "{sql}: {err}");
        assert!(err.contains(refused), "{sql} names what was refused: {err}");
        assert!(!err.contains("disk I/O"), "{sql}: {err}");
    }
    assert!(!copy.exists(), "VACUUM INTO wrote a copy");
    assert!(!attached.exists(), "ATTACH created a file");
    let conn = common::open(&db);
    let journal: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal mode");
    assert_eq!(journal, "wal");
    let orgs = common::count(&conn, "SELECT COUNT(*) FROM organizations");

    let out = run(orgledger(&db).args([
        "query",
        "SELECT COUNT(*) AS n FROM organizations",
        "--format",
        "csv",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("n\n{orgs}\n"));
    let out = run(orgledger(&db).args(["query", "PRAGMA table_info(organizations)"]));
    assert!(
        out.status.success(),
        "a reporting PRAGMA works: {}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_sync_succeeds_and_marks_a_removed_project() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let wl = sb.info.whitelabel_organization_id.to_string();
    let key_sync = |db: &Path| {
        run(orgledger(db)
            .env("ORGLEDGER_BASE_URL", &sb.info.url)
            .env("ORGLEDGER_API_KEY", &sb.info.org_api_key)
            .args(["sync", "--no-progress", "--whitelabel-org", &wl]))
    };
    let first = key_sync(&db);
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("no JWT: the user's own projects and organizations are not synced")
            .count(),
        1,
        "said once: {err}"
    );
    assert!(String::from_utf8_lossy(&first.stdout).contains("run 1 succeeded:"));
    let conn = common::open(&db);
    assert_eq!(common::count(&conn, "SELECT COUNT(*) FROM sync_errors"), 0);
    let project: i64 = conn
        .query_row(
            "SELECT id FROM projects WHERE removed_at IS NULL ORDER BY id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("the key's organization has projects");

    // Building a client installs the TLS provider that `admin_post` needs.
    drop(common::admin(&sb));
    let removal = format!("/sandbox/remove-project?id={project}");
    assert_eq!(common::admin_post(&sb, &removal).await, 200);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    let second = key_sync(&db);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(run_statuses(&db), ["succeeded", "succeeded"]);
    let removed_run: Option<i64> = conn
        .query_row(
            "SELECT removed_run FROM projects WHERE id = ?1",
            [project],
            |r| r.get(0),
        )
        .expect("still in the mirror");
    assert_eq!(
        removed_run,
        Some(2),
        "the removed project is marked removed"
    );
}

/// Starts a sync against a sandbox whose every answer is slow, waits until its run
/// is `running`, sends `signal`, and returns (exit code, seconds to exit, stderr).
async fn interrupted_sync(signal: &str) -> (Option<i32>, f64, String, std::path::PathBuf) {
    let faults: FaultSpec = "slow=1".parse().expect("fault spec");
    let sb = common::start(Profile::Tiny, faults, None).await;
    let (dir, db) = common::scratch();
    let mut child = with_jwt(&sb, &db)
        .args(["sync", "--no-progress", "--timeout", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sync starts");
    let started = Instant::now();
    loop {
        // Opening a missing file would create it: wait for the sync to do that.
        let running = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM sync_runs WHERE status = 'running' AND observed_at IS NOT NULL",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            })
            .unwrap_or(0);
        if running == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no running sync"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Mid-crawl: discovery is done, the slow follow-ups are in flight.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (code, took) = common::signal_and_wait(&mut child, signal).await;
    let secs = took.as_secs_f64();
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut err);
    }
    // The folder must outlive the child's files; hand the mirror path back.
    let kept = dir.keep();
    (code, secs, err, kept.join("mirror.db"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_mid_sync_exits_130_and_the_run_is_aborted() {
    let (code, secs, err, db) = interrupted_sync("-INT").await;
    assert_eq!(code, Some(130), "stderr:\n{err}");
    assert!(secs < 10.0, "exited within 10 s ({secs:.1})");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("SIGINT") && l.contains("marked aborted"))
            .count(),
        1,
        "one line says so:\n{err}"
    );
    assert_eq!(run_statuses(&db), ["aborted"]);
    let stored = common::count(&common::open(&db), "SELECT COUNT(*) FROM organizations");
    assert!(stored > 0, "what arrived before the signal is stored");
    let _ = std::fs::remove_dir_all(db.parent().expect("folder"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_sync_exits_143_and_the_run_is_aborted() {
    let (code, secs, err, db) = interrupted_sync("-TERM").await;
    assert_eq!(code, Some(143), "stderr:\n{err}");
    assert!(secs < 10.0, "exited within 10 s ({secs:.1})");
    assert_eq!(run_statuses(&db), ["aborted"]);
    let _ = std::fs::remove_dir_all(db.parent().expect("folder"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_run_whose_process_died_as_aborted() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    synced_mirror(&sb, &db).await;
    common::open(&db)
        .execute(
            "INSERT INTO sync_runs (started_at, status) VALUES ('2026-06-01T00:00:00.000Z', 'running')",
            [],
        )
        .expect("a run left running by a killed process");
    assert_eq!(run_statuses(&db), ["aborted", "succeeded"]);

    // While a process holds the sync lock, its run is shown as running.
    common::open(&db)
        .execute(
            "INSERT INTO sync_runs (started_at, status) VALUES ('2026-06-01T00:00:00.000Z', 'running')",
            [],
        )
        .expect("a live run");
    let held = orgledger::mirror::lock::acquire(&db).expect("lock");
    assert_eq!(run_statuses(&db), ["running", "aborted", "succeeded"]);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_in_a_pipe_have_no_colour_codes() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let out = run(with_jwt(&sb, &db).args(["-v", "sync", "--no-progress"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("INFO"), "there are log lines");
    assert!(!out.stderr.contains(&0x1b), "an ESC byte in piped logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_settings_are_usage_errors() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let no_credentials = run(orgledger(&db)
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .args(["sync", "--no-progress"]));
    assert_eq!(no_credentials.status.code(), Some(2));
    assert!(stderr(&no_credentials).contains("no credentials"));

    let no_url = run(orgledger(&db)
        .env("ORGLEDGER_JWT", &sb.info.jwt)
        .args(["sync", "--no-progress"]));
    assert_eq!(no_url.status.code(), Some(2));
    assert!(stderr(&no_url).contains("no service URL"));

    let bare = sb.info.url.trim_start_matches("http://").to_string();
    let no_scheme = run(orgledger(&db).env("ORGLEDGER_JWT", &sb.info.jwt).args([
        "sync",
        "--no-progress",
        "--base-url",
        &bare,
    ]));
    let err = stderr(&no_scheme);
    assert_eq!(no_scheme.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("http://{bare}")),
        "says how to write it: {err}"
    );
    assert!(!db.exists(), "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_error_lines_name_the_operation_once_and_the_full_url() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    assert_eq!(
        common::admin_post(&sb, "/sandbox/fail?path=/v1/api/organizations&status=404").await,
        200
    );
    let out = run(with_jwt(&sb, &db).args(["sync", "--no-progress"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "discovery failed: {err}");
    let url = format!("{}/v1/api/organizations", sb.info.url);
    let line = err
        .lines()
        .find(|l| l.contains("failed:"))
        .unwrap_or_else(|| panic!("a failure line: {err}"));
    assert_eq!(line.matches("list-organizations").count(), 1, "{line}");
    assert!(line.contains(&url), "the full URL: {line}");
    assert!(line.contains("HTTP 404"), "{line}");
    for l in err.lines() {
        assert!(
            l.matches("list-organizations").count() <= 1,
            "repeated: {l}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_sync_reports_no_unchanged_rows_and_status_names_both_clocks() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let out = run(with_jwt(&sb, &db).args([
        "sync",
        "--no-progress",
        "--whitelabel-org",
        &sb.info.whitelabel_organization_id.to_string(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(summary.contains(" / 0 unchanged / "), "{summary}");
    let conn = common::open(&db);
    assert_eq!(
        common::count(&conn, "SELECT rows_unchanged FROM sync_runs WHERE id = 1"),
        0
    );
    let status = run(orgledger(&db).args(["status"]));
    let table = String::from_utf8_lossy(&status.stdout).into_owned();
    let header = table
        .lines()
        .find(|l| l.starts_with("id "))
        .unwrap_or_else(|| panic!("a runs table: {table}"));
    let observed = header.find("observed_at").expect("observed_at column");
    let started = header.find("started_at").expect("started_at column");
    assert!(observed < started, "the data's time comes first: {header}");
    assert!(
        table.contains("observed_at and last_change: the service's clock"),
        "{table}"
    );
    let row = table.lines().find(|l| l.starts_with("1 ")).expect("run 1");
    assert_eq!(
        &row[observed..observed + 11],
        "2026-06-01T",
        "observed_at is the sandbox's clock: {row}"
    );
}
