//! E-mail against a real SMTP server on loopback (`smtp.rs`: aiosmtpd with STARTTLS
//! on a test authority's certificate, and AUTH), through the binary and a real
//! mirror: report subscriptions and alert digests parse without defects in Python's
//! parser with both parts and the workbook as written; a 451 is retried and
//! delivered once, a 550 is final and named in `status`, a server down for a run
//! gets everything from the next run once; the daemon sends a date's report once;
//! each account manager gets only their organizations' events; `email test` names
//! the step that failed; the password is refused when others can read its file,
//! and appears nowhere.

use crate::alerts::{
    config_file, crossed_world, private_file, report_daemon, status_json, stop_daemon,
};
use crate::common;
use crate::daemon_metrics::{get, sample};
use crate::object_store::free_port;
use crate::smtp::{self, Certs, MailServer, PASSWORD, Setup, email_section, event_ids, part, text};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The as-of date of the report tests: the day the sandbox's sync observed.
const DAY: &str = "2026-06-01";

/// The binary with `config` on the mirror `db`: (exit code, stdout, stderr).
fn run(config: &Path, db: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = common::orgledger(db);
    cmd.arg("--config").arg(config).args(args);
    common::outputs(&mut cmd)
}

/// `orgledger report --as-of DAY --out <dir>/reports [extra] --send NAME`.
fn send(config: &Path, db: &Path, name: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = db.with_file_name("reports");
    let mut args = vec!["report", "--as-of", DAY, "--out", common::arg(&out)];
    args.extend_from_slice(extra);
    args.extend(["--send", name]);
    run(config, db, &args)
}

/// The server, the certificates and the `[email]` section for them.
async fn starttls_server(py: &Path, dir: &Path, setup: Setup<'_>) -> (MailServer, String) {
    let certs = Certs::make(dir);
    let server = MailServer::start(
        py,
        dir,
        Setup {
            tls: Some(&certs),
            login: true,
            ..setup
        },
    )
    .await;
    let section = email_section(server.port, Some(&certs), dir);
    (server, section)
}

/// The mail server's Python and a synced tiny world; None (with a note) without
/// the venv.
struct World {
    py: PathBuf,
    sb: orgledger_sandbox::SandboxHandle,
    dir: tempfile::TempDir,
    db: PathBuf,
}

/// A synced world; with `crossed`, one in which an organization's user limit was
/// lowered to its user count, so its thresholds fire besides the trials'.
async fn world(crossed: bool) -> Option<World> {
    let py = smtp::python()?;
    let (sb, dir, db) = if crossed {
        let (sb, dir, db, _org) = crossed_world().await;
        (sb, dir, db)
    } else {
        common::synced().await
    };
    Some(World { py, sb, dir, db })
}

/// `orgledger alerts` with `config`, which must succeed: its log.
fn alerts(config: &Path, db: &Path) -> String {
    let (code, stdout, stderr) = run(config, db, &["alerts"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    stderr
}

/// The event ids of the messages are the outbox's, each once.
fn assert_each_once(mut ids: Vec<String>, events: &BTreeMap<String, Option<i64>>) {
    ids.sort();
    let all: Vec<String> = events.keys().cloned().collect();
    assert_eq!(ids, all, "every event once: nothing lost, nothing twice");
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The entries of a zip: name → bytes.
fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).expect("entry");
            let mut out = Vec::new();
            entry.read_to_end(&mut out).expect("entry bytes");
            (entry.name().expect("entry name").to_string(), out)
        })
        .collect()
}

/// A message parsed without defects, with its headers and a multipart/alternative
/// of a plain-text and an HTML part.
fn assert_well_formed(m: &Value, to: &str) {
    assert_eq!(m["defects"], serde_json::json!([]), "defects: {m}");
    for header in ["Date", "Message-ID", "From", "To", "Subject"] {
        let value = m["headers"][header].as_str().unwrap_or("");
        assert!(!value.is_empty(), "no {header}: {m}");
    }
    assert_eq!(m["headers"]["To"], to);
    let address = to.rsplit('<').next().unwrap_or(to).trim_end_matches('>');
    assert_eq!(m["headers"]["Auto-Submitted"], "auto-generated");
    assert_eq!(
        part(m, "multipart/alternative")["children"],
        serde_json::json!(["text/plain", "text/html"])
    );
    assert_eq!(m["envelope"]["to"], serde_json::json!([address]));
}

