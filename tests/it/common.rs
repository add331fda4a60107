//! Shared set-up: a sandbox on port 0, clients with its credentials, scratch mirrors.

#![allow(dead_code)]

use orgledger::api::Client;
use orgledger::api::client::{ClientConfig, Credentials};
use orgledger::api::pacing::Backoff;
use orgledger::api::secret::Secret;
use orgledger::sync::SyncOptions;
use orgledger_sandbox::{
    self as sandbox, FaultSpec, Profile, SandboxHandle, SandboxOptions, World,
};
use std::path::PathBuf;
use std::time::Duration;

/// The fixed world clock start of the tests, so dates in assertions are stable.
pub fn start_date() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(2026, 6, 1).expect("valid date")
}

/// Starts a generated sandbox.
pub async fn sandbox(profile: Profile) -> SandboxHandle {
    start(profile, FaultSpec::default(), None).await
}

/// Starts a sandbox with faults or a hand-made world.
pub async fn start(profile: Profile, faults: FaultSpec, world: Option<World>) -> SandboxHandle {
    sandbox::start(SandboxOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        profile,
        seed: 42,
        start_date: Some(start_date()),
        faults,
        world,
        ..SandboxOptions::default()
    })
    .await
    .expect("sandbox starts")
}

/// A client with the given credentials and quick retries.
pub fn client(handle: &SandboxHandle, api_key: Option<&str>, jwt: Option<&str>) -> Client {
    Client::new(config(handle, api_key, jwt)).expect("client")
}

/// The white label admin's client, with its configuration changed by `tune`.
pub fn admin_with(handle: &SandboxHandle, tune: impl FnOnce(&mut ClientConfig)) -> Client {
    let mut cfg = config(handle, None, Some(&handle.info.jwt));
    tune(&mut cfg);
    Client::new(cfg).expect("client")
}

fn config(handle: &SandboxHandle, api_key: Option<&str>, jwt: Option<&str>) -> ClientConfig {
    let creds = Credentials {
        api_key: api_key.map(Secret::new),
        jwt: jwt.map(Secret::new),
    };
    let mut cfg = ClientConfig::new(handle.info.url.clone(), creds);
    cfg.backoff = Backoff {
        base: Duration::from_millis(20),
        cap: Duration::from_millis(200),
        max_retries: 6,
    };
    cfg.timeout = Duration::from_secs(20);
    cfg
}

/// A client with the white label admin's JWT (sees everything).
pub fn admin(handle: &SandboxHandle) -> Client {
    client(handle, None, Some(&handle.info.jwt))
}

/// A scratch folder and a mirror path inside it.
pub fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("mirror.db");
    (dir, db)
}

/// A mirror of the tiny world after one sync without errors (observed on the
/// sandbox's first day, 2026-06-01), with its sandbox still serving.
pub async fn synced() -> (SandboxHandle, tempfile::TempDir, PathBuf) {
    let sb = sandbox(Profile::Tiny).await;
    let (dir, db) = scratch();
    let outcome = orgledger::sync::run(&admin(&sb), &sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    assert_eq!(outcome.totals.errors, 0);
    (sb, dir, db)
}

/// Sync options for the sandbox's white label.
pub fn sync_opts(handle: &SandboxHandle, db: &std::path::Path) -> SyncOptions {
    SyncOptions {
        db: db.to_path_buf(),
        whitelabel_org: Some(handle.info.whitelabel_organization_id),
        has_jwt: true,
        store_secrets: false,
        progress: false,
        forget_removed_after_days: None,
    }
}

/// POSTs to a sandbox admin route with the JWT; returns the status.
pub async fn admin_post(handle: &SandboxHandle, route: &str) -> u16 {
    admin_call(handle, reqwest::Method::POST, route).await
}

/// DELETEs a sandbox admin route with the JWT (ends what the POST began); returns
/// the status.
pub async fn admin_delete(handle: &SandboxHandle, route: &str) -> u16 {
    admin_call(handle, reqwest::Method::DELETE, route).await
}

async fn admin_call(handle: &SandboxHandle, method: reqwest::Method, route: &str) -> u16 {
    http()
        .request(method, format!("{}{route}", handle.info.url))
        .header("x-jwt-token", &handle.info.jwt)
        .send()
        .await
        .expect("admin route answers")
        .status()
        .as_u16()
}

/// Opens the mirror for assertions.
pub fn open(db: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).expect("open mirror")
}

/// One integer from a query, 0 while the mirror does not exist or lacks the table.
pub fn count_or_zero(db: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(0)
}

/// The first column of every row a query returns.
pub fn column<T: rusqlite::types::FromSql>(conn: &rusqlite::Connection, sql: &str) -> Vec<T> {
    conn.prepare(sql)
        .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// One integer from a query.
pub fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// `Ok` when the page is well-formed XML (the page is written XHTML-compatible:
/// every element closed in order, attributes quoted, only XML's own entities, one
/// root); otherwise the parser's message with line and column.
pub fn well_formed(page: &str) -> Result<(), String> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(page, options)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Sends `signal` (e.g. "-TERM") to a child orgledger and waits for it to exit,
/// failing after 15 s; returns its exit code and the time from signal to exit.
pub async fn signal_and_wait(
    child: &mut std::process::Child,
    signal: &str,
) -> (Option<i32>, Duration) {
    let sent = std::time::Instant::now();
    let kill = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success(), "kill {signal} failed");
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return (status.code(), sent.elapsed());
        }
        assert!(
            sent.elapsed() < Duration::from_secs(15),
            "the process did not exit after {signal}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A plain HTTP client for the sandbox's admin routes. reqwest is built without a
/// default TLS provider (the product installs one when it builds its client), so
/// a test that talks to the sandbox before any product client exists installs it.
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The rows of a report's JSON file in `dir`.
pub fn json_rows(dir: &std::path::Path, name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).expect("report file");
    match serde_json::from_str(&text).expect("json") {
        serde_json::Value::Array(rows) => rows,
        other => panic!("{name}.json is not an array: {other}"),
    }
}

