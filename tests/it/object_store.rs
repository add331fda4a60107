//! `export` and `report` to an object store: a real S3 protocol server (moto's
//! standalone server, from the venv `.ci/setup` installs) on a loopback port, started
//! by each test; DuckDB reads the export back through fsspec's s3fs. Where the venv
//! is missing a test prints a note and passes, except on CI, where it fails.

use crate::common;
use orgledger_sandbox::Profile;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const BUCKET: &str = "orgledger-it";
const KEY_ID: &str = "AKIAORGLEDGERIT00001";
const SECRET: &str = "it-secret-Zq8vW3kP0xLr7TnB";

/// `tool` when it is `ready`; otherwise None with a note, and on CI (where
/// `.ci/setup` installs every emulator these tests use) a failure.
pub(crate) fn installed(tool: PathBuf, ready: bool, what: &str) -> Option<PathBuf> {
    if !ready {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but {what} is missing (.ci/setup installs it)"
        );
        eprintln!("note: no {what} (.ci/setup installs it); skipping the test");
        return None;
    }
    Some(tool)
}

/// The venv's Python with moto, DuckDB and s3fs, or None (with a note).
fn python() -> Option<PathBuf> {
    venv_python("s3-venv", "moto.server, duckdb, s3fs", "moto/duckdb venv")
}

