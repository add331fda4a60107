//! `backup`, `restore` and `check` through the binary, on mirrors synced from the
//! sandbox: a backup taken while a sync writes is a sound mirror equal to the source
//! at its moment, a restored backup gives the same reports, and `check` names a
//! hand-corrupted history row and a wrong content hash.

use crate::{common, digest};
use orgledger::mirror::schema;
use orgledger::sandbox::Profile;
use orgledger::sync;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn backup(db: &Path, out: &Path) -> Output {
    common::orgledger(db)
        .args(["backup", "--out"])
        .arg(out)
        .output()
        .expect("backup runs")
}

fn check(db: &Path) -> Output {
    common::orgledger(db)
        .arg("check")
        .output()
        .expect("check runs")
}

async fn synced(profile: Profile, db: &Path) -> orgledger::sandbox::SandboxHandle {
    let sb = common::sandbox(profile).await;
    let outcome = sync::run(&common::admin(&sb), &common::sync_opts(&sb, db), None)
        .await
        .expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    sb
}

/// The day of the mirror's last run, on the service's clock.
fn last_day(db: &Path) -> String {
    common::open(db)
        .query_row(
            "SELECT substr(MAX(observed_at), 1, 10) FROM sync_runs",
            [],
            |r| r.get(0),
        )
        .expect("a run")
}

