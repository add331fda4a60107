//! Alerts over real HTTP: the sandbox serves the world (an organization's limit is
//! moved with `/sandbox/override`), a receiver on a loopback port checks every
//! Standard Webhooks signature itself, and the mirror is a real SQLite file. Slack
//! and Teams receivers are in `alert_channels`.

use crate::common;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use orgledger::alerts::{self, AlertOptions, Jsonl, Kind, Mode, Retry, SigningKey, Webhook};
use orgledger::api::operation::organization_path;
use orgledger::api::secret::Secret;
use orgledger::mirror::runs::RunStatus;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger_sandbox::{Profile, SandboxHandle};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The test's signing secret (a real one would come from a 0600 file).
pub(crate) const SECRET: &str = "whsec_c2VjcmV0LWtleS1mb3ItdGhlLWFsZXJ0LXRlc3Rz";

/// One request the receiver saw.
#[derive(Debug, Clone)]
struct Got {
    id: String,
    answered: u16,
    event: Value,
}

#[derive(Default)]
struct Inbox {
    /// Statuses to answer, in order; 200 once they run out (or `then`).
    script: VecDeque<u16>,
    then: Option<u16>,
    got: Vec<Got>,
    bad_signatures: usize,
}

/// A webhook receiver on a free loopback port that verifies signatures with the
/// HMAC crate directly (not with the product's signing code).
pub(crate) struct Receiver {
    pub(crate) url: String,
    inbox: Arc<Mutex<Inbox>>,
}

impl Receiver {
    pub(crate) async fn start(script: &[u16], then: Option<u16>) -> Receiver {
        let inbox = Arc::new(Mutex::new(Inbox {
            script: script.iter().copied().collect(),
            then,
            ..Inbox::default()
        }));
        let app = Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(inbox.clone());
        Receiver {
            url: serve(app).await,
            inbox,
        }
    }

    fn got(&self) -> Vec<Got> {
        self.inbox.lock().expect("inbox").got.clone()
    }

    /// Ids answered 2xx, with how many times each.
    pub(crate) fn delivered(&self) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for g in self.got().into_iter().filter(|g| g.answered == 200) {
            *out.entry(g.id).or_insert(0) += 1;
        }
        out
    }

    pub(crate) fn bad_signatures(&self) -> usize {
        self.inbox.lock().expect("inbox").bad_signatures
    }
}

async fn receive(
    State(inbox): State<Arc<Mutex<Inbox>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (id, timestamp, signature) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let key = STANDARD
        .decode(SECRET.trim_start_matches("whsec_"))
        .expect("test key");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).expect("hmac key");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    let mut inbox = inbox.lock().expect("inbox");
    let fresh = timestamp
        .parse::<i64>()
        .is_ok_and(|t| (chrono::Utc::now().timestamp() - t).abs() < 300);
    if signature != expected || !fresh {
        inbox.bad_signatures += 1;
        return (StatusCode::UNAUTHORIZED, "bad signature");
    }
    let answer = inbox.script.pop_front().or(inbox.then).unwrap_or(200);
    let event: Value = serde_json::from_slice(&body).expect("the body is JSON");
    assert_eq!(event["id"], id.as_str(), "the header and the body agree");
    inbox.got.push(Got {
        id,
        answered: answer,
        event,
    });
    let status = StatusCode::from_u16(answer).expect("status");
    (status, "gone: this endpoint was unsubscribed")
}

pub(crate) fn webhook(url: &str, attempts: u32) -> Webhook {
    let key = SigningKey::parse(&Secret::new(SECRET), Path::new("test")).expect("key");
    Webhook::new(
        url,
        key,
        Retry {
            attempts,
            base: Duration::from_millis(20),
        },
    )
    .expect("webhook")
}

pub(crate) fn options(db: &Path, hook: Option<Webhook>) -> AlertOptions {
    let mut opts = AlertOptions::new(db, chrono::Utc::now().date_naive());
    opts.webhooks = hook.into_iter().collect();
    opts
}

