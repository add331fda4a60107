//! The standalone binary prints the connection JSON first and serves until a signal.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The server process, killed when the test ends (also when it fails).
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn binary_prints_the_connection_line_first_and_serves() {
    let mut child = Served(
        Command::new(env!("CARGO_BIN_EXE_orgledger-sandbox"))
            .args(["--profile", "tiny", "--start-date", "2025-04-10"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("binary starts"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    let info: serde_json::Value = serde_json::from_str(&line).expect("JSON line");
    let url = info["url"].as_str().expect("url").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    for key in ["jwt", "orgApiKey", "projectApiKey"] {
        assert!(
            info[key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}: {line}"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let health = runtime.block_on(async {
        crate::common::http()
            .get(format!("{url}/sandbox/health"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    drop(child);
    assert_eq!(health.ok(), Some(200));
}

#[test]
fn binary_refuses_a_bad_fault_spec_with_usage_exit() {
    let out = Command::new(env!("CARGO_BIN_EXE_orgledger-sandbox"))
        .args(["--faults", "outage=90..30"])
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("90..30"));
}