/// The HTML part passes tidy, when tidy is installed.
fn assert_tidy(m: &Value, dir: &Path) {
    let Some(tidy) = smtp::tidy() else {
        return;
    };
    let html = part(m, "text/html")["text"].as_str().expect("html");
    let findings = smtp::tidy_findings(&tidy, html, dir);
    assert!(findings.is_empty(), "tidy: {findings}\n{html}");
}

/// Every e-mail address of a person the mirror holds.
fn people_addresses(db: &Path) -> BTreeSet<String> {
    let conn = common::open(db);
    let mut out = BTreeSet::new();
    for table in ["users", "organization_members"] {
        let sql = format!("SELECT email FROM {table} WHERE email LIKE '%@%'");
        let mut stmt = conn.prepare(&sql).expect(&sql);
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).expect(&sql);
        out.extend(rows.map(|r| r.expect("row")));
    }
    out
}

const SUBSCRIPTION: &str = "[report]\nbase_url = \"https://reports.example.com/orgledger/\"\n\n\
    [[report.subscriptions]]\nname = \"weekly\"\nrecipients = [\"finance@example.com\", \"Ops <ops@example.com>\"]\n\
    attach = [\"workbook\", \"csv\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_messages_parse_cleanly_with_both_parts_and_the_workbook_as_written() {
    let Some(World { py, dir, db, .. }) = world(false).await else {
        return;
    };
    let (server, section) = starttls_server(&py, dir.path(), Setup::default()).await;
    let config = config_file(dir.path(), &format!("{section}\n{SUBSCRIPTION}"));
    let extra = ["-vv", "--format", "csv,html"];
    let (code, stdout, stderr) = send(&config, &db, "weekly", &extra);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("sent to finance@example.com"), "{stdout}");
    assert!(
        !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
        "the password in the output"
    );

    let messages = server.messages();
    eprintln!("messages received:\n{}", smtp::describe(&messages));
    assert_eq!(messages.len(), 2, "one message per recipient");
    let folder = db.with_file_name("reports").join(DAY);
    let workbook = std::fs::read(folder.join(format!("orgledger-{DAY}.xlsx"))).expect("workbook");
    for (m, to) in messages
        .iter()
        .zip(["finance@example.com", "Ops <ops@example.com>"])
    {
        assert_well_formed(m, to);
        assert_eq!(m["envelope"]["tls"], true, "sent inside TLS");
        assert_eq!(m["envelope"]["login"], true, "logged in");
        let book = part(
            m,
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        );
        assert_eq!(book["filename"], format!("orgledger-{DAY}.xlsx"));
        assert_eq!(book["sha256"], sha256(&workbook), "the workbook as written");
        let zipped = unzip(&server.attachment(m, &format!("orgledger-{DAY}-csv.zip")));
        let csvs: Vec<PathBuf> = std::fs::read_dir(&folder)
            .expect("report folder")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        assert!(csvs.len() >= 5, "{csvs:?}");
        assert_eq!(zipped.len(), csvs.len());
        for csv in &csvs {
            let name = csv.file_name().and_then(|n| n.to_str()).expect("name");
            assert_eq!(zipped[name], std::fs::read(csv).expect("csv"), "{name}");
        }
        let body = text(m);
        assert!(
            body.contains(&format!("orgledger reports as of {DAY}")),
            "{body}"
        );
        assert!(
            body.contains(&format!(
                "The report: https://reports.example.com/orgledger/{DAY}/index.html"
            )),
            "{body}"
        );
        assert!(body.contains("Headline numbers"), "{body}");
        assert_tidy(m, dir.path());
    }
    // The same date again: recorded as sent, not sent twice.
    let (code, stdout, _) = send(&config, &db, "weekly", &extra);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("not sent again"), "{stdout}");
    assert_eq!(server.messages().len(), 2);
    let subscriptions = status_json(&db)["email_subscriptions"].clone();
    assert_eq!(
        subscriptions.as_array().map(Vec::len),
        Some(2),
        "{subscriptions}"
    );
    assert!(
        subscriptions.to_string().contains("\"delivered\""),
        "{subscriptions}"
    );
    // The password is in no row of the mirror and not in `status`.
    let mirror = std::fs::read(&db).expect("mirror bytes");
    assert!(
        !mirror
            .windows(PASSWORD.len())
            .any(|w| w == PASSWORD.as_bytes())
    );
    assert!(!status_json(&db).to_string().contains(PASSWORD));

    if let Some(chromium) = crate::html::chromium() {
        let page = dir.path().join("message.html");
        let html = part(&messages[0], "text/html")["text"]
            .as_str()
            .expect("html");
        std::fs::write(&page, html).expect("write");
        let shot = crate::html::screenshot(&chromium, &page, (900, 1100), dir.path()).await;
        assert!(
            shot.len() > 20_000,
            "the HTML part rendered blank: {} bytes",
            shot.len()
        );
        if let Some(to) = std::env::var_os("ORGLEDGER_EMAIL_SCREENSHOT") {
            std::fs::write(to, &shot).expect("screenshot copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_of_some_organizations_gets_their_rows_and_big_attachments_become_links() {
    let Some(World { py, dir, db, .. }) = world(false).await else {
        return;
    };
    let (server, section) = starttls_server(&py, dir.path(), Setup::default()).await;
    let conn = common::open(&db);
    let orgs: Vec<i64> = conn
        .prepare("SELECT organization_id FROM trials GROUP BY organization_id ORDER BY 1 LIMIT 2")
        .expect("orgs")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("ids");
    let (mine, other) = (orgs[0], orgs[1]);
    let config = config_file(
        dir.path(),
        &format!(
            "{section}\n[report]\nredact_pii = true\nbase_url = \"https://reports.example.com\"\n\n\
             [[report.subscriptions]]\nname = \"am\"\nrecipients = [\"am@example.com\"]\nattach = [\"csv\"]\n\
             organizations = [{mine}]\n\n\
             [[report.subscriptions]]\nname = \"big\"\nrecipients = [\"big@example.com\"]\n\
             attach = [\"workbook\"]\nmax_attachment_mb = 0.001\n"
        ),
    );
    for name in ["am", "big"] {
        let (code, stdout, stderr) = send(&config, &db, name, &[]);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    }
    let messages = server.messages();
    assert_eq!(messages.len(), 2);
    let am = &messages[0];
    assert_well_formed(am, "am@example.com");
    let zipped = unzip(&server.attachment(am, &format!("orgledger-{DAY}-csv.zip")));
    let trials = String::from_utf8(zipped["trials.csv"].clone()).expect("utf-8");
    let mut reader = csv::Reader::from_reader(trials.as_bytes());
    let at = reader
        .headers()
        .expect("header")
        .iter()
        .position(|h| h == "organization_id")
        .expect("organization_id");
    let kept: BTreeSet<String> = reader
        .records()
        .map(|r| r.expect("row")[at].to_string())
        .collect();
    assert_eq!(
        kept,
        BTreeSet::from([mine.to_string()]),
        "only its organization's rows"
    );
    assert!(
        !zipped.contains_key("compute_trends.csv"),
        "{:?}",
        zipped.keys()
    );
    let body = text(am);
    assert!(
        body.contains(&format!("Organizations {mine} only.")),
        "{body}"
    );
    assert!(
        body.contains("compute_trends.csv"),
        "the files left out are named: {body}"
    );
    assert!(!body.contains(&format!("(#{other})")), "{body}");
    // `redact_pii`: no person's address in the message or its files.
    let everything = format!("{body}{}{trials}", part(am, "text/html")["text"]);
    for address in people_addresses(&db) {
        assert!(!everything.contains(&address), "{address} in the message");
    }

    let big = &messages[1];
    assert_well_formed(big, "big@example.com");
    assert!(part(big, "multipart/alternative")["children"].is_array());
    assert!(
        big["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .all(|p| p["filename"].is_null()),
        "nothing attached: {big}"
    );
    let body = text(big);
    assert!(
        body.contains(&format!("orgledger-{DAY}.xlsx")) && body.contains("is not attached"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "https://reports.example.com/{DAY}/orgledger-{DAY}.xlsx"
        )),
        "{body}"
    );
}

/// `[alerts]` e-mailing every event to `recipients`, with `[email]`.
fn alerts_by_email(dir: &Path, section: &str, recipients: &[&str], extra: &str) -> PathBuf {
    let list: Vec<String> = recipients.iter().map(|r| format!("{r:?}")).collect();
    config_file(
        dir,
        &format!(
            "{section}\n[alerts]\n\n[[alerts.email]]\nrecipients = [{}]\n{extra}",
            list.join(", ")
        ),
    )
}

/// Each event id the outbox holds, with its organization (None: sync events).
fn outbox_events(db: &Path) -> BTreeMap<String, Option<i64>> {
    let conn = common::open(db);
    let mut stmt = conn
        .prepare("SELECT id, body FROM alert_outbox")
        .expect("outbox");
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .expect("query")
        .map(|row| {
            let (id, body) = row.expect("row");
            let event: Value = serde_json::from_str(&body).expect("event");
            (id, event["data"]["organization_id"].as_i64())
        })
        .collect()
}

/// Event ids per recipient over every message received.
fn ids_by_recipient(messages: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in messages {
        let to = m["headers"]["To"].as_str().expect("To").to_string();
        out.entry(to).or_default().extend(event_ids(&text(m)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_451_is_retried_within_the_run_and_the_digest_is_delivered_once() {
    let Some(World { py, dir, db, .. }) = world(true).await else {
        return;
    };
    let setup = Setup {
        data: vec![451],
        ..Setup::default()
    };
    let (server, section) = starttls_server(&py, dir.path(), setup).await;
    let config = alerts_by_email(dir.path(), &section, &["ops@example.com"], "");
    let log = alerts(&config, &db);
    assert!(log.contains("alert e-mails: 1 sent"), "{log}");
    let messages = server.messages();
    assert_eq!(messages.len(), 1, "delivered once");
    assert_well_formed(&messages[0], "ops@example.com");
    assert_tidy(&messages[0], dir.path());
    let answers: Vec<Value> = server
        .log()
        .into_iter()
        .filter(|l| l["step"] == "data")
        .map(|l| l["answer"].clone())
        .collect();
    assert_eq!(answers, [451, 250], "the 451, then the retry");
    let events = outbox_events(&db);
    assert_each_once(event_ids(&text(&messages[0])), &events);
    let row = &status_json(&db)["email_alerts"][0];
    assert_eq!(row["recipient"], "ops@example.com");
    assert_eq!(row["delivered"].as_i64(), Some(events.len() as i64));
    assert_eq!(
        (row["pending"].as_i64(), row["failed"].as_i64()),
        (Some(0), Some(0))
    );
    // The next evaluation has nothing new, and sends nothing again.
    alerts(&config, &db);
    assert_eq!(server.messages().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_550_is_final_not_retried_and_named_in_status() {
    let Some(World { py, dir, db, .. }) = world(true).await else {
        return;
    };
    let setup = Setup {
        refuse: vec![("gone@example.com", 550)],
        ..Setup::default()
    };
    let (server, section) = starttls_server(&py, dir.path(), setup).await;
    let subscription =
        "\n[[report.subscriptions]]\nname = \"weekly\"\nrecipients = [\"gone@example.com\"]\n";
    let config = config_file(
        dir.path(),
        &format!(
            "{section}\n[alerts]\n\n[[alerts.email]]\nrecipients = [\"ops@example.com\", \"gone@example.com\"]\n\
             \n[report]{subscription}"
        ),
    );
    for _ in 0..2 {
        let (code, stdout, stderr) = run(&config, &db, &["alerts"]);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    }
    assert_eq!(
        server.rcpts("gone@example.com"),
        1,
        "refused once, never retried"
    );
    let messages = server.messages();
    assert_eq!(messages.len(), 1, "ops got its digest");
    assert_eq!(messages[0]["headers"]["To"], "ops@example.com");
    let status = status_json(&db);
    let gone = status["email_alerts"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["recipient"] == "gone@example.com")
        .expect("gone@example.com in status")
        .clone();
    assert!(gone["failed"].as_i64() > Some(0), "{gone}");
    assert_eq!(gone["code"], 550, "{gone}");
    assert!(
        gone["last_error"].as_str().unwrap_or("").contains("550"),
        "{gone}"
    );
    // The report to the same address: refused, recorded, not tried again.
    let (code, stdout, _) = send(&config, &db, "weekly", &[]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("550") && stdout.contains("not retried"),
        "{stdout}"
    );
    let (code, stdout, _) = send(&config, &db, "weekly", &[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("refused for good earlier"), "{stdout}");
    assert_eq!(server.rcpts("gone@example.com"), 2);
    let sends = status_json(&db)["email_subscriptions"][0].clone();
    assert_eq!(
        (sends["status"].as_str(), sends["code"].as_i64()),
        (Some("failed"), Some(550)),
        "{sends}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_down_for_a_whole_run_gets_every_event_from_the_next_run_once() {
    let Some(World { py, dir, db, .. }) = world(true).await else {
        return;
    };
    let certs = Certs::make(dir.path());
    let port = free_port();
    let section = email_section(port, Some(&certs), dir.path());
    let config = alerts_by_email(dir.path(), &section, &["ops@example.com"], "");
    // Nothing listens: the run records the events and keeps the digest pending.
    let log = alerts(&config, &db);
    assert!(log.contains("alert e-mails: 0 sent, 1 pending"), "{log}");
    let events = outbox_events(&db);
    assert!(!events.is_empty());
    assert_eq!(
        status_json(&db)["email_alerts"][0]["pending"].as_i64(),
        Some(events.len() as i64)
    );

    let setup = Setup {
        tls: Some(&certs),
        login: true,
        port: Some(port),
        ..Setup::default()
    };
    let server = MailServer::start(&py, dir.path(), setup).await;
    alerts(&config, &db);
    alerts(&config, &db);
    let messages = server.messages();
    assert_eq!(messages.len(), 1, "one digest, sent once");
    assert_each_once(event_ids(&text(&messages[0])), &events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_managers_get_only_their_organizations_events() {
    let Some(World { py, dir, db, .. }) = world(true).await else {
        return;
    };
    // Which organizations have events: a dry run lists them without recording.
    let mut dry = orgledger::alerts::AlertOptions::new(&db, chrono::Utc::now().date_naive());
    dry.dry_run = true;
    let listed = orgledger::alerts::run(&dry, None)
        .await
        .expect("dry run")
        .events;
    let mut orgs: Vec<i64> = listed
        .iter()
        .filter_map(|e| e.data["organization_id"].as_i64())
        .collect();
    orgs.sort();
    orgs.dedup();
    assert!(orgs.len() >= 3, "events of several organizations: {orgs:?}");
    let (alice_org, bob_org) = (orgs[0], orgs[1]);
    let owners = dir.path().join("owners.csv");
    std::fs::write(
        &owners,
        format!(
            "organization_id,email\n{alice_org},alice@example.com\n{bob_org},bob@example.com\n"
        ),
    )
    .expect("owners file");
    let (server, section) = starttls_server(&py, dir.path(), Setup::default()).await;
    let config = config_file(
        dir.path(),
        &format!(
            "{section}\n[alerts]\n\n[[alerts.email]]\nkinds = [\"trial.*\", \"entitlement.threshold\"]\n\
             owners_file = {:?}\nrecipients = [\"sales@example.com\"]\n\n\
             [[alerts.email]]\nkinds = [\"sync.*\"]\nrecipients = [\"ops@example.com\"]\n",
            owners.display().to_string()
        ),
    );
    alerts(&config, &db);
    let messages = server.messages();
    eprintln!("digests received:\n{}", smtp::describe(&messages));
    let by = ids_by_recipient(&messages);
    assert_eq!(messages.len(), by.len(), "one digest per recipient");
    let events = outbox_events(&db);
    let org_of = |id: &String| events.get(id).copied().flatten();
    for (who, org) in [
        ("alice@example.com", alice_org),
        ("bob@example.com", bob_org),
    ] {
        let ids = by
            .get(who)
            .unwrap_or_else(|| panic!("{who} got nothing: {by:?}"));
        assert!(
            ids.iter().all(|id| org_of(id) == Some(org)),
            "{who}: {ids:?}"
        );
    }
    for id in &by["sales@example.com"] {
        assert!(
            ![Some(alice_org), Some(bob_org)].contains(&org_of(id)),
            "{id}"
        );
    }
    // Every event reached exactly one of them: its owner, or sales.
    assert_each_once(by.values().flatten().cloned().collect(), &events);
    for m in &messages {
        assert_well_formed(m, m["headers"]["To"].as_str().expect("To"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_sends_a_dates_report_once_whatever_the_ticks() {
    let Some(World { py, sb, dir, db }) = world(false).await else {
        return;
    };
    let setup = Setup {
        refuse: vec![("gone@example.com", 550)],
        ..Setup::default()
    };
    let (server, section) = starttls_server(&py, dir.path(), setup).await;
    let listen = free_port();
    let config = config_file(
        dir.path(),
        &format!(
            "{section}\n[daemon]\nlisten = \"127.0.0.1:{listen}\"\n\n[report]\n\n[[report.subscriptions]]\nname = \"after\"\n\
             recipients = [\"after@example.com\", \"gone@example.com\"]\n\
             attach = [\"workbook\"]\n\n\
             [[report.subscriptions]]\nname = \"own\"\nrecipients = [\"own@example.com\"]\ncron = \"*/3 * * * * *\"\n"
        ),
    );
    let mut child = report_daemon(&sb, &db, &config, &dir.path().join("r"));
    let started = std::time::Instant::now();
    while server.messages().len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no messages from the daemon"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // More ticks of both schedules for the same date.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let metrics = get(&format!("http://127.0.0.1:{listen}/metrics")).await.1;
    let stderr = stop_daemon(&mut child).await;
    // Counted once each: later ticks find them recorded, the refusal included.
    let count = |status: &str| {
        let series =
            format!("orgledger_email_messages_total{{kind=\"report\",status=\"{status}\"}}");
        sample(&metrics, &series)
    };
    assert_eq!(
        (count("sent"), count("refused")),
        (Some(2.0), Some(1.0)),
        "{metrics}"
    );
    assert_eq!(
        server.rcpts("gone@example.com"),
        1,
        "the 550 is not retried"
    );
    assert!(stderr.matches("reports written").count() >= 3, "{stderr}");
    let messages = server.messages();
    let to: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["headers"]["To"].as_str())
        .collect();
    assert_eq!(to.len(), 2, "{to:?}");
    assert!(
        to.contains(&"after@example.com") && to.contains(&"own@example.com"),
        "{to:?}"
    );
    assert!(!stderr.contains(PASSWORD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_file_others_can_read_is_refused_without_echoing_it() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, db) = common::scratch();
    let certs = Certs::make(dir.path());
    let config = config_file(
        dir.path(),
        &format!(
            "{}\n{SUBSCRIPTION}",
            email_section(9, Some(&certs), dir.path())
        ),
    );
    let password = dir.path().join("smtp-password");
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    for args in [
        &["email", "test", "--to", "ops@example.com"][..],
        &["report", "--as-of", DAY, "--send", "weekly"][..],
    ] {
        let (code, stdout, stderr) = run(&config, &db, args);
        assert_ne!(code, Some(0), "{args:?}: {stdout}");
        assert!(
            stderr.contains("chmod 600") && stderr.contains("smtp-password"),
            "{stderr}"
        );
        assert!(
            !stderr.contains(PASSWORD) && !stdout.contains(PASSWORD),
            "{stderr}"
        );
    }
}

/// `email test` with `[email]` = `section` and the rest: (exit code, stderr).
fn email_test(dir: &Path, section: &str, to: &str) -> (Option<i32>, String) {
    let config = config_file(dir, section);
    let (code, stdout, stderr) = run(
        &config,
        &dir.join("unused.db"),
        &["email", "test", "--to", to],
    );
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
    (code, format!("{stdout}{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_test_says_which_step_failed() {
    let Some(py) = smtp::python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, section) = starttls_server(
        &py,
        dir.path(),
        Setup {
            refuse: vec![("gone@example.com", 550)],
            ..Setup::default()
        },
    )
    .await;
    let (code, said) = email_test(dir.path(), &section, "ops@example.com");
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("sent a test message to ops@example.com") && said.contains("250"),
        "{said}"
    );
    assert_eq!(server.messages().len(), 1);
    assert_well_formed(&server.messages()[0], "ops@example.com");

    let (code, said) = email_test(dir.path(), &section, "gone@example.com");
    assert_eq!(code, Some(1));
    assert!(
        said.contains("refusal: the server refused the recipient gone@example.com: 550"),
        "{said}"
    );

    let wrong = section.replace("smtp-password", "wrong-password");
    private_file(dir.path(), "wrong-password", "not-the-password");
    let (code, said) = email_test(dir.path(), &wrong, "ops@example.com");
    assert_eq!(code, Some(1));
    assert!(
        said.contains("authentication: localhost refused the login of"),
        "{said}"
    );
    assert!(said.contains("535"), "{said}");

    let untrusted = section
        .lines()
        .filter(|l| !l.starts_with("ca_file"))
        .collect::<Vec<_>>()
        .join("\n");
    let (code, said) = email_test(dir.path(), &untrusted, "ops@example.com");
    assert_eq!(code, Some(1));
    assert!(
        said.contains("TLS: STARTTLS with localhost") && said.contains("certificate"),
        "{said}"
    );

    let nowhere = section.replace(
        &format!("localhost:{}", server.port),
        "mail.orgledger-test.invalid:587",
    );
    let (code, said) = email_test(dir.path(), &nowhere, "ops@example.com");
    assert_eq!(code, Some(1));
    assert!(
        said.contains("DNS: cannot resolve mail.orgledger-test.invalid"),
        "{said}"
    );

    let closed = section.replace(
        &format!("localhost:{}", server.port),
        &format!("localhost:{}", free_port()),
    );
    let (code, said) = email_test(dir.path(), &closed, "ops@example.com");
    assert_eq!(code, Some(1));
    assert!(
        said.contains("connection: cannot talk to localhost"),
        "{said}"
    );

    // A server without TLS: STARTTLS is required, so nothing is sent in clear...
    let plain = MailServer::start(
        &py,
        dir.path(),
        Setup {
            login: true,
            ..Setup::default()
        },
    )
    .await;
    let clear = email_section(plain.port, None, dir.path());
    let starttls = clear.replace("?tls=none", "");
    let (code, said) = email_test(dir.path(), &starttls, "ops@example.com");
    assert_eq!(code, Some(1));
    assert!(said.contains("does not offer STARTTLS"), "{said}");
    // ...unless asked, to a loopback address only.
    let (code, said) = email_test(dir.path(), &clear, "ops@example.com");
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(plain.messages().len(), 1);
    let remote = clear.replace("127.0.0.1", "mail.example.com");
    let (code, said) = email_test(dir.path(), &remote, "ops@example.com");
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("only to a loopback address"), "{said}");

    // TLS from the first byte (smtps://), on certificates of another authority.
    let other = dir.path().join("smtps");
    std::fs::create_dir(&other).expect("folder");
    let certs = Certs::make(&other);
    let implicit = MailServer::start(
        &py,
        dir.path(),
        Setup {
            tls: Some(&certs),
            implicit: true,
            login: true,
            ..Setup::default()
        },
    )
    .await;
    let smtps = email_section(implicit.port, Some(&certs), &other).replace("smtp://", "smtps://");
    let (code, said) = email_test(dir.path(), &smtps, "ops@example.com");
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(implicit.messages()[0]["envelope"]["tls"], true);
}
