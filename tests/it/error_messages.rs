//! Error lines a user meets, through the real binary: each says its cause once (no
//! "X: X" where a wrapper repeats what it wraps) and names what to do.

use std::path::Path;
use std::process::Command;

/// The binary with a clean environment: no credentials, URL or config from outside.
fn orgledger(db: &Path) -> Command {
    let mut cmd = crate::common::bin();
    cmd.args(["--db", db.to_str().expect("utf-8 path")]);
    cmd
}

/// Runs a command that must fail and returns its `error:` line.
fn error_line(cmd: &mut Command) -> String {
    let out = cmd.output().expect("orgledger runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a failure: {stderr}");
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in: {stderr}"))
        .to_string()
}

/// No two ": "-separated segments are equal, and no long segment occurs twice in
/// the line (as when a wrapper prints its source inside a longer segment).
fn assert_says_its_cause_once(line: &str) {
    let segments: Vec<&str> = line.split(": ").map(str::trim).collect();
    for (i, a) in segments.iter().enumerate() {
        for b in &segments[i + 1..] {
            assert_ne!(a, b, "segment {a:?} repeats in: {line}");
        }
        if a.len() >= 12 {
            assert_eq!(line.matches(a).count(), 1, "{a:?} repeats in: {line}");
        }
    }
}

fn assert_good(line: &str, hint: &str) {
    assert_says_its_cause_once(line);
    assert!(line.contains(hint), "no hint {hint:?} in: {line}");
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn a_mirror_path_under_a_file_says_to_give_a_path_in_a_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "not a folder\n").expect("write");
    let url = format!("http://127.0.0.1:{}", closed_port());
    let line = error_line(
        orgledger(&file.join("mirror.db"))
            .args(["sync", "--no-progress", "--base-url", &url])
            .env("ORGLEDGER_JWT", "a.b.c"),
    );
    assert_good(&line, "give a path inside a folder");
    assert_eq!(line.matches("Not a directory").count(), 1, "{line}");
}

#[test]
fn a_report_folder_that_cannot_be_written_names_the_folder_and_its_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("mirror.db");
    orgledger::mirror::open_rw(&db).expect("new mirror");
    // A finished sync today, so the report gets as far as its output folder.
    let now = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    rusqlite::Connection::open(&db)
        .expect("open")
        .execute(
            "INSERT INTO sync_runs (started_at, observed_at, finished_at, status) \
             VALUES (?1, ?1, ?1, 'succeeded')",
            [&now],
        )
        .expect("a finished run");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "not a folder\n").expect("write");
    let out = file.join("reports");
    let line = error_line(orgledger(&db).args(["report", "--out", out.to_str().expect("utf-8")]));
    assert_good(&line, "give a path inside a folder");
    assert!(line.contains(out.to_str().expect("utf-8")), "{line}");

    // Only where the OS enforces permissions for this user (root writes anyway).
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).expect("mkdir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    if std::fs::write(locked.join("probe"), "").is_err() {
        let line = error_line(orgledger(&db).args([
            "report",
            "--out",
            locked.join("reports").to_str().expect("utf-8"),
        ]));
        assert_good(&line, "check the folder's permissions");
    }
}

#[test]
fn a_config_file_with_a_syntax_error_or_an_unknown_key_says_where_and_to_fix_it_and_a_missing_one_is_a_usage_error()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("mirror.db");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "db = \"m.db\"\nbase_url = \"http://x\n").expect("write");
    let line =
        error_line(orgledger(&db).args(["--config", broken.to_str().expect("utf-8"), "status"]));
    assert_good(&line, "line 2, column");
    assert_good(
        &line,
        "fix it (docs/orgledger.example.toml shows every key)",
    );

    let typo = dir.path().join("typo.toml");
    std::fs::write(&typo, "bse_url = \"http://x\"\n").expect("write");
    let line =
        error_line(orgledger(&db).args(["--config", typo.to_str().expect("utf-8"), "status"]));
    assert_good(&line, "unknown field `bse_url`");
    assert!(line.contains("fix it"), "{line}");

    let missing = dir.path().join("missing.toml");
    let mut cmd = orgledger(&db);
    cmd.args(["--config", missing.to_str().expect("utf-8"), "status"]);
    let line = error_line(&mut cmd);
    assert_good(&line, "check the --config path");
    // A --config path that names no file is the command line's mistake (exit 2); a
    // file that is there but wrong is not.
    assert_eq!(cmd.output().expect("runs").status.code(), Some(2), "{line}");
    let mut typo_cmd = orgledger(&db);
    typo_cmd.args(["--config", typo.to_str().expect("utf-8"), "status"]);
    assert_eq!(typo_cmd.output().expect("runs").status.code(), Some(1));
}

#[test]
fn an_unreachable_service_says_to_check_the_url_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://127.0.0.1:{}", closed_port());
    let line = error_line(
        orgledger(&dir.path().join("mirror.db"))
            .args(["api", "--base-url", &url, "list-organizations"])
            .env("ORGLEDGER_JWT", "a.b.c"),
    );
    assert_good(&line, "check the URL and that the service is up");
    assert!(
        line.contains(&format!("{url}/v1/api/organizations")),
        "{line}"
    );
    assert_eq!(line.matches("refused").count(), 1, "{line}");
}

#[test]
fn a_bad_as_of_says_how_to_write_a_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("mirror.db");
    for bad in ["2026-02-30", "yesterday"] {
        let line = error_line(orgledger(&db).args(["report", "--as-of", bad]));
        assert_good(&line, "give it as YYYY-MM-DD, such as 2026-01-31");
        let line = error_line(orgledger(&db).args(["query", "--as-of", bad, "SELECT 1"]));
        assert_good(&line, "give it as YYYY-MM-DD");
    }
}