/// A copy is intact, private, of this build's schema, and its only finding (when
/// taken mid-sync) is the run that was still running in the copied moment.
fn assert_sound_copy(copy: &Path) {
    let mode = std::fs::metadata(copy).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", copy.display());
    let conn = common::open(copy);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    assert_eq!(integrity, "ok");
    assert_eq!(
        schema::version(&conn).expect("version"),
        schema::CURRENT_VERSION
    );
    drop(conn);
    let out = check(copy);
    let findings: Vec<String> = stdout(&out)
        .lines()
        .filter(|l| !l.contains(": sound ("))
        .map(str::to_string)
        .collect();
    assert!(
        findings
            .iter()
            .all(|l| l.starts_with("sync_runs: run ") && l.contains("is `running`")),
        "{}: {findings:?}",
        copy.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_a_medium_sync_writes_is_sound_and_equal_to_its_moment() {
    let (dir, db) = common::scratch();
    let sb = common::sandbox(Profile::Medium).await;
    let (client, opts) = (common::admin(&sb), common::sync_opts(&sb, &db));
    let syncing = tokio::spawn(async move { sync::run(&client, &opts, None).await });
    // Wait for the first transaction: a mirror with a run in it.
    while common::count_or_zero(&db, "SELECT COUNT(*) FROM daily_metrics") == 0 {
        assert!(!syncing.is_finished(), "the sync ended before it wrote");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut mid_sync = 0;
    for i in 0..3 {
        let copy = dir.path().join(format!("mid-{i}.db"));
        let out = tokio::task::block_in_place(|| backup(&db, &copy));
        assert!(out.status.success(), "backup {i}: {}", stderr(&out));
        assert!(stdout(&out).contains("verified copy"), "{}", stdout(&out));
        assert_sound_copy(&copy);
        let running = common::count(
            &common::open(&copy),
            "SELECT COUNT(*) FROM sync_runs WHERE status = 'running'",
        );
        mid_sync += running;
        if syncing.is_finished() {
            break;
        }
    }
    assert!(mid_sync > 0, "at least one backup was taken mid-sync");
    let outcome = syncing.await.expect("task").expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);

    // After the sync, a backup holds exactly what the mirror holds.
    let last = dir.path().join("after.db");
    let out = backup(&db, &last);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        digest::current_state(&common::open(&last)).expect("digest"),
        digest::current_state(&common::open(&db)).expect("digest")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".partial-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let status = common::orgledger(&db)
        .args(["status", "--format", "json"])
        .output()
        .expect("status");
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let backup_row = &json["last_check_and_backup"][1];
    assert_eq!(backup_row["kind"], "backup");
    assert_eq!(backup_row["outcome"], "verified");
    assert_eq!(backup_row["detail"], last.display().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_backup_gives_the_same_reports_and_the_replaced_mirror_is_kept() {
    let (dir, db) = common::scratch();
    let _sb = synced(Profile::Small, &db).await;
    let day = last_day(&db);
    let copy = dir.path().join("copy.db");
    let out = backup(&db, &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = common::report_files(&db, &day);

    // Another mirror, replaced by the backup.
    let other = dir.path().join("other.db");
    drop(orgledger::mirror::open_rw(&other).expect("another mirror"));
    {
        let _lock = orgledger::mirror::lock::acquire(&other).expect("lock");
        let out = common::orgledger(&other)
            .arg("restore")
            .arg(&copy)
            .output()
            .expect("restore");
        assert_eq!(out.status.code(), Some(1), "refused while a sync runs");
        assert!(
            stderr(&out).contains("another sync is running"),
            "{}",
            stderr(&out)
        );
    }
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a mirror").expect("write");
    let out = common::orgledger(&other)
        .arg("restore")
        .arg(&text)
        .output()
        .expect("restore");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not an orgledger mirror"),
        "{}",
        stderr(&out)
    );

    let out = common::orgledger(&other)
        .arg("restore")
        .arg(&copy)
        .output()
        .expect("restore");
    assert!(out.status.success(), "{}", stderr(&out));
    let kept: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("other.db.replaced-"))
        .collect();
    assert!(!kept.is_empty(), "the replaced mirror is kept");
    assert_eq!(common::report_files(&other, &day), expected);
    assert!(check(&other).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_finds_a_hand_corrupted_history_row_and_a_wrong_content_hash() {
    let (_dir, db) = common::scratch();
    let _sb = synced(Profile::Tiny, &db).await;
    let out = check(&db);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains(": sound ("), "{}", stdout(&out));

    let conn = common::open(&db);
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM organizations ORDER BY id LIMIT 3")
        .expect("ids")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("ids");
    assert_eq!(ids.len(), 3, "the tiny world has three organizations");
    conn.execute(
        "UPDATE organizations SET name = name || ' (edited)' WHERE id = ?1",
        [ids[0]],
    )
    .expect("an edit outside orgledger");
    let cols: Vec<String> = orgledger::mirror::spec::ORGANIZATIONS
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let cols = cols.join(", ");
    let copy_as_history = |id: i64, from: &str, to: &str| {
        conn.execute(
            &format!(
                "INSERT INTO organizations_history ({cols}, content_hash, valid_from, run_id, valid_to) \
                 SELECT {cols}, content_hash, ?2, run_id, ?3 FROM organizations WHERE id = ?1"
            ),
            rusqlite::params![id, from, to],
        )
        .expect("a hand-made history row");
    };
    // Overlaps the current version, which started at the sync's time.
    copy_as_history(
        ids[1],
        "2000-01-01T00:00:00.000Z",
        "2999-01-01T00:00:00.000Z",
    );
    copy_as_history(
        ids[2],
        "2000-01-02T00:00:00.000Z",
        "2000-01-01T00:00:00.000Z",
    );
    drop(conn);

    let out = check(&db);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    let line = |id: i64, what: &str| {
        text.lines()
            .any(|l| l.starts_with(&format!("organizations (id={id}): ")) && l.contains(what))
    };
    assert!(line(ids[0], "content_hash does not match"), "{text}");
    assert!(line(ids[1], "overlaps"), "{text}");
    assert!(line(ids[2], "ends before it starts"), "{text}");
    assert_eq!(text.lines().count(), 3, "one line per finding: {text}");
    assert!(stderr(&out).contains("3 findings"), "{}", stderr(&out));

    let status = common::orgledger(&db)
        .args(["status", "--format", "json"])
        .output()
        .expect("status");
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(json["last_check_and_backup"][0]["kind"], "check");
    assert_eq!(json["last_check_and_backup"][0]["outcome"], "3 findings");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_backs_up_after_each_sync_and_keeps_the_newest() {
    use std::time::Duration;
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let backups = dir.path().join("backups");
    let config = dir.path().join("orgledger.toml");
    std::fs::write(
        &config,
        format!(
            "[backup]\ndir = {:?}\nafter_sync = true\nkeep = 2\n",
            backups.display().to_string()
        ),
    )
    .expect("config");
    let out = dir.path().join("reports");
    let config_arg = config.to_str().expect("utf-8 path");
    let mut child = crate::daemon::daemon_with(
        &sb,
        &db,
        &out,
        "*/2 * * * * *",
        "0 0 0 1 1 *",
        &["--config", config_arg],
    );
    let copies = || -> Vec<std::path::PathBuf> {
        let mut names: Vec<_> = std::fs::read_dir(&backups)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    crate::daemon::wait_until("three syncs", Duration::from_secs(60), || {
        crate::daemon::runs(&db, "succeeded") >= 3
    })
    .await;
    crate::daemon::wait_until("two backups", Duration::from_secs(20), || {
        copies().len() >= 2
    })
    .await;
    let (code, _) = common::signal_and_wait(&mut child, "-TERM").await;
    assert_eq!(code, Some(0));
    let kept = copies();
    assert_eq!(kept.len(), 2, "keep = 2: {kept:?}");
    for copy in &kept {
        let name = copy.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            name.starts_with("orgledger-") && name.ends_with(".db"),
            "{name}"
        );
        assert_sound_copy(copy);
    }
    let status = common::orgledger(&db)
        .args(["status", "--format", "json"])
        .output()
        .expect("status");
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(json["last_check_and_backup"][1]["outcome"], "verified");
}