pub(crate) async fn sync(sb: &SandboxHandle, db: &Path) -> RunStatus {
    orgledger::sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync runs")
        .status
}

/// An organization with members whose user count is under 80 % of its limit (or
/// has none): (organization, users).
fn quiet_organization(db: &Path, dir: &Path) -> (i64, f64) {
    let mut opts = ReportOptions::new(db, chrono::Utc::now().date_naive());
    opts.names = vec!["entitlements".into()];
    opts.formats = vec![Format::Json];
    opts.out_root = dir.to_path_buf();
    let out = render::run(&opts).expect("report").dir;
    common::json_rows(&out, "entitlements")
        .into_iter()
        .find(|r| {
            r["metric"] == "users"
                && r["source"] == "organization_members"
                && r["used"].as_f64().unwrap_or(0.0) >= 1.0
                && r["pct_used"].as_f64().is_none_or(|p| p < 80.0)
        })
        .map(|r| {
            (
                r["organization_id"].as_i64().expect("id"),
                r["used"].as_f64().expect("used"),
            )
        })
        .expect("an organization with members below 80 %")
}

/// Serves organization `org` with a user limit of `limit`, and syncs it in.
async fn set_user_limit(sb: &SandboxHandle, db: &Path, org: i64, limit: f64) {
    let path = organization_path(org);
    let mut doc: Value = serde_json::from_str(&common::served(sb, &path).await).expect("JSON");
    doc["entitlementLimits"]["numberOfUsers"] = limit.into();
    common::set_override(sb, &path, 200, serde_json::to_vec(&doc).expect("body")).await;
    assert_eq!(sync(sb, db).await, RunStatus::Succeeded);
}

/// A synced tiny world in which one organization's user limit was lowered to its
/// user count (100 %: crossing 80 and 100): (sandbox, scratch dir, mirror, org).
pub(crate) async fn crossed_world() -> (SandboxHandle, tempfile::TempDir, std::path::PathBuf, i64) {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    assert_eq!(sync(&sb, &db).await, RunStatus::Succeeded);
    let (org, users) = quiet_organization(&db, dir.path());
    set_user_limit(&sb, &db, org, users).await;
    (sb, dir, db, org)
}

