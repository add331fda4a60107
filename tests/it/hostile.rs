//! A service that misbehaves, by accident or on purpose, gets nothing it should
//! not: credentials stay with the configured origin, a document refused on purpose
//! costs seconds rather than minutes, and bodies that never end cost a bounded
//! amount of memory. Each case runs the binary against the sandbox over HTTP.

use crate::common::{self, Trap};
use orgledger::api::operation::project_info_path;
use orgledger_sandbox::{Profile, SandboxHandle};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Exit code of a sync that stored what it could and names what is missing.
const PARTIAL: i32 = 3;

/// The `sync_errors` rows of get-project-info: (entity, attempts, message).
fn project_info_errors(db: &Path) -> Vec<(String, i64, String)> {
    let conn = common::open(db);
    let mut stmt = conn
        .prepare(
            "SELECT entity, attempts, message FROM sync_errors \
             WHERE operation = 'get-project-info' ORDER BY id",
        )
        .expect("query");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows read")
}

/// Neither credential of the sandbox appears in `text`.
fn assert_no_credential(sb: &SandboxHandle, text: &str) {
    assert!(!text.contains(&sb.info.jwt), "the JWT leaked: {text}");
    assert!(
        !text.contains(&sb.info.org_api_key),
        "the API key leaked: {text}"
    );
}

/// The sync stored what it could and exited 3.
fn assert_partial(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(PARTIAL),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("orgledger runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_not_followed_and_no_credential_leaves() {
    let sb = common::sandbox(Profile::Tiny).await;
    let trap = Trap::start().await;
    let path = project_info_path(sb.info.project_id, None);
    let location = format!("{}/v1/api/{}", trap.origin, sb.info.project_id);
    common::override_with(
        &sb,
        &path,
        &format!("status=307&location={location}"),
        vec![],
    )
    .await;
    let (_dir, db) = common::scratch();

    let out = output(&mut common::sync_command(&sb, &db));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(PARTIAL), "{stderr}");
    assert_eq!(trap.connections(), 0, "nothing reached the other origin");
    let errors = project_info_errors(&db);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (entity, attempts, message) = &errors[0];
    assert_eq!(entity, &format!("project {}", sb.info.project_id));
    assert_eq!(*attempts, 1, "a refused redirect is final");
    assert!(
        message.contains(&format!("HTTP 307 redirects to {}", trap.origin))
            && message.contains(&format!("only to the configured origin {}", sb.info.url)),
        "{message}"
    );
    assert_no_credential(&sb, message);
    assert_no_credential(&sb, &stderr);
}

