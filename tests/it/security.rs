//! Secrets and access, through the real binary at
//! trace level. No credential or development key reaches stdout, stderr, the mirror
//! or a report; `--api-key` works but warns; the mirror is private; `query` cannot
//! write; `--redact-pii` leaves no e-mail address in any report file.

use crate::common;
use crate::digest;
use orgledger_sandbox::{Profile, SandboxHandle};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary at trace level (`-vv` and `RUST_LOG=trace`, which also turns on
/// the HTTP stack's own logs) with the sandbox's URL and the given environment.
fn orgledger(sb: &SandboxHandle, db: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orgledger"));
    cmd.args(["-vv", "--db", db.to_str().expect("utf-8 path")])
        .args(args)
        .env_remove("ORGLEDGER_JWT")
        .env_remove("ORGLEDGER_API_KEY")
        .env("RUST_LOG", "trace")
        .env("ORGLEDGER_BASE_URL", &sb.info.url);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("orgledger runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    !needle.is_empty()
        && haystack
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The first match of `[^@\s]+@[^@\s]+\.[a-z]+` in `text`, by hand.
fn email_in(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let word = |b: u8| b != b'@' && !b.is_ascii_whitespace();
    for (at, _) in text.match_indices('@') {
        if at == 0 || !word(bytes[at - 1]) {
            continue;
        }
        let end = (at + 1..bytes.len())
            .find(|&i| !word(bytes[i]))
            .unwrap_or(bytes.len());
        let domain = &bytes[at + 1..end];
        let dotted = (1..domain.len().saturating_sub(1))
            .any(|j| domain[j] == b'.' && domain[j + 1].is_ascii_lowercase());
        if dotted {
            let start = (0..at)
                .rev()
                .find(|&i| !word(bytes[i]))
                .map_or(0, |i| i + 1);
            return Some(String::from_utf8_lossy(&bytes[start..end]).into_owned());
        }
    }
    None
}

#[test]
fn the_email_matcher_follows_the_pattern() {
    assert_eq!(
        email_in("x ana.lee@mail.example.net, y").as_deref(),
        Some("ana.lee@mail.example.net,")
    );
    assert_eq!(email_in("\"a@b.io\"").as_deref(), Some("\"a@b.io\""));
    for clean in [
        "@media screen",
        "user-1a2b3c4d",
        "a@b",
        "a@b.",
        "a@.com",
        "a @b.com",
    ] {
        assert_eq!(email_in(clean), None, "{clean}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_leaks_the_mirror_is_private_and_query_cannot_write() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let keys = common::admin(&sb)
        .get_project_info(sb.info.project_id, None)
        .await
        .expect("get-project-info")
        .value
        .development_keys
        .expect("development keys");
    let dev_key = keys.api_key.expect("an API key").expose().to_string();
    let hmac_key = keys.hmac_key.expect("an HMAC key").expose().to_string();
    let secrets = [
        ("the JWT", sb.info.jwt.clone()),
        ("the organization API key", sb.info.org_api_key.clone()),
        ("a development API key", dev_key),
        ("a development HMAC key", hmac_key),
    ];
    assert!(secrets.iter().all(|(_, s)| s.len() >= 8));
    let jwt = [("ORGLEDGER_JWT", sb.info.jwt.as_str())];
    let wl = sb.info.whitelabel_organization_id.to_string();
    let project = sb.info.project_id.to_string();
    let reports = dir.path().join("reports");
    let redacted = dir.path().join("redacted");
    let day = common::start_date().to_string();

    let mut outputs = Vec::new();
    let mut run = |env: &[(&str, &str)], args: &[&str]| {
        let out = orgledger(&sb, &db, env, args);
        assert!(out.status.success(), "{args:?} failed:\n{}", text(&out));
        outputs.push((args.join(" "), text(&out)));
        out
    };
    run(&jwt, &["sync", "--no-progress", "--whitelabel-org", &wl]);
    let reports_arg = reports.to_str().expect("utf-8");
    run(
        &jwt,
        &[
            "report",
            "--as-of",
            &day,
            "--format",
            "csv,json,html",
            "--out",
            reports_arg,
        ],
    );
    let redacted_arg = redacted.to_str().expect("utf-8");
    run(
        &jwt,
        &[
            "report",
            "--as-of",
            &day,
            "--format",
            "csv,json,html",
            "--out",
            redacted_arg,
            "--redact-pii",
        ],
    );
    run(&jwt, &["api", "get-project-info", &project]);
    run(&jwt, &["status"]);
    run(
        &[("ORGLEDGER_API_KEY", sb.info.org_api_key.as_str())],
        &["api", "get-organization", &wl],
    );
    // On the command line the key works, with a warning.
    let on_cli = run(
        &[],
        &[
            "api",
            "--api-key",
            &sb.info.org_api_key,
            "get-organization",
            &wl,
        ],
    );
    let stderr = String::from_utf8_lossy(&on_cli.stderr);
    assert!(
        stderr.contains("process list") && stderr.contains("other users"),
        "--api-key warns:\n{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&on_cli.stdout).contains("\"success\": true")
            || String::from_utf8_lossy(&on_cli.stdout).contains("\"success\":true"),
        "--api-key works"
    );
    let traced: usize = outputs
        .iter()
        .map(|(_, t)| t.matches("TRACE").count())
        .sum();
    assert!(traced > 100, "trace logging was on ({traced} trace lines)");

    for (command, out) in &outputs {
        for (what, secret) in &secrets {
            assert!(
                !out.contains(secret.as_str()),
                "{what} appears in the output of `orgledger {command}`"
            );
        }
    }

    // The mirror: private, and no secret inside (WAL folded back first).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&db).expect("mirror").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mirror mode {mode:o}");
    let conn = common::open(&db);
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint");
    for file in files(dir.path()) {
        let bytes = std::fs::read(&file).expect("read");
        for (what, secret) in &secrets {
            assert!(!contains(&bytes, secret), "{what} is in {}", file.display());
        }
    }
    let report_files = files(&reports);
    assert!(report_files.len() >= 10, "{report_files:?}");
    assert!(
        report_files
            .iter()
            .any(|f| email_in(&std::fs::read_to_string(f).unwrap_or_default()).is_some()),
        "without --redact-pii the reports do show e-mail addresses"
    );
    let redacted_files = files(&redacted);
    assert_eq!(redacted_files.len(), report_files.len());
    for file in &redacted_files {
        let content = std::fs::read_to_string(file).expect("utf-8 report");
        assert_eq!(
            email_in(&content),
            None,
            "an e-mail address in {}",
            file.display()
        );
    }

    // `query` is read-only: writes fail clearly and change nothing.
    let before = digest::current_state(&conn).expect("digest");
    let schema_before: i64 = common::count(&conn, "SELECT COUNT(*) FROM sqlite_master");
    let orgs = common::count(&conn, "SELECT COUNT(*) FROM organizations");
    assert!(orgs > 0);
    for sql in [
        "DELETE FROM organizations",
        "INSERT INTO sync_errors (run_id, operation, message, attempts) VALUES (1, 'x', 'y', 1)",
        "CREATE TABLE stolen (secret TEXT)",
        "UPDATE organizations SET name = 'x'",
    ] {
        let out = orgledger(&sb, &db, &[], &["query", sql]);
        assert_eq!(out.status.code(), Some(1), "{sql} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("`query` is read-only: "), "{sql}: {stderr}");
    }
    assert_eq!(digest::current_state(&conn).expect("digest"), before);
    assert_eq!(
        common::count(&conn, "SELECT COUNT(*) FROM sqlite_master"),
        schema_before
    );
    assert_eq!(
        common::count(&conn, "SELECT COUNT(*) FROM organizations"),
        orgs
    );
}
