//! `export` and `report` to Azure Blob Storage and Google Cloud Storage, each against
//! an emulator on a loopback port that the test starts: Azurite (npm) and
//! fake-gcs-server (its binary, from PyPI), both linked into ~/.cache/orgledger/bin by
//! `.ci/setup`. Without them a test prints a note and passes, except on CI.

use crate::common;
use crate::object_store::{
    Bridge, Emulator, Front, Objects, free_port, installed, listed_files_are_whole, listed_keys,
    mirror, object_bytes, run,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::path::{Path, PathBuf};
use std::process::Command;

const BUCKET: &str = "orgledger-it";

/// An emulator from ~/.cache/orgledger/bin, or None (with a note).
fn emulator(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let tool = PathBuf::from(home).join(".cache/orgledger/bin").join(name);
    let ready = tool.is_file();
    installed(tool, ready, name)
}

/// Exports the mirror to `<url>/ledger/export`, then the day's reports to
/// `<url>/ledger/reports`, then one table over the first export; after each, checks
/// that the manifest lists exactly the objects under its prefix, each with its
/// checksum. `env` points the binary at the store.
async fn round_trip(store: &impl Objects, url: &str, env: &[(&str, String)]) {
    let (dir, db) = mirror().await;
    let orgledger = |args: &[&str]| {
        let mut cmd = common::orgledger(&db);
        cmd.current_dir(dir.path()).args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        cmd
    };
    let scheme = url.split("://").next().unwrap_or(url);
    let local = dir.path().join(format!("{scheme}:"));

    let export = format!("{url}/ledger/export");
    let (code, out, err) = run(orgledger(&["export", "--out", &export])).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("manifest last"), "{out}");
    let manifest = store.manifest("ledger/export/_manifest.json").await;
    listed_files_are_whole(store, "ledger/export", &manifest).await;
    let listed = manifest["files"].as_array().map_or(0, Vec::len);
    let keys = store.keys("ledger/export/").await;
    assert_eq!(
        keys.len(),
        listed + 1,
        "the files and the manifest: {keys:?}"
    );

    let day = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    let reports = format!("{url}/ledger/reports");
    let (code, out, err) = run(orgledger(&[
        "report",
        "--format",
        "csv,json,parquet",
        "--as-of",
        &day,
        "--out",
        &reports,
    ]))
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let prefix = format!("ledger/reports/{day}");
    let manifest = store.manifest(&format!("{prefix}/manifest.json")).await;
    listed_files_are_whole(store, &prefix, &manifest).await;
    assert!(
        store
            .keys(&format!("{prefix}/"))
            .await
            .iter()
            .any(|k| k.ends_with("/entitlements.parquet")),
        "the Parquet reports are there"
    );

    // One table over the full export: the store lists and deletes the other tables'
    // objects once the new manifest is in.
    let (code, out, err) = run(orgledger(&[
        "export",
        "--tables",
        "organizations",
        "--out",
        &export,
    ]))
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let manifest = store.manifest("ledger/export/_manifest.json").await;
    listed_files_are_whole(store, "ledger/export", &manifest).await;
    let keys = store.keys("ledger/export/").await;
    assert_eq!(
        keys.len(),
        manifest["files"].as_array().map_or(0, Vec::len) + 1,
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .all(|k| k.starts_with("ledger/export/organizations/")
                || k == "ledger/export/_manifest.json"),
        "{keys:?}"
    );
    assert!(!local.exists(), "no local folder named {scheme}:");
}

/// `?name=value&...`, or nothing; the names and values of these tests (key
/// prefixes) need no escaping.
fn query_string(query: &[(&str, &str)]) -> String {
    if query.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = query.iter().map(|(n, v)| format!("{n}={v}")).collect();
    format!("?{}", pairs.join("&"))
}

/// Azurite's well-known development account.
const ACCOUNT: &str = "devstoreaccount1";
const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The REST version of the test's own requests.
const AZURE_VERSION: &str = "2021-08-06";

/// Azurite's Blob service on a free loopback port, in memory.
struct Azurite {
    _process: Emulator,
    _workspace: tempfile::TempDir,
    /// The account's URL, `http://127.0.0.1:<port>/devstoreaccount1`.
    account_url: String,
}