/// The Python of `~/.cache/orgledger/<venv>` when it can import `modules`, or None
/// (with a note naming `what`).
pub(crate) fn venv_python(venv: &str, modules: &str, what: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let py = PathBuf::from(home)
        .join(".cache/orgledger")
        .join(venv)
        .join("bin/python");
    let ready = py.is_file()
        && Command::new(&py)
            .args(["-c", &format!("import {modules}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    installed(py, ready, what)
}

/// A free loopback port (another process may take it before the emulator binds it;
/// the emulator then fails to start and the test says so).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// An emulator process listening on a loopback port, stopped when dropped.
pub(crate) struct Emulator {
    child: Child,
}

impl Emulator {
    /// Spawns `cmd` (silenced) and waits until `port` accepts connections.
    pub(crate) async fn start(mut cmd: Command, port: u16, what: &str) -> Emulator {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut emulator = Emulator {
            child: cmd.spawn().unwrap_or_else(|e| panic!("{what} starts: {e}")),
        };
        for _ in 0..300 {
            if let Ok(Some(status)) = emulator.child.try_wait() {
                panic!("{what} exited before listening on {port}: {status}");
            }
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return emulator;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{what} did not listen on {port} within 30 s");
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reading a test bucket back, whatever the store's protocol.
pub(crate) trait Objects {
    /// An object's bytes, None when there is none.
    async fn get(&self, key: &str) -> Option<Vec<u8>>;

    /// Keys under `prefix`, sorted.
    async fn keys(&self, prefix: &str) -> Vec<String>;

    async fn manifest(&self, key: &str) -> serde_json::Value {
        let bytes = self
            .get(key)
            .await
            .unwrap_or_else(|| panic!("{key} exists"));
        serde_json::from_slice(&bytes).expect("manifest JSON")
    }
}

/// A moto S3 server on a free loopback port, stopped when dropped.
struct Moto {
    _process: Emulator,
    endpoint: String,
}

impl Moto {
    /// Starts the server; with `auth`, it checks every request's credentials.
    async fn start(py: &Path, auth: bool) -> Moto {
        let port = free_port();
        let mut cmd = Command::new(py);
        cmd.args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
            .arg(port.to_string());
        if auth {
            cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
        }
        Moto {
            _process: Emulator::start(cmd, port, "moto").await,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    /// A request moto takes as the test user's: it does not check signatures
    /// (without `auth`), but an anonymous request may not read a private object.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        common::http()
            .request(method, format!("{}/{BUCKET}{path}", self.endpoint))
            .header(
                "authorization",
                format!(
                    "AWS4-HMAC-SHA256 Credential={KEY_ID}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
                ),
            )
    }

    async fn create_bucket(&self) {
        let status = self
            .request(reqwest::Method::PUT, "")
            .send()
            .await
            .expect("moto answers")
            .status();
        assert!(status.is_success(), "create bucket: {status}");
    }
}

impl Objects for Moto {
    async fn keys(&self, prefix: &str) -> Vec<String> {
        // The prefixes of these tests need no escaping.
        let answer = self
            .request(
                reqwest::Method::GET,
                &format!("?list-type=2&max-keys=1000&prefix={prefix}"),
            )
            .send()
            .await
            .expect("list");
        listed_keys(answer, "Key").await
    }

    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let answer = self
            .request(reqwest::Method::GET, &format!("/{key}"))
            .send()
            .await
            .expect("get");
        object_bytes(answer, key).await
    }
}

/// An object's bytes from a store's answer to a GET: None for a 404, any other
/// failure fails the test.
pub(crate) async fn object_bytes(answer: reqwest::Response, key: &str) -> Option<Vec<u8>> {
    if answer.status() == 404 {
        return None;
    }
    assert!(answer.status().is_success(), "{key}: {}", answer.status());
    Some(answer.bytes().await.expect("body").to_vec())
}

/// The keys of a store's XML listing, sorted: the text of each `tag` element (S3's
/// and GCS's `Key`, Azure's `Name`; a listing without a delimiter has no other).
pub(crate) async fn listed_keys(answer: reqwest::Response, tag: &str) -> Vec<String> {
    assert!(answer.status().is_success(), "list: {}", answer.status());
    let body = answer.text().await.expect("list body");
    let doc = roxmltree::Document::parse(&body).expect("list XML");
    let mut keys: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name(tag))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    keys.sort();
    keys
}

/// The binary on `db` with S3 settings for `endpoint` in its environment.
fn orgledger_s3(db: &Path, endpoint: &str) -> Command {
    let mut cmd = common::orgledger(db);
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE");
    cmd
}

/// Runs a command off the async threads (the proxy and the sandbox run on them).
pub(crate) async fn run(mut cmd: Command) -> (Option<i32>, String, String) {
    tokio::task::spawn_blocking(move || common::outputs(&mut cmd))
        .await
        .expect("command thread")
}

/// Whether a proxied request deletes objects (object_store deletes through S3's
/// bulk `POST ?delete` as well as `DELETE`).
fn is_delete(request: &str) -> bool {
    request.starts_with("DELETE ") || request.contains("?delete")
}

/// The request that withdrew the old manifest: a delete before any data file went
/// up (nothing else is deleted before the new manifest).
fn withdrawal(requests: &[String]) -> usize {
    let first_put = requests
        .iter()
        .position(|r| r.starts_with("PUT ") && r.contains(".parquet"))
        .unwrap_or(requests.len());
    let withdrawn = requests.iter().position(|r| is_delete(r));
    match withdrawn {
        Some(i) if i < first_put => i,
        _ => panic!("the old manifest was withdrawn before the files: {requests:#?}"),
    }
}

/// A mirror synced from the tiny sandbox world.
pub(crate) async fn mirror() -> (tempfile::TempDir, PathBuf) {
    let (_sb, dir, db) = common::synced().await;
    (dir, db)
}

/// Every file a manifest lists is in the store with its checksum.
pub(crate) async fn listed_files_are_whole(
    store: &impl Objects,
    prefix: &str,
    manifest: &serde_json::Value,
) {
    let files = manifest["files"].as_array().expect("files");
    assert!(!files.is_empty());
    for entry in files {
        let file = entry["file"].as_str().expect("file");
        let key = format!("{prefix}/{file}");
        let bytes = store
            .get(&key)
            .await
            .unwrap_or_else(|| panic!("{key} is listed but missing"));
        assert_eq!(
            entry["sha256"].as_str(),
            Some(hex::encode(Sha256::digest(&bytes)).as_str()),
            "{key}"
        );
    }
}

/// The rows of every mirrored table of a database file that meet `filter` (a
/// WHERE clause, or empty for all).
fn rows_by_table(db: &Path, filter: &str) -> Vec<(String, i64)> {
    let conn = common::open(db);
    orgledger::mirror::spec::TABLES
        .iter()
        .map(|t| {
            let sql = format!("SELECT COUNT(*) FROM {} {filter}", t.name);
            (t.name.to_string(), common::count(&conn, &sql))
        })
        .collect()
}

/// Current rows of each table in the mirror.
fn mirror_rows(db: &Path) -> Vec<(String, i64)> {
    rows_by_table(db, "WHERE removed_at IS NULL")
}

/// DuckDB (Python) reading each table's Parquet files from the store through s3fs
/// (DuckDB's own httpfs extension would be downloaded at run time): rows by table.
const DUCKDB_COUNTS: &str = r#"
import json, sys, duckdb, s3fs
endpoint, bucket, prefix, tables = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
fs = s3fs.S3FileSystem(key="AKIAORGLEDGERIT00001", secret="it-secret-Zq8vW3kP0xLr7TnB",
                       client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"})
con = duckdb.connect()
con.register_filesystem(fs)
out = {}
for t in tables:
    glob = f"s3://{bucket}/{prefix}/{t}/**/*.parquet"
    if not fs.glob(glob.removeprefix("s3://")):
        glob = f"s3://{bucket}/{prefix}/{t}/*.parquet"
    out[t] = con.execute(f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)").fetchone()[0]
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_report_upload_to_s3_and_duckdb_reads_the_export_back() {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, false).await;
    moto.create_bucket().await;
    let (dir, db) = mirror().await;

    let mut cmd = orgledger_s3(&db, &moto.endpoint);
    cmd.current_dir(dir.path())
        .args(["export", "--out", &format!("s3://{BUCKET}/ledger/export")]);
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("manifest last"), "{out}");
    assert!(
        !dir.path().join("s3:").exists(),
        "no local folder named s3:"
    );
    let manifest = moto.manifest("ledger/export/_manifest.json").await;
    listed_files_are_whole(&moto, "ledger/export", &manifest).await;
    let keys = moto.keys("ledger/export/").await;
    assert_eq!(
        keys.len(),
        manifest["files"].as_array().map_or(0, Vec::len) + 1,
        "exactly the listed files and the manifest: {keys:?}"
    );

    // DuckDB reads every table back with the mirror's row counts.
    let expected = mirror_rows(&db);
    let mut duck = Command::new(&py);
    duck.args(["-c", DUCKDB_COUNTS, &moto.endpoint, BUCKET, "ledger/export"])
        .args(expected.iter().map(|(t, _)| t.as_str()));
    let (code, out, err) = run(duck).await;
    assert_eq!(code, Some(0), "duckdb: {err}");
    let counts: serde_json::Value = serde_json::from_str(out.trim()).expect("counts JSON");
    for (table, rows) in &expected {
        assert_eq!(counts[table].as_i64(), Some(*rows), "{table}: {counts}");
    }

    // Reports: the day's folder under the prefix, manifest last, every file whole.
    let day = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    let mut cmd = orgledger_s3(&db, &moto.endpoint);
    cmd.current_dir(dir.path()).args([
        "report",
        "--format",
        "csv,json,parquet",
        "--as-of",
        &day,
        "--out",
        &format!("s3://{BUCKET}/ledger/reports"),
    ]);
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let prefix = format!("ledger/reports/{day}");
    let manifest = moto.manifest(&format!("{prefix}/manifest.json")).await;
    listed_files_are_whole(&moto, &prefix, &manifest).await;
    assert!(
        moto.keys(&format!("{prefix}/"))
            .await
            .iter()
            .any(|k| k.ends_with("/entitlements.parquet")),
        "the Parquet reports are there"
    );
    assert!(!dir.path().join("s3:").exists());
}

/// A loopback front for an emulator that records every request and, once armed,
/// refuses data uploads after `allow` of them (403, which no client retries): a store
/// that fails half-way through a set.
#[derive(Clone)]
pub(crate) struct Front {
    upstream: String,
    log: Arc<Mutex<Vec<String>>>,
    allow: Arc<Mutex<Option<usize>>>,
    bridge: Bridge,
}

/// What a front changes between a client and an emulator that answers a request
/// differently from the real store.
#[derive(Clone, Copy)]
pub(crate) struct Bridge {
    /// The path and query sent upstream for a request's method, path and query.
    pub(crate) request: fn(&axum::http::Method, String) -> String,
    /// Changes the answer's headers, given the request's method and the answer's body.
    pub(crate) answer: fn(&axum::http::Method, &mut axum::http::HeaderMap, &[u8]),
}

impl Bridge {
    /// Everything passes as it is.
    const NONE: Bridge = Bridge {
        request: |_, path| path,
        answer: |_, _, _| {},
    };
}

impl Front {
    async fn start(upstream: &str) -> (Front, String) {
        Front::bridging(upstream, Bridge::NONE).await
    }

    /// A front that changes requests and answers as `bridge` says.
    pub(crate) async fn bridging(upstream: &str, bridge: Bridge) -> (Front, String) {
        let front = Front {
            upstream: upstream.to_string(),
            log: Arc::default(),
            allow: Arc::default(),
            bridge,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(front.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (front, format!("http://{addr}"))
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

async fn forward(
    axum::extract::State(front): axum::extract::State<Front>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let method = parts.method.clone();
    front
        .log
        .lock()
        .expect("log")
        .push(format!("{method} {path}"));
    let upload = method == axum::http::Method::PUT || method == axum::http::Method::POST;
    if upload {
        let mut allow = front.allow.lock().expect("allow");
        if let Some(left) = allow.as_mut() {
            if *left == 0 {
                return (axum::http::StatusCode::FORBIDDEN, "<Error><Code>AccessDenied</Code><Message>upload refused by the test</Message></Error>").into_response();
            }
            *left -= 1;
        }
    }
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("request body");
    let sent = (front.bridge.request)(&method, path);
    let mut upstream = common::http().request(method.clone(), format!("{}{sent}", front.upstream));
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST {
            upstream = upstream.header(name, value);
        }
    }
    let answer = upstream.body(body).send().await.expect("the store answers");
    let status = answer.status();
    let mut headers = answer.headers().clone();
    let bytes = answer.bytes().await.expect("the store's body");
    (front.bridge.answer)(&method, &mut headers, &bytes);
    let mut response = axum::response::Response::builder().status(status);
    for (name, value) in &headers {
        if name != axum::http::header::TRANSFER_ENCODING && name != axum::http::header::CONNECTION {
            response = response.header(name, value);
        }
    }
    response
        .body(axum::body::Body::from(bytes))
        .expect("response")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_export_replaces_the_set_and_an_interrupted_one_leaves_no_manifest_pointing_at_replaced_files()
 {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, false).await;
    moto.create_bucket().await;
    let (front, endpoint) = Front::start(&moto.endpoint).await;
    let (dir, db) = mirror().await;
    let url = format!("s3://{BUCKET}/set");
    let export = |extra: &[&str]| {
        let mut cmd = orgledger_s3(&db, &endpoint);
        cmd.current_dir(dir.path())
            .args(["export", "--out", &url])
            .args(extra);
        cmd
    };

    // A full export, then one of two tables: the other tables' objects go, and only
    // after the new manifest is in place. The two tables' files replace objects of
    // the same names, so the old manifest is withdrawn before they go up.
    let (code, out, err) = run(export(&[])).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let full = moto.keys("set/").await;
    assert!(full.iter().any(|k| k.starts_with("set/users/")), "{full:?}");
    front.log.lock().expect("log").clear();
    let (code, out, err) = run(export(&["--tables", "organizations,daily_metrics"])).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let requests = front.requests();
    let manifest_put = requests
        .iter()
        .position(|r| r.starts_with("PUT /orgledger-it/set/_manifest.json"))
        .unwrap_or_else(|| panic!("the manifest was uploaded: {requests:#?}"));
    let withdrawn = withdrawal(&requests);
    let deletes: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(i, r)| *i != withdrawn && is_delete(r))
        .map(|(i, _)| i)
        .collect();
    assert!(
        !deletes.is_empty(),
        "stale objects were deleted: {requests:#?}"
    );
    assert!(
        deletes.iter().all(|i| *i > manifest_put),
        "every delete follows the manifest: {requests:#?}"
    );
    let data_puts: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.starts_with("PUT ") && r.contains(".parquet"))
        .map(|(i, _)| i)
        .collect();
    assert!(
        data_puts
            .iter()
            .all(|i| withdrawn < *i && *i < manifest_put),
        "{requests:#?}"
    );
    let two = moto.manifest("set/_manifest.json").await;
    listed_files_are_whole(&moto, "set", &two).await;
    let keys = moto.keys("set/").await;
    assert_eq!(
        keys.len(),
        two["files"].as_array().map_or(0, Vec::len) + 1,
        "{keys:?}"
    );
    assert!(keys.iter().all(|k| k.starts_with("set/organizations/")
        || k.starts_with("set/daily_metrics/")
        || k == "set/_manifest.json"));

    // A full export that the store stops accepting after three files. It replaces
    // objects the previous manifest lists, so that manifest is withdrawn before
    // anything goes up: the export fails and leaves no manifest at all, rather than
    // one listing checksums its files no longer have.
    front.log.lock().expect("log").clear();
    *front.allow.lock().expect("allow") = Some(3);
    let (code, out, err) = run(export(&[])).await;
    assert_ne!(code, Some(0), "the export fails: {out}");
    assert!(err.contains("s3://orgledger-it/set/"), "{err}");
    let requests = front.requests();
    assert!(
        !requests
            .iter()
            .any(|r| r.starts_with("PUT /orgledger-it/set/_manifest.json")),
        "no manifest was sent"
    );
    let withdrawn = withdrawal(&requests);
    assert!(
        requests
            .iter()
            .enumerate()
            .filter(|(_, r)| r.starts_with("PUT ") && r.contains(".parquet"))
            .all(|(i, _)| i > withdrawn),
        "before any file was replaced: {requests:#?}"
    );
    assert_eq!(moto.get("set/_manifest.json").await, None);

    // Once the store accepts again, the same command completes the set.
    *front.allow.lock().expect("allow") = None;
    let (code, out, err) = run(export(&[])).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let three = moto.manifest("set/_manifest.json").await;
    listed_files_are_whole(&moto, "set", &three).await;
    assert_eq!(
        moto.keys("set/").await.len(),
        three["files"].as_array().map_or(0, Vec::len) + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_credential_is_a_clear_error_without_the_secret() {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, true).await;
    let (dir, db) = mirror().await;
    let mut cmd = orgledger_s3(&db, &moto.endpoint);
    cmd.current_dir(dir.path())
        .args(["export", "--tables", "organizations", "--out"])
        .arg(format!("s3://{BUCKET}/denied"));
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains(&format!("s3://{BUCKET}/denied/")), "{err}");
    assert!(err.contains("InvalidAccessKeyId"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("credentials"), "{err}");
    assert!(!err.contains(SECRET) && !out.contains(SECRET), "{err}");
    assert!(!dir.path().join("s3:").exists());
}

#[test]
fn an_unsupported_scheme_is_an_error_and_creates_no_folder() {
    let (dir, db) = common::scratch();
    for command in ["export", "report"] {
        let mut cmd = common::orgledger(&db);
        cmd.current_dir(dir.path())
            .args([command, "--out", "ftp://host/reports"]);
        let (code, _, err) = common::outputs(&mut cmd);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(err.contains("\"ftp\"://"), "{command}: {err}");
        assert!(err.contains("s3, gs, az, file"), "{command}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{command} left {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_exports_append_each_runs_changes_by_day() {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, false).await;
    moto.create_bucket().await;
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let client = common::admin(&sb);
    let opts = common::sync_opts(&sb, &db);
    let first = orgledger::sync::run(&client, &opts, None)
        .await
        .expect("sync");
    let url = format!("s3://{BUCKET}/inc");
    let export = || {
        let mut cmd = orgledger_s3(&db, &moto.endpoint);
        cmd.current_dir(dir.path())
            .args(["export", "--since", "run:last", "--out", &url]);
        cmd
    };
    let (code, out, err) = run(export()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let one = moto.manifest("inc/history/_manifest.json").await;
    assert_eq!(one["last_run"].as_i64(), Some(first.run_id));
    listed_files_are_whole(&moto, "inc/history", &one).await;
    let first_files: Vec<String> = one["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["file"].as_str().map(str::to_string))
        .collect();
    assert!(
        first_files
            .iter()
            .all(|f| f.ends_with(&format!("/run-{}.parquet", first.run_id))
                && f.contains("/changed_on=")),
        "{first_files:?}"
    );

    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=3").await,
        200
    );
    let second = orgledger::sync::run(&client, &opts, None)
        .await
        .expect("sync");
    let (code, out, err) = run(export()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let two = moto.manifest("inc/history/_manifest.json").await;
    assert_eq!(two["last_run"].as_i64(), Some(second.run_id));
    listed_files_are_whole(&moto, "inc/history", &two).await;
    let listed: Vec<&str> = two["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["file"].as_str())
        .collect();
    // The first increment's files are still there, untouched; the second only adds.
    for f in &first_files {
        assert!(listed.contains(&f.as_str()), "{f} is kept");
    }
    assert!(
        listed.len() > first_files.len(),
        "the second run changed something"
    );
    let added: Vec<&&str> = listed
        .iter()
        .filter(|f| !first_files.iter().any(|g| g == *f))
        .collect();
    assert!(
        added
            .iter()
            .all(|f| f.ends_with(&format!("/run-{}.parquet", second.run_id))),
        "{added:?}"
    );

    // Both increments together hold every version the mirror has, once: as many
    // as a full history export (`--history`) writes.
    let full = dir.path().join("full-history");
    let mut cmd = common::orgledger(&db);
    cmd.args(["export", "--history", "--out"]).arg(&full);
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let history: serde_json::Value = serde_json::from_slice(
        &std::fs::read(full.join("_manifest.json")).expect("history manifest"),
    )
    .expect("JSON");
    let versions: Vec<(String, i64)> = history["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| {
            (
                t["table"].as_str().expect("table").to_string(),
                t["rows"].as_i64().expect("rows"),
            )
        })
        .collect();
    let script = r#"
import json, sys, duckdb, s3fs
endpoint, bucket, tables = sys.argv[1], sys.argv[2], sys.argv[3:]
fs = s3fs.S3FileSystem(key="k", secret="s", client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"})
con = duckdb.connect()
con.register_filesystem(fs)
out = {}
for t in tables:
    if not fs.glob(f"{bucket}/inc/history/{t}/**/*.parquet"):
        out[t] = 0
        continue
    out[t] = con.execute(f"SELECT count(*) FROM read_parquet('s3://{bucket}/inc/history/{t}/**/*.parquet', hive_partitioning = true) WHERE change = 'version'").fetchone()[0]
print(json.dumps(out))
"#;
    let mut duck = Command::new(&py);
    duck.args(["-c", script, &moto.endpoint, BUCKET])
        .args(versions.iter().map(|(t, _)| t.as_str()));
    let (code, out, err) = run(duck).await;
    assert_eq!(code, Some(0), "duckdb: {err}");
    let counts: serde_json::Value = serde_json::from_str(out.trim()).expect("counts JSON");
    for (table, n) in &versions {
        assert_eq!(counts[table].as_i64(), Some(*n), "{table}: {counts}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_file_over_8_mib_goes_up_in_parts_and_arrives_whole() {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, false).await;
    moto.create_bucket().await;
    let (front, endpoint) = Front::start(&moto.endpoint).await;
    let sb = common::sandbox(Profile::Medium).await;
    let (dir, db) = common::scratch();
    orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    let day = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    let mut cmd = orgledger_s3(&db, &endpoint);
    cmd.current_dir(dir.path()).args([
        "report",
        "compute_trends",
        "--format",
        "json",
        "--as-of",
        &day,
        "--out",
        &format!("s3://{BUCKET}/big"),
    ]);
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let prefix = format!("big/{day}");
    let manifest = moto.manifest(&format!("{prefix}/manifest.json")).await;
    let size = manifest["files"][0]["bytes"].as_u64().expect("bytes");
    assert!(size > 8 << 20, "compute_trends.json is {size} bytes");
    listed_files_are_whole(&moto, &prefix, &manifest).await;
    let requests = front.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("POST ") && r.contains("compute_trends.json?uploads")),
        "a multipart upload: {requests:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_goes_up_as_one_verified_object_and_leaves_nothing_beside_the_mirror() {
    let Some(py) = python() else { return };
    let moto = Moto::start(&py, false).await;
    moto.create_bucket().await;
    let (dir, db) = mirror().await;
    let listing = || -> Vec<std::ffi::OsString> {
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let url = format!("s3://{BUCKET}/backups/orgledger.db");
    let (code, out, err) = run({
        let mut cmd = orgledger_s3(&db, &moto.endpoint);
        cmd.current_dir(dir.path()).args(["backup", "--out", &url]);
        cmd
    })
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains(&url), "{out}");
    assert!(!out.contains(SECRET) && !err.contains(SECRET));
    assert_eq!(listing(), before, "the staged copy is gone");
    let bytes = moto.get("backups/orgledger.db").await.expect("the backup");
    let copy = dir.path().join("downloaded.db");
    std::fs::write(&copy, bytes).expect("write the download");
    let conn = common::open(&copy);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    assert_eq!(check, "ok");
    drop(conn);
    assert_eq!(rows_by_table(&copy, ""), rows_by_table(&db, ""));
}

#[test]
fn a_backup_to_a_file_store_is_the_mirror_and_an_unknown_scheme_writes_nothing() {
    let (dir, db) = common::scratch();
    drop(orgledger::mirror::open_rw(&db).expect("a mirror"));
    let target = dir.path().join("store");
    let url = format!("file://{}/nightly/orgledger.db", target.display());
    let mut cmd = common::orgledger(&db);
    cmd.args(["backup", "--out", &url]);
    let (code, out, err) = common::outputs(&mut cmd);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let copy = target.join("nightly/orgledger.db");
    assert_eq!(rows_by_table(&copy, ""), rows_by_table(&db, ""));
    let mut cmd = common::orgledger(&db);
    cmd.current_dir(dir.path())
        .args(["backup", "--out", "ftp://host/nightly.db"]);
    let (code, _, err) = common::outputs(&mut cmd);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("s3, gs, az, file"), "{err}");
    assert!(!dir.path().join("ftp:").exists());
}

#[test]
fn a_store_that_does_not_answer_fails_the_export_in_seconds_with_its_url() {
    let (dir, db) = common::scratch();
    drop(orgledger::mirror::open_rw(&db).expect("a mirror"));
    // A port nothing listens on: every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = std::time::Instant::now();
    let mut cmd = orgledger_s3(&db, &format!("http://127.0.0.1:{port}"));
    cmd.current_dir(dir.path())
        .args(["export", "--out", &format!("s3://{BUCKET}/dead")]);
    let (code, out, err) = common::outputs(&mut cmd);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains(&format!("s3://{BUCKET}/dead")), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    // object_store's own default retried each request for three minutes.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(90), "took {took:?}");
}