/// The `entitlements` row of one (organization, metric).
pub fn entitlement(rows: &[serde_json::Value], org: i64, metric: &str) -> serde_json::Value {
    rows.iter()
        .find(|r| r["organization_id"].as_i64() == Some(org) && r["metric"] == metric)
        .cloned()
        .unwrap_or_else(|| panic!("no {metric} row for organization {org}"))
}

/// Serves `body` with `status` at `path` instead of the world's answer.
pub async fn set_override(sb: &SandboxHandle, path: &str, status: u16, body: Vec<u8>) {
    override_with(sb, path, &format!("status={status}"), body).await;
}

/// Serves `body` at `path` with the override route's other parameters in `query`
/// (`status=307&location=...`, `endless=1`).
pub async fn override_with(sb: &SandboxHandle, path: &str, query: &str, body: Vec<u8>) {
    let answer = http()
        .post(format!(
            "{}/sandbox/override?path={path}&{query}",
            sb.info.url
        ))
        .header("x-jwt-token", &sb.info.jwt)
        .body(body)
        .send()
        .await
        .expect("override route answers");
    assert_eq!(answer.status().as_u16(), 200);
}

/// The world's own answer at `path`.
pub async fn served(sb: &SandboxHandle, path: &str) -> String {
    // Building the crate's client installs the TLS crypto provider reqwest needs.
    admin(sb);
    http()
        .get(format!("{}{path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("the sandbox answers")
        .text()
        .await
        .expect("a body")
}

/// `orgledger sync` of the sandbox's white label into `db` through the binary, with
/// both credentials (the JWT and the organization's API key) in the environment.
pub fn sync_command(sb: &SandboxHandle, db: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"));
    cmd.args([
        "-q",
        "--db",
        db.to_str().expect("utf-8"),
        "sync",
        "--no-progress",
    ])
    .args([
        "--whitelabel-org",
        &sb.info.whitelabel_organization_id.to_string(),
    ])
    .env("ORGLEDGER_BASE_URL", &sb.info.url)
    .env("ORGLEDGER_JWT", &sb.info.jwt)
    .env("ORGLEDGER_API_KEY", &sb.info.org_api_key)
    .env_remove("ORGLEDGER_CONFIG")
    .env_remove("RUST_LOG");
    cmd
}

/// A loopback listener that must receive nothing: it counts the connections made
/// to it and answers each with a plain 200, as a credential thief would.
pub struct Trap {
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Trap {
    /// Listens on a free loopback port.
    pub async fn start() -> Trap {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = connections.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut head = [0u8; 4096];
                let _ = socket.read(&mut head).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{\"success\":true}")
                    .await;
            }
        });
        Trap {
            origin: format!("http://{addr}"),
            connections,
        }
    }

    /// Connections made to it so far.
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The binary on the mirror `db`, with a clean environment: no credentials, no URL,
/// no config.
pub fn orgledger(db: &std::path::Path) -> std::process::Command {
    let mut cmd = bin();
    cmd.arg("--db").arg(db).env_remove("NO_COLOR");
    cmd
}

/// The CSV and JSON files of every report as of `as_of`, by name.
pub fn report_files(
    db: &std::path::Path,
    as_of: &str,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let out = db.with_extension(format!("reports-{as_of}"));
    let run = orgledger(db)
        .args(["report", "--as-of", as_of, "--format", "csv,json", "--out"])
        .arg(&out)
        .output()
        .expect("report runs");
    assert!(
        run.status.success(),
        "report as of {as_of} on {}: {}",
        db.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    let mut files = std::collections::BTreeMap::new();
    for entry in files_under(&out) {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if name.ends_with(".csv") || (name.ends_with(".json") && name != "manifest.json") {
            files.insert(name, std::fs::read(&entry).expect("report file"));
        }
    }
    assert!(!files.is_empty(), "no report files in {}", out.display());
    files
}

fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("report folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// `cmd` with no settings from outside: no credentials, URL, mirror or config in
/// its environment.
pub fn clean(mut cmd: std::process::Command) -> std::process::Command {
    for var in [
        "ORGLEDGER_JWT",
        "ORGLEDGER_API_KEY",
        "ORGLEDGER_BASE_URL",
        "ORGLEDGER_CONFIG",
        "ORGLEDGER_DB",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// The binary, [`clean`].
pub fn bin() -> std::process::Command {
    clean(std::process::Command::new(env!("CARGO_BIN_EXE_orgledger")))
}

/// Runs `cmd` and returns (exit code, stdout, stderr).
pub fn outputs(cmd: &mut std::process::Command) -> (Option<i32>, String, String) {
    let out = cmd.output().expect("orgledger runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A path as the UTF-8 text a command line takes.
pub fn arg(path: &std::path::Path) -> &str {
    path.to_str().expect("utf-8 path")
}