impl Azurite {
    async fn start(tool: &Path) -> Azurite {
        let port = free_port();
        let mut cmd = Command::new(tool);
        cmd.args(["--blobHost", "127.0.0.1", "--blobPort"])
            .arg(port.to_string())
            .args([
                "--inMemoryPersistence",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--silent",
            ]);
        // Its debug log and extent files, had it any, go to its working folder.
        let workspace = tempfile::tempdir().expect("tempdir");
        cmd.current_dir(workspace.path());
        let process = Emulator::start(cmd, port, "azurite-blob").await;
        let azurite = Azurite {
            _process: process,
            _workspace: workspace,
            account_url: format!("http://127.0.0.1:{port}/{ACCOUNT}"),
        };
        let status = azurite
            .signed(reqwest::Method::PUT, "", &[("restype", "container")])
            .send()
            .await
            .expect("Azurite answers")
            .status();
        assert!(status.is_success(), "create container: {status}");
        azurite
    }

    /// A request to `path` of the container (empty, or `/` and a key), signed with
    /// the account key (Shared Key): Azurite refuses anonymous reads of a private
    /// container.
    fn signed(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let mut resource = format!("/{ACCOUNT}/{ACCOUNT}/{BUCKET}{path}");
        let mut params = query.to_vec();
        params.sort();
        for (name, value) in &params {
            resource.push_str(&format!("\n{name}:{value}"));
        }
        // The eleven standard headers these requests leave empty, then the x-ms-*.
        let to_sign = format!(
            "{method}\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{AZURE_VERSION}\n{resource}"
        );
        let key = STANDARD.decode(ACCOUNT_KEY).expect("the key is base64");
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
        mac.update(to_sign.as_bytes());
        let signature = STANDARD.encode(mac.finalize().into_bytes());
        common::http()
            .request(
                method,
                format!("{}/{BUCKET}{path}{}", self.account_url, query_string(query)),
            )
            .header("x-ms-date", date)
            .header("x-ms-version", AZURE_VERSION)
            .header("authorization", format!("SharedKey {ACCOUNT}:{signature}"))
    }

    /// What the binary needs to reach the account: the documented settings of a
    /// real account, with the emulator's endpoint.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_string()),
            ("AZURE_STORAGE_ACCOUNT_KEY", ACCOUNT_KEY.to_string()),
            ("AZURE_STORAGE_ENDPOINT", self.account_url.clone()),
            ("AZURE_ALLOW_HTTP", "true".to_string()),
        ]
    }
}

impl Objects for Azurite {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let answer = self
            .signed(reqwest::Method::GET, &format!("/{key}"), &[])
            .send()
            .await
            .expect("get");
        object_bytes(answer, key).await
    }

    async fn keys(&self, prefix: &str) -> Vec<String> {
        let answer = self
            .signed(
                reqwest::Method::GET,
                "",
                &[
                    ("comp", "list"),
                    ("prefix", prefix),
                    ("restype", "container"),
                ],
            )
            .send()
            .await
            .expect("list");
        listed_keys(answer, "Name").await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_report_upload_to_azure_blob_storage() {
    let Some(tool) = emulator("azurite-blob") else {
        return;
    };
    let azurite = Azurite::start(&tool).await;
    let env = azurite.env();
    round_trip(&azurite, &format!("az://{BUCKET}"), &env).await;
}

/// fake-gcs-server on a free loopback port, in memory, behind a [`Front`] (see
/// [`as_signed_upload`] and [`etag_from_json`]).
struct FakeGcs {
    _process: Emulator,
    /// The emulator itself, for the test's reads.
    url: String,
    front: Front,
    /// The front's URL, for the binary.
    front_url: String,
}

impl FakeGcs {
    async fn start(tool: &Path) -> FakeGcs {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let mut cmd = Command::new(tool);
        cmd.args([
            "-scheme",
            "http",
            "-backend",
            "memory",
            "-host",
            "127.0.0.1",
        ])
        .arg("-port")
        .arg(port.to_string())
        // Path-style XML requests (`/bucket/key`) are routed only when their
        // Host is the public host.
        .arg("-public-host")
        .arg(format!("127.0.0.1:{port}"))
        .args(["-log-level", "error"]);
        let process = Emulator::start(cmd, port, "fake-gcs-server").await;
        let status = common::http()
            .post(format!("{url}/storage/v1/b"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "name": BUCKET }).to_string())
            .send()
            .await
            .expect("fake-gcs-server answers")
            .status();
        assert!(status.is_success(), "create bucket: {status}");
        let bridge = Bridge {
            request: as_signed_upload,
            answer: etag_from_json,
        };
        let (front, front_url) = Front::bridging(&url, bridge).await;
        FakeGcs {
            _process: process,
            url,
            front,
            front_url,
        }
    }

    /// What the binary needs: a service-account key that turns OAuth off (the
    /// emulator takes no token) and names the emulator as the base URL.
    fn env(&self) -> Vec<(&'static str, String)> {
        let key = serde_json::json!({
            "private_key": "",
            "private_key_id": "",
            "client_email": "",
            "disable_oauth": true,
            "gcs_base_url": self.front_url,
        });
        vec![
            ("GOOGLE_SERVICE_ACCOUNT_KEY", key.to_string()),
            ("GOOGLE_ALLOW_HTTP", "true".to_string()),
        ]
    }
}