fn user_events(events: &[alerts::Event], org: i64) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = events
        .iter()
        .filter(|e| {
            e.kind == "entitlement.threshold"
                && e.data["organization_id"] == org
                && e.data["metric"] == "users"
        })
        .map(|e| {
            (
                e.data["threshold"].as_f64().expect("threshold"),
                e.id.clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_events_fire_once_per_crossing_and_again_after_a_limit_increase_re_arms() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    assert_eq!(sync(&sb, &db).await, RunStatus::Succeeded);
    let (org, users) = quiet_organization(&db, dir.path());
    let rx = Receiver::start(&[], None).await;
    let opts = options(&db, Some(webhook(&rx.url, 2)));

    let first = alerts::run(&opts, None).await.expect("first run");
    assert_eq!(first.mode, Mode::Advanced);
    assert!(
        user_events(&first.events, org).is_empty(),
        "org {org} is below 80 %"
    );
    let again = alerts::run(&opts, None).await.expect("second run");
    assert!(
        again.events.is_empty(),
        "nothing crossed since: {:?}",
        again.events
    );

    // The limit drops to the user count: 100 % crosses both 80 and 100.
    set_user_limit(&sb, &db, org, users).await;
    let crossed = alerts::run(&opts, None).await.expect("after the drop");
    let fired = user_events(&crossed.events, org);
    assert_eq!(
        fired.iter().map(|f| f.0).collect::<Vec<_>>(),
        vec![80.0, 100.0]
    );
    let event = crossed
        .events
        .iter()
        .find(|e| e.id == fired[1].1)
        .expect("the 100 % event");
    assert_eq!(event.data["pct_used"], 100.0);
    assert_eq!(event.data["limit"], users);
    assert_eq!(
        event.data["complete"], true,
        "no completeness columns yet: complete"
    );
    assert!(event.text.contains("passed 100 %"), "{}", event.text);
    // A repeated run with the limit unchanged sends nothing.
    let repeat = alerts::run(&opts, None).await.expect("repeat");
    assert!(user_events(&repeat.events, org).is_empty());

    // A limit increase re-arms both thresholds silently ...
    set_user_limit(&sb, &db, org, users * 100.0).await;
    let raised = alerts::run(&opts, None).await.expect("after the increase");
    assert!(user_events(&raised.events, org).is_empty());
    // ... and the next crossing fires again, as new events.
    set_user_limit(&sb, &db, org, users).await;
    let recrossed = alerts::run(&opts, None)
        .await
        .expect("after the second drop");
    let refired = user_events(&recrossed.events, org);
    assert_eq!(refired.len(), 2);
    assert!(
        refired
            .iter()
            .all(|(_, id)| !fired.iter().any(|(_, old)| old == id))
    );

    assert_eq!(rx.bad_signatures(), 0);
    let delivered = rx.delivered();
    let sent: Vec<&alerts::Event> = [&first, &again, &crossed, &repeat, &raised, &recrossed]
        .iter()
        .flat_map(|o| o.events.iter())
        .collect();
    assert_eq!(delivered.len(), sent.len(), "every event arrived");
    assert!(
        delivered.values().all(|n| *n == 1),
        "each once: {delivered:?}"
    );
    let outbox = recrossed.outbox.expect("outbox counts");
    assert_eq!((outbox.pending, outbox.failed), (0, 0));
    assert_eq!(outbox.delivered as usize, sent.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_500_then_200_gets_every_event_exactly_once_and_410_fails_them() {
    let (sb, _dir, db, _org) = crossed_world().await;

    // Three 500s: the first event's two attempts of run 1 fail (the run stops
    // sending), its first attempt of run 2 fails too, then everything is taken.
    let rx = Receiver::start(&[500, 500, 500], None).await;
    let opts = options(&db, Some(webhook(&rx.url, 2)));
    let run1 = alerts::run(&opts, None).await.expect("run 1");
    let n = run1.events.len();
    assert!(n >= 2, "the forced crossing fired");
    let after1 = run1.outbox.expect("counts");
    assert_eq!((after1.delivered, after1.pending), (0, n as u64));
    let run2 = alerts::run(&opts, None).await.expect("run 2");
    assert!(run2.events.is_empty());
    let after2 = run2.outbox.expect("counts");
    assert_eq!((after2.delivered, after2.pending), (n as u64, 0));
    let delivered = rx.delivered();
    assert_eq!(delivered.len(), n);
    assert!(delivered.values().all(|c| *c == 1), "{delivered:?}");
    for e in &run1.events {
        assert_eq!(delivered.get(&e.id), Some(&1), "{} delivered once", e.id);
    }
    assert_eq!(
        rx.got().iter().filter(|g| g.answered == 500).count(),
        3,
        "only the scripted failures were retried"
    );
    let first = &rx.got()[0];
    assert_eq!(first.event["type"], "entitlement.threshold");

    // Another mirror, a receiver that answers 410: failed for good, with the status
    // and the start of its body, and not tried again.
    let (_dir2, db2) = common::scratch();
    assert_eq!(sync(&sb, &db2).await, RunStatus::Succeeded);
    let gone = Receiver::start(&[], Some(410)).await;
    let opts = options(&db2, Some(webhook(&gone.url, 3)));
    let run = alerts::run(&opts, None).await.expect("410 run");
    let counts = run.outbox.expect("counts");
    assert_eq!(counts.failed as usize, run.events.len());
    assert_eq!(gone.got().len(), run.events.len(), "a 410 is not retried");
    let conn = common::open(&db2);
    let (status, error): (i64, String) = conn
        .query_row(
            "SELECT http_status, error FROM alert_deliveries WHERE status = 'failed' LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a failed row");
    assert_eq!(status, 410);
    assert!(error.contains("unsubscribed"), "{error}");
    alerts::run(&opts, None).await.expect("again");
    assert_eq!(
        gone.got().len(),
        run.events.len(),
        "failed events stay failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_syncs_fire_once_and_a_success_sends_recovered() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    assert_eq!(sync(&sb, &db).await, RunStatus::Succeeded);
    let mut opts = options(&db, None);
    opts.jsonl = Some(Jsonl::from_arg(&dir.path().join("alerts.jsonl")));
    opts.rules.kinds = [Kind::SyncFailing, Kind::SyncRecovered].into();
    assert!(
        alerts::run(&opts, None)
            .await
            .expect("healthy")
            .events
            .is_empty()
    );
    let path = orgledger::api::operation::PROJECTS_PATH;
    let route = format!("/sandbox/fail?path={path}&status=500");
    assert_eq!(common::admin_post(&sb, &route).await, 200);
    for n in 1..=3 {
        assert_ne!(sync(&sb, &db).await, RunStatus::Succeeded);
        let events = alerts::run(&opts, None).await.expect("run").events;
        if n < 3 {
            assert!(events.is_empty(), "{n} failing runs are not yet an alert");
        } else {
            assert_eq!(events.len(), 1);
            assert_eq!(events[0].kind, "sync.failing");
            let summary = &events[0].data["error_summary"][0];
            assert_eq!(summary["http_status"], 500, "{}", events[0].data);
            assert!(
                events[0].text.contains("last 3 syncs"),
                "{}",
                events[0].text
            );
        }
    }
    assert_ne!(sync(&sb, &db).await, RunStatus::Succeeded);
    assert!(
        alerts::run(&opts, None)
            .await
            .expect("still failing")
            .events
            .is_empty()
    );
    common::http()
        .delete(format!("{}/sandbox/fail?path={path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("heal");
    assert_eq!(sync(&sb, &db).await, RunStatus::Succeeded);
    let events = alerts::run(&opts, None).await.expect("recovered").events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "sync.recovered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_past_as_of_and_a_dry_run_change_nothing_and_jsonl_gets_one_line_per_event() {
    let (_sb, dir, db, org) = crossed_world().await;

    let mut dry = options(&db, None);
    dry.dry_run = true;
    let preview = alerts::run(&dry, None).await.expect("dry run");
    assert_eq!(preview.mode, Mode::DryRun);
    let state = |db: &Path| {
        common::count_or_zero(db, "SELECT COUNT(*) FROM alert_state")
            + common::count_or_zero(db, "SELECT COUNT(*) FROM alert_runs")
    };
    assert_eq!(state(&db), 0, "a dry run stores nothing");

    let lines = dir.path().join("alerts.jsonl");
    let mut opts = options(&db, None);
    opts.jsonl = Some(Jsonl::File(lines.clone()));
    let today = alerts::run(&opts, None).await.expect("today");
    assert_eq!(
        today.events.len(),
        preview.events.len(),
        "the dry run said what would be sent"
    );
    let ids: Vec<String> = std::fs::read_to_string(&lines)
        .expect("jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("one JSON event per line")["id"].to_string()
        })
        .collect();
    assert_eq!(ids.len(), today.events.len());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&lines)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);

    // The sandbox's clock day is before today: read-only, nothing stored or sent.
    let before = state(&db);
    let mut past = opts.clone();
    past.as_of = common::start_date();
    let listed = alerts::run(&past, None).await.expect("past day");
    assert_eq!(listed.mode, Mode::ReadOnly);
    assert!(
        !user_events(&listed.events, org).is_empty(),
        "the crossing held that day"
    );
    assert_eq!(state(&db), before);
    assert_eq!(
        std::fs::read_to_string(&lines)
            .expect("jsonl")
            .lines()
            .count(),
        ids.len()
    );
    // Today's state is intact: nothing fires again.
    assert!(
        alerts::run(&opts, None)
            .await
            .expect("today again")
            .events
            .is_empty()
    );
}

/// `text` (and a newline) in the file `name` of `dir`, readable by its owner only,
/// as secret files must be; its path as config text.
pub(crate) fn private_file(dir: &Path, name: &str, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("{text}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path.display().to_string()
}

/// `text` as the config file `orgledger.toml` of `dir`.
pub(crate) fn config_file(dir: &Path, text: &str) -> std::path::PathBuf {
    let config = dir.join("orgledger.toml");
    std::fs::write(&config, text).expect("config");
    config
}

/// A config file with `[alerts]` sending to `url`, its secret in a 0600 file.
fn alerts_config(dir: &Path, url: &str, jsonl: &Path) -> std::path::PathBuf {
    let secret = private_file(dir, "webhook-secret", SECRET);
    let jsonl = jsonl.display().to_string();
    config_file(
        dir,
        &format!(
            "[alerts]\nwebhook_url = {url:?}\nwebhook_secret_file = {secret:?}\njsonl = {jsonl:?}\n"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_sends_alerts_after_its_report_job_and_never_logs_the_secret() {
    let (sb, dir, db, org) = crossed_world().await;
    let rx = Receiver::start(&[], None).await;
    let jsonl = dir.path().join("alerts.jsonl");
    let config = alerts_config(dir.path(), &rx.url, &jsonl);
    let mut child = report_daemon(&sb, &db, &config, &dir.path().join("r"));
    let started = std::time::Instant::now();
    while !rx
        .got()
        .iter()
        .any(|g| g.event["data"]["organization_id"] == org)
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no alert from the daemon"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stderr = stop_daemon(&mut child).await;
    assert!(stderr.contains("alerts evaluated"), "{stderr}");
    assert_eq!(rx.bad_signatures(), 0);
    let key = SECRET.trim_start_matches("whsec_");
    assert!(!stderr.contains(key), "the secret is never logged");
    let lines = std::fs::read_to_string(&jsonl).expect("jsonl");
    assert!(
        lines.contains(&format!("\"organization_id\":{org}")),
        "{lines}"
    );
    let conn = common::open(&db);
    let stored: String = conn
        .query_row("SELECT group_concat(body) FROM alert_outbox", [], |r| {
            r.get(0)
        })
        .expect("outbox");
    assert!(!stored.contains(key));
    // `status` counts the outbox.
    let outbox = status_json(&db)["alert_outbox"].to_string();
    assert!(outbox.contains("delivered"), "{outbox}");
}

/// The daemon on the synced mirror `db` with `config`: no sync tick, a report job
/// every two seconds into `out`, its log on a pipe.
pub(crate) fn report_daemon(
    sb: &SandboxHandle,
    db: &Path,
    config: &Path,
    out: &Path,
) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["-v", "--config", config.to_str().expect("utf-8")])
        .args(["--db", db.to_str().expect("utf-8"), "daemon"])
        .args([
            "--sync-cron",
            "0 0 0 1 1 *",
            "--report-cron",
            "*/2 * * * * *",
        ])
        .args([
            "--whitelabel-org",
            &sb.info.whitelabel_organization_id.to_string(),
        ])
        .args(["--out", out.to_str().expect("utf-8")])
        .env("ORGLEDGER_BASE_URL", &sb.info.url)
        .env("ORGLEDGER_JWT", &sb.info.jwt)
        .env_remove("ORGLEDGER_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("daemon starts")
}

/// Stops the daemon with SIGTERM; it must exit 0. Its log.
pub(crate) async fn stop_daemon(child: &mut std::process::Child) -> String {
    let (code, _) = common::signal_and_wait(child, "-TERM").await;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert_eq!(code, Some(0), "{stderr}");
    stderr
}

/// `orgledger status --format json` of the mirror `db`.
pub(crate) fn status_json(db: &Path) -> Value {
    let status = common::bin()
        .args(["--db", db.to_str().expect("utf-8")])
        .args(["status", "--format", "json"])
        .output()
        .expect("status runs");
    serde_json::from_slice(&status.stdout).expect("status JSON")
}

/// `orgledger alerts` with `config`: (success, stderr).
pub(crate) fn alerts_cli(config: &Path, db: &Path) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"))
        .args(["--config", config.to_str().expect("utf-8")])
        .args(["--db", db.to_str().expect("utf-8"), "alerts"])
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_secret_file_others_can_read_is_refused_without_echoing_it() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, db) = common::scratch();
    let jsonl = dir.path().join("a.jsonl");
    let config = alerts_config(dir.path(), "http://127.0.0.1:9/hook", &jsonl);
    let secret = dir.path().join("webhook-secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (ok, stderr) = alerts_cli(&config, &db);
    assert!(!ok);
    assert!(stderr.contains("chmod 600"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    std::fs::write(&secret, "not-a-webhook-secret").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (ok, stderr) = alerts_cli(&config, &db);
    assert!(!ok);
    assert!(stderr.contains("whsec_"), "{stderr}");
    assert!(!stderr.contains("not-a-webhook-secret"), "{stderr}");
}

/// A webhook endpoint that answers every delivery with a redirect to `to`.
async fn redirector(to: String) -> String {
    let app = Router::new().route(
        "/hook",
        axum::routing::post(move || async move {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [("location", to.clone())],
                "",
            )
        }),
    );
    serve(app).await
}

/// Serves `app` on a free loopback port; returns the URL of its `/hook`.
pub(crate) async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/hook")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_redirect_to_another_origin_is_not_followed_with_the_signed_event() {
    let (_sb, dir, db, _org) = crossed_world().await;
    let trap = common::Trap::start().await;
    let url = redirector(format!("{}/stolen", trap.origin)).await;
    let jsonl = dir.path().join("alerts.jsonl");
    let config = alerts_config(dir.path(), &url, &jsonl);
    let (_ok, stderr) = alerts_cli(&config, &db);
    assert_eq!(trap.connections(), 0, "nothing reached the other origin");
    assert!(!stderr.contains(SECRET), "{stderr}");
    let conn = common::open(&db);
    let failed = common::count(
        &conn,
        "SELECT COUNT(*) FROM alert_deliveries WHERE status = 'failed'",
    );
    assert!(failed >= 2, "the crossings failed for good ({failed})");
    let error: String = conn
        .query_row(
            "SELECT error FROM alert_deliveries WHERE status = 'failed' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("a failed row");
    assert!(
        error.contains(&format!("redirects to {}", trap.origin)) && error.contains("not followed"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_without_a_destination_are_refused_and_nothing_is_marked_alerted() {
    let (_sb, dir, db, _org) = crossed_world().await;
    let bin = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_orgledger"));
        cmd.args(["--db", db.to_str().expect("utf-8"), "alerts"])
            .env_remove("ORGLEDGER_CONFIG");
        cmd
    };
    let refused = bin().output().expect("runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("alerts need a destination") && stderr.contains("--jsonl"),
        "{stderr}"
    );
    let dry = bin().arg("--dry-run").output().expect("runs");
    let would = String::from_utf8_lossy(&dry.stdout).lines().count();
    assert!(would >= 2, "the crossing is there to send ({would})");
    let jsonl = dir.path().join("sent.jsonl");
    let sent = bin()
        .args(["--jsonl", jsonl.to_str().expect("utf-8")])
        .output()
        .expect("runs");
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let lines = std::fs::read_to_string(&jsonl).expect("the lines were written");
    assert_eq!(lines.lines().count(), would, "every event reached the file");
}