/// `orgledger api list-organizations` against the sandbox.
fn list_organizations(sb: &SandboxHandle) -> Output {
    let dir = tempfile::tempdir().expect("tempdir");
    output(
        Command::new(env!("CARGO_BIN_EXE_orgledger"))
            .args(["--db", dir.path().join("m.db").to_str().expect("utf-8")])
            .args(["api", "list-organizations"])
            .env("ORGLEDGER_BASE_URL", &sb.info.url)
            .env("ORGLEDGER_JWT", &sb.info.jwt)
            .env_remove("ORGLEDGER_API_KEY")
            .env_remove("ORGLEDGER_CONFIG"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_origin_redirect_is_followed_and_a_loop_is_an_error() {
    let sb = common::sandbox(Profile::Tiny).await;
    let listed = common::served(&sb, "/v1/api/organizations").await;
    let moved = "/v1/api/organizations-moved";
    common::set_override(&sb, moved, 200, listed.clone().into_bytes()).await;
    let to_moved = format!("status=308&location={moved}");
    common::override_with(&sb, "/v1/api/organizations", &to_moved, vec![]).await;

    let out = list_organizations(&sb);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_str(&stdout).expect("JSON printed");
    let served: serde_json::Value = serde_json::from_str(&listed).expect("JSON served");
    assert_eq!(printed["organizations"], served["organizations"]);

    let to_itself = "status=302&location=/v1/api/organizations";
    common::override_with(&sb, "/v1/api/organizations", to_itself, vec![]).await;
    let out = list_organizations(&sb);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("more than 5 redirects in a row"),
        "{stderr}"
    );
    assert_no_credential(&sb, &stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_refused_on_purpose_gets_five_attempts_and_no_second_pass() {
    let sb = common::sandbox(Profile::Small).await;
    let path = project_info_path(sb.info.project_id, None);
    let refusal = br#"{"success": false, "error": "project is locked"}"#.to_vec();
    common::set_override(&sb, &path, 200, refusal).await;
    let (_dir, db) = common::scratch();

    let started = Instant::now();
    let out = output(&mut common::sync_command(&sb, &db));
    let took = started.elapsed();
    assert_partial(&out);
    let errors = project_info_errors(&db);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (entity, attempts, message) = &errors[0];
    assert_eq!(entity, &format!("project {}", sb.info.project_id));
    assert_eq!(*attempts, 5, "five attempts, none in a second pass");
    assert!(
        message.contains("success=false: project is locked"),
        "{message}"
    );
    let conn = common::open(&db);
    let run_message: Option<String> = conn
        .query_row("SELECT message FROM sync_runs ORDER BY id DESC", [], |r| {
            r.get(0)
        })
        .expect("the run");
    let run_message = run_message.unwrap_or_default();
    assert!(!run_message.contains("second pass"), "{run_message}");
    // Five attempts spaced 0.2, 0.4, 0.8 and 1.6 s (with jitter, at most 4.5 s); the
    // two passes of a transient failure took about 90 s.
    assert!(took < Duration::from_secs(30), "the sync took {took:?}");
}

/// The most memory the process ever held, in kB (`VmHWM`), while it runs.
fn peak_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_never_end_are_cut_at_the_limit_and_memory_stays_bounded() {
    let sb = common::sandbox(Profile::Small).await;
    let (_clean_dir, clean) = common::scratch();
    let synced = orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &clean), None)
        .await
        .expect("a clean sync");
    assert_eq!(synced.totals.errors, 0);
    let ids: Vec<i64> = {
        let conn = common::open(&clean);
        let mut stmt = conn
            .prepare("SELECT project_id FROM project_info")
            .expect("query");
        stmt.query_map([], |r| r.get(0))
            .expect("ids")
            .collect::<Result<_, _>>()
            .expect("ids read")
    };
    assert!(ids.len() > 50, "{} projects", ids.len());
    // Every project's information streams forever: all eight connections at once.
    let mut endless = br#"{"success": true, "project": {"id": 1, "description": ""#.to_vec();
    endless.resize(endless.len() + (64 << 10), b'x');
    for id in &ids {
        let path = project_info_path(*id, None);
        common::override_with(&sb, &path, "status=200&endless=1", endless.clone()).await;
    }
    let (_dir, db) = common::scratch();
    let mut child = common::sync_command(&sb, &db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sync starts");
    let pid = child.id();
    let mut peak = 0;
    while child.try_wait().expect("wait").is_none() {
        peak = peak_kb(pid).unwrap_or(peak).max(peak);
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("sync ends");
    assert_partial(&out);
    let errors = project_info_errors(&db);
    assert_eq!(errors.len(), ids.len(), "one error per project");
    for (entity, attempts, message) in &errors {
        assert!(entity.starts_with("project "), "{entity}");
        assert_eq!(*attempts, 1, "a body over the limit is final");
        assert!(
            message.contains(
                "the response is larger than 8388608 bytes (8 MB), the limit for get-project-info"
            ),
            "{message}"
        );
    }
    let conn = common::open(&db);
    let organizations = common::count(&conn, "SELECT COUNT(*) FROM organizations");
    assert!(organizations > 0, "everything else is stored");
    assert!(peak > 0, "the peak was read");
    assert!(
        peak < 300 * 1024,
        "peak memory {} MB with eight endless bodies",
        peak / 1024
    );
}
