//! The by-hand tour (docs/operations.md), through the binary: the sandbox removes the
//! env file it wrote when it is stopped, and `status` after a first sync that failed
//! shows empty tables as zeros and each error whole, its cause at the end of its line.

use crate::common;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// `orgledger sandbox` writing its env file to `env_file`.
fn sandbox(env_file: &Path) -> std::process::Child {
    common::bin()
        .args([
            "sandbox",
            "--addr",
            "127.0.0.1:0",
            "--profile",
            "tiny",
            "--env-file",
        ])
        .arg(env_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the sandbox starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_removes_its_env_file_when_stopped_by_either_signal() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (signal, code) in [("-TERM", 0), ("-INT", 0)] {
        let env_file = dir.path().join("sandbox.env");
        let mut child = sandbox(&env_file);
        crate::daemon::wait_until("the env file", Duration::from_secs(30), || {
            env_file.exists()
        })
        .await;
        let text = std::fs::read_to_string(&env_file).expect("env file");
        assert!(text.contains("ORGLEDGER_JWT="), "{text}");
        let (exit, _) = common::signal_and_wait(&mut child, signal).await;
        assert_eq!(exit, Some(code), "{signal}");
        assert!(!env_file.exists(), "{signal} left {}", env_file.display());
    }
}

#[test]
fn status_after_a_failed_first_sync_shows_zeros_and_each_error_with_its_cause() {
    let (_dir, db) = common::scratch();
    // A port nothing listens on: the first request is refused.
    let port = crate::object_store::free_port();
    let (code, _, err) = common::outputs(
        common::orgledger(&db)
            .args(["sync", "--whitelabel-org", "1", "--outage-limit", "1"])
            .arg("--base-url")
            .arg(format!("http://127.0.0.1:{port}"))
            .env("ORGLEDGER_JWT", "a.b.c"),
    );
    assert_eq!(code, Some(1), "{err}");
    let (code, status, err) = common::outputs(common::orgledger(&db).arg("status"));
    assert_eq!(code, Some(0), "{err}");
    let organizations = status
        .lines()
        .find(|l| l.starts_with("organizations "))
        .unwrap_or_else(|| panic!("{status}"));
    let cells: Vec<&str> = organizations.split_whitespace().collect();
    assert_eq!(cells, ["organizations", "0", "0", "0"], "{status}");
    let message: String = common::open(&db)
        .query_row("SELECT message FROM sync_errors", [], |r| r.get(0))
        .expect("one error");
    assert!(message.contains("Connection refused"), "{message}");
    assert!(
        status.lines().any(|l| l.ends_with(message.as_str())),
        "the whole message ends its line:\n{status}"
    );
    // The JSON form has the same zeros.
    let (_, json, _) = common::outputs(common::orgledger(&db).args(["status", "--format", "json"]));
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["tables"][0]["live"], 0, "{json}");
    assert_eq!(json["tables"][0]["removed"], 0, "{json}");
}
