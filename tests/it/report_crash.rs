//! A report killed with `kill -9` at any moment leaves nothing of its data in the
//! temporary folder: a table it keeps on disk for its later steps is an anonymous
//! file, which no name points at from the moment it exists; files on their way to
//! an object store wait beside the mirror, where the next run clears them.

use crate::common;
use orgledger::mirror::runs::RunStatus;
use orgledger::sync;
use orgledger_sandbox::{Profile, SandboxHandle};
use std::path::Path;
use std::time::{Duration, Instant};

/// The files in `dir`, none when it does not exist (yet).
fn left_in_or_none(dir: &Path) -> Vec<String> {
    match dir.is_dir() {
        true => left_in(dir),
        false => Vec::new(),
    }
}

/// The files left in `dir`.
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("the temporary folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A mirror of the small world after one sync, and a temporary folder of the
/// test's own for the reports' TMPDIR.
async fn synced() -> (
    SandboxHandle,
    tempfile::TempDir,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    let run = sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("a sync runs");
    assert_eq!(run.status, RunStatus::Succeeded, "{:?}", run.errors);
    let tmp = tempfile::tempdir().expect("a temporary folder of the test's own");
    (sb, dir, db, tmp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_killed_at_any_moment_leaves_no_file_in_the_temporary_folder() {
    let (_sb, dir, db, tmp) = synced().await;
    let as_of = common::start_date().to_string();
    // Every table the later steps read back waits on disk.
    let report = |out: &str| {
        let mut cmd = common::orgledger(&db);
        cmd.args([
            "-v", "-v", "report", "--as-of", &as_of, "--format", "csv,json",
        ])
        .arg("--out")
        .arg(dir.path().join(out))
        .env("TMPDIR", tmp.path())
        .env("ORGLEDGER_MEMORY_PER_TABLE", "0");
        cmd
    };

    let started = Instant::now();
    let whole = report("whole").output().expect("a report runs");
    let took = started.elapsed();
    let log = String::from_utf8_lossy(&whole.stderr);
    assert!(whole.status.success(), "{log}");
    assert!(
        log.contains("kept on disk"),
        "the run keeps its tables on disk:\n{log}"
    );
    assert_eq!(
        left_in(tmp.path()),
        Vec::<String>::new(),
        "after a whole run"
    );

    for (k, share) in [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95]
        .into_iter()
        .enumerate()
    {
        let mut child = report(&format!("killed-{k}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("a report starts");
        std::thread::sleep(took.mul_f64(share).max(Duration::from_millis(5)));
        child.kill().expect("kill -9");
        child.wait().expect("the killed report is reaped");
        assert_eq!(
            left_in(tmp.path()),
            Vec::<String>::new(),
            "after a kill {:.0} % into the run",
            share * 100.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_killed_on_their_way_to_a_store_leave_nothing_past_the_next_run() {
    let (_sb, dir, db, tmp) = synced().await;
    let store = format!("file://{}", dir.path().join("store").display());
    let as_of = common::start_date().to_string();
    let report = || {
        let mut cmd = common::orgledger(&db);
        cmd.args([
            "report",
            "--as-of",
            &as_of,
            "--format",
            "csv,json,xlsx",
            "--out",
            &store,
        ])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        cmd
    };
    let started = Instant::now();
    assert!(report().status().expect("a report runs").success());
    let took = started.elapsed();
    let staging = orgledger::output::staging::root(&db);
    // The last kill comes right after its folder exists, so it always leaves one
    // (an earlier run may finish before its kill, and each run clears dead ones).
    for share in [0.5, 0.2, 0.0] {
        let mut child = report().spawn().expect("a report starts");
        // Killed once its staging folder exists, at points of the rest of its run.
        let own = format!("{}-", child.id());
        let waited = Instant::now();
        while !left_in_or_none(&staging)
            .iter()
            .any(|n| n.starts_with(&own))
        {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "no staging folder"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(took.mul_f64(share));
        child.kill().expect("kill -9");
        child.wait().expect("the killed report is reaped");
        assert_eq!(
            left_in(tmp.path()),
            Vec::<String>::new(),
            "nothing in TMPDIR"
        );
    }
    assert!(
        !left_in(&staging).is_empty(),
        "a killed run leaves its staging folder beside the mirror"
    );
    // The next run removes what the killed ones left beside the mirror, and its own.
    assert!(report().status().expect("a report runs").success());
    assert_eq!(
        left_in(&staging),
        Vec::<String>::new(),
        "nothing staged is left"
    );
}