/// object_store writes an object with the XML API's plain `PUT /bucket/key`.
/// fake-gcs-server 1.54 routes such a PUT to its JSON upload handler, which answers
/// `400 invalid uploadType` unless the query names an upload type or carries a
/// signed URL's `X-Goog-Algorithm`; with the latter it stores the body as sent,
/// which is what GCS does with the plain PUT. So the front adds that parameter to
/// every PUT of an object and forwards everything else as it is.
fn as_signed_upload(method: &axum::http::Method, path: String) -> String {
    if method == axum::http::Method::PUT && !path.contains('?') {
        format!("{path}?X-Goog-Algorithm=GOOG4-RSA-SHA256")
    } else {
        path
    }
}

/// The upload handler that [`as_signed_upload`] reaches answers as the JSON API
/// does, with the object's metadata in the body; GCS's XML API answers a PUT with
/// the object's ETag and generation in headers, which object_store requires. The
/// front copies them from the body into headers.
fn etag_from_json(method: &axum::http::Method, headers: &mut axum::http::HeaderMap, body: &[u8]) {
    if method != axum::http::Method::PUT || headers.contains_key(axum::http::header::ETAG) {
        return;
    }
    let Ok(object) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    for (header, field, quoted) in [
        ("etag", "etag", true),
        ("x-goog-generation", "generation", false),
    ] {
        let Some(value) = object[field].as_str() else {
            continue;
        };
        let value = if quoted {
            format!("\"{value}\"")
        } else {
            value.to_string()
        };
        if let Ok(value) = axum::http::HeaderValue::from_str(&value) {
            headers.insert(header, value);
        }
    }
}

impl Objects for FakeGcs {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let answer = common::http()
            .get(format!("{}/{BUCKET}/{key}", self.url))
            .send()
            .await
            .expect("get");
        object_bytes(answer, key).await
    }

    async fn keys(&self, prefix: &str) -> Vec<String> {
        let answer = common::http()
            .get(format!(
                "{}/{BUCKET}{}",
                self.url,
                query_string(&[("prefix", prefix)])
            ))
            .send()
            .await
            .expect("list");
        listed_keys(answer, "Key").await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_report_upload_to_google_cloud_storage() {
    let Some(tool) = emulator("fake-gcs-server") else {
        return;
    };
    let gcs = FakeGcs::start(&tool).await;
    let env = gcs.env();
    round_trip(&gcs, &format!("gs://{BUCKET}"), &env).await;
    // The binary's requests went through the front (object_store escapes every
    // character of a key but letters and digits).
    let requests = gcs.front.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("PUT ") && r.ends_with("export%2F%5Fmanifest%2Ejson")),
        "{requests:#?}"
    );
    assert!(
        requests.iter().any(|r| r.starts_with("DELETE ")),
        "the narrower export deleted through the store: {requests:#?}"
    );
}
