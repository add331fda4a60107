//! Alerts to Slack and Microsoft Teams over real HTTP: loopback receivers check each
//! format's required fields (Slack: a `text` fallback and Block Kit `blocks`; Teams:
//! a message with an Adaptive Card attachment), that every webhook gets each event
//! once next to a signed Standard Webhooks receiver, that a failing one is retried
//! without the others getting duplicates, and that a chat webhook's URL (its secret)
//! is named in no log line, error, mirror row or status.

use crate::alerts::{
    Receiver, SECRET, alerts_cli, config_file, crossed_world, options, private_file, serve,
    status_json, webhook,
};
use crate::common;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use orgledger::alerts::{self, Format, Retry, Webhook};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a chat receiver saw.
#[derive(Default)]
struct ChatInbox {
    /// Statuses to answer, in order; 200 once they run out.
    script: VecDeque<u16>,
    /// Event ids answered 2xx, with how many times each.
    delivered: HashMap<String, usize>,
    /// Requests answered with a failure status.
    refused: usize,
    /// Messages without a field the format requires, with why.
    malformed: Vec<String>,
}

/// A Slack or Teams incoming webhook on a free loopback port, at `/hook/<token>`
/// as the services put a token in the path.
struct ChatReceiver {
    url: String,
    inbox: Arc<Mutex<ChatInbox>>,
}

/// The token in the chat receivers' URLs: it must appear nowhere else.
const TOKEN: &str = "T0CHANNELSECRETB0XYZ";

impl ChatReceiver {
    async fn start(format: Format, script: &[u16]) -> ChatReceiver {
        let inbox = Arc::new(Mutex::new(ChatInbox {
            script: script.iter().copied().collect(),
            ..ChatInbox::default()
        }));
        let check: fn(&Value) -> Result<(), String> = match format {
            Format::Slack => slack_message,
            Format::Teams => teams_message,
            Format::Standard => panic!("a chat format"),
        };
        let app = Router::new()
            .route(
                "/hook/{token}",
                axum::routing::post(
                    move |state: State<Arc<Mutex<ChatInbox>>>, headers: HeaderMap, body: Bytes| {
                        receive(state, headers, body, check)
                    },
                ),
            )
            .with_state(inbox.clone());
        ChatReceiver {
            url: format!("{}/{TOKEN}", serve(app).await),
            inbox,
        }
    }

    fn delivered(&self) -> HashMap<String, usize> {
        self.inbox.lock().expect("inbox").delivered.clone()
    }

    fn refused(&self) -> usize {
        self.inbox.lock().expect("inbox").refused
    }

    fn malformed(&self) -> Vec<String> {
        self.inbox.lock().expect("inbox").malformed.clone()
    }
}

async fn receive(
    State(inbox): State<Arc<Mutex<ChatInbox>>>,
    headers: HeaderMap,
    body: Bytes,
    check: fn(&Value) -> Result<(), String>,
) -> StatusCode {
    let mut inbox = inbox.lock().expect("inbox");
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            inbox.malformed.push(format!("not JSON: {e}"));
            return StatusCode::BAD_REQUEST;
        }
    };
    if headers.contains_key("webhook-signature") {
        inbox.malformed.push("a chat message is not signed".into());
    }
    if headers.get("content-type").and_then(|v| v.to_str().ok()) != Some("application/json") {
        inbox
            .malformed
            .push("content-type is not application/json".into());
    }
    if let Err(why) = check(&message) {
        inbox.malformed.push(format!("{why}: {message}"));
        return StatusCode::BAD_REQUEST;
    }
    let answer = inbox.script.pop_front().unwrap_or(200);
    if answer != 200 {
        inbox.refused += 1;
        return StatusCode::from_u16(answer).expect("status");
    }
    let Some(id) = event_id(&message) else {
        inbox.malformed.push(format!("no event id: {message}"));
        return StatusCode::BAD_REQUEST;
    };
    *inbox.delivered.entry(id).or_insert(0) += 1;
    StatusCode::OK
}

/// The `evt_` id a message shows (its footer).
fn event_id(message: &Value) -> Option<String> {
    let text = message.to_string();
    let start = text.find("evt_")?;
    let id: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (id.len() == 30).then_some(id)
}

/// The text of a Block Kit text object, checked.
fn text_object(object: &Value, max: usize) -> Result<&str, String> {
    let kind = object["type"].as_str().unwrap_or("");
    if !matches!(kind, "plain_text" | "mrkdwn") {
        return Err(format!("a text object of type {kind:?}"));
    }
    let text = object["text"]
        .as_str()
        .ok_or("a text object without text")?;
    if text.is_empty() || text.chars().count() > max {
        return Err(format!(
            "a text of {} characters (1 to {max})",
            text.chars().count()
        ));
    }
    Ok(text)
}

/// Slack's required fields: a non-empty `text` fallback and `blocks` of Block Kit
/// types within Slack's limits.
fn slack_message(message: &Value) -> Result<(), String> {
    let fallback = message["text"].as_str().unwrap_or("");
    if fallback.is_empty() {
        return Err("no text fallback".into());
    }
    let blocks = message["blocks"].as_array().ok_or("no blocks")?;
    if blocks.is_empty() || blocks.len() > 50 {
        return Err(format!("{} blocks", blocks.len()));
    }
    for block in blocks {
        match block["type"].as_str().unwrap_or("") {
            "header" => {
                if block["text"]["type"] != "plain_text" {
                    return Err("a header's text must be plain_text".into());
                }
                text_object(&block["text"], 150)?;
            }
            "section" => {
                let fields = block["fields"].as_array();
                if block["text"].is_null() && fields.is_none() {
                    return Err("a section without text or fields".into());
                }
                if !block["text"].is_null() {
                    text_object(&block["text"], 3000)?;
                }
                if let Some(fields) = fields {
                    if fields.is_empty() || fields.len() > 10 {
                        return Err(format!("{} fields", fields.len()));
                    }
                    for field in fields {
                        text_object(field, 2000)?;
                    }
                }
            }
            "context" => {
                let elements = block["elements"]
                    .as_array()
                    .ok_or("context without elements")?;
                if elements.is_empty() || elements.len() > 10 {
                    return Err(format!("{} context elements", elements.len()));
                }
                for element in elements {
                    text_object(element, 2000)?;
                }
            }
            "divider" => {}
            other => return Err(format!("block type {other:?}")),
        }
    }
    Ok(())
}

/// Teams' required fields: a `message` whose attachment is an Adaptive Card.
fn teams_message(message: &Value) -> Result<(), String> {
    if message["type"] != "message" {
        return Err("type is not message".into());
    }
    let attachments = message["attachments"].as_array().ok_or("no attachments")?;
    let [attachment] = attachments.as_slice() else {
        return Err(format!("{} attachments", attachments.len()));
    };
    if attachment["contentType"] != "application/vnd.microsoft.card.adaptive" {
        return Err("the attachment is not an Adaptive Card".into());
    }
    let card = &attachment["content"];
    if card["type"] != "AdaptiveCard" || !card["version"].is_string() {
        return Err("the content is not an AdaptiveCard with a version".into());
    }
    let body = card["body"].as_array().ok_or("a card without body")?;
    for element in body {
        match element["type"].as_str().unwrap_or("") {
            "TextBlock" if element["text"].as_str().is_some_and(|t| !t.is_empty()) => {}
            "FactSet" => {
                let facts = element["facts"]
                    .as_array()
                    .ok_or("a FactSet without facts")?;
                if !facts
                    .iter()
                    .all(|f| f["title"].is_string() && f["value"].is_string())
                {
                    return Err("a fact without title or value".into());
                }
            }
            other => return Err(format!("card element {other:?} without its fields")),
        }
    }
    Ok(())
}

/// A chat webhook named `name`, trying `attempts` times per run.
fn chat(name: &str, url: &str, format: Format, attempts: u32) -> Webhook {
    let retry = Retry {
        attempts,
        base: Duration::from_millis(20),
    };
    Webhook::chat(url, format, retry)
        .expect("chat webhook")
        .named(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_teams_and_signed_webhooks_each_get_every_event_once_in_their_format() {
    let (_sb, _dir, db, org) = crossed_world().await;
    let signed = Receiver::start(&[], None).await;
    let slack = ChatReceiver::start(Format::Slack, &[]).await;
    let teams = ChatReceiver::start(Format::Teams, &[]).await;
    let mut opts = options(&db, Some(webhook(&signed.url, 2)));
    opts.webhooks
        .push(chat("ops", &slack.url, Format::Slack, 2));
    opts.webhooks
        .push(chat("finance", &teams.url, Format::Teams, 2));

    let run = alerts::run(&opts, None).await.expect("run");
    let n = run.events.len();
    assert!(
        run.events.iter().any(|e| e.data["organization_id"] == org),
        "the forced crossing fired"
    );
    let counts = run.outbox.expect("counts");
    assert_eq!((counts.delivered, counts.pending), (3 * n as u64, 0));
    for (name, got) in [("slack", slack.delivered()), ("teams", teams.delivered())] {
        assert_eq!(got.len(), n, "{name}: every event");
        assert!(got.values().all(|c| *c == 1), "{name}: each once: {got:?}");
    }
    assert!(slack.malformed().is_empty(), "{:?}", slack.malformed());
    assert!(teams.malformed().is_empty(), "{:?}", teams.malformed());
    assert_eq!(signed.bad_signatures(), 0);
    assert_eq!(signed.delivered().len(), n, "the signed receiver as before");

    // The messages carry the event's text and figures, as stored for redelivery.
    let conn = common::open(&db);
    let event = run
        .events
        .iter()
        .find(|e| e.data["organization_id"] == org)
        .expect("the crossing");
    let body = |webhook: &str| -> Value {
        let text: String = conn
            .query_row(
                "SELECT body FROM alert_deliveries WHERE event_id = ?1 AND webhook = ?2",
                [&event.id, webhook],
                |r| r.get(0),
            )
            .expect("a delivery");
        serde_json::from_str(&text).expect("JSON")
    };
    let slack_body = body("ops");
    assert!(
        slack_body["blocks"][1]["text"]["text"] == event.text.as_str(),
        "{slack_body}"
    );
    assert!(
        slack_body.to_string().contains("Threshold %: "),
        "{slack_body}"
    );
    let card = &body("finance")["attachments"][0]["content"];
    assert_eq!(card["body"][1]["text"], event.text.as_str());
    assert!(card.to_string().contains("\"title\":\"% used\""), "{card}");
    assert_eq!(body("default"), serde_json::to_value(event).expect("event"));

    // Nothing new, nothing sent again.
    let again = alerts::run(&opts, None).await.expect("again");
    assert!(again.events.is_empty());
    assert!(slack.delivered().values().all(|c| *c == 1));
    assert!(teams.delivered().values().all(|c| *c == 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_chat_webhook_is_retried_later_and_the_others_get_no_duplicates() {
    let (_sb, _dir, db, _org) = crossed_world().await;
    // Slack is down for the first run (two attempts on the oldest event, then the
    // run stops sending to it); Teams takes everything at once.
    let slack = ChatReceiver::start(Format::Slack, &[503, 503]).await;
    let teams = ChatReceiver::start(Format::Teams, &[]).await;
    let mut opts = options(&db, None);
    opts.webhooks
        .push(chat("slack", &slack.url, Format::Slack, 2));
    opts.webhooks
        .push(chat("teams", &teams.url, Format::Teams, 2));

    let run1 = alerts::run(&opts, None).await.expect("run 1");
    let n = run1.events.len();
    assert!(n >= 2, "the forced crossing fired");
    let after1 = run1.outbox.expect("counts");
    assert_eq!((after1.delivered, after1.pending), (n as u64, n as u64));
    assert!(slack.delivered().is_empty());
    assert_eq!(slack.refused(), 2);
    assert_eq!(teams.delivered().len(), n);

    let run2 = alerts::run(&opts, None).await.expect("run 2");
    assert!(run2.events.is_empty());
    let after2 = run2.outbox.expect("counts");
    assert_eq!((after2.delivered, after2.pending), (2 * n as u64, 0));
    for (name, rx) in [("slack", &slack), ("teams", &teams)] {
        let got = rx.delivered();
        assert_eq!(got.len(), n, "{name}: every event");
        assert!(got.values().all(|c| *c == 1), "{name}: each once: {got:?}");
        for e in &run1.events {
            assert_eq!(got.get(&e.id), Some(&1), "{name}: {} once", e.id);
        }
        assert!(rx.malformed().is_empty(), "{name}: {:?}", rx.malformed());
    }
    let conn = common::open(&db);
    let slack_attempts = common::count(
        &conn,
        "SELECT SUM(attempts) FROM alert_deliveries WHERE webhook = 'slack'",
    );
    assert_eq!(
        slack_attempts,
        n as i64 + 2,
        "the failed attempts are counted"
    );
}

/// A config with a signed webhook and `[[alerts.webhooks]]` for Slack (its URL in
/// a 0600 file) and Teams (one that does not answer).
fn channels_config(dir: &Path, signed: &str, slack: &str, teams: &str) -> std::path::PathBuf {
    let secret = private_file(dir, "webhook-secret", SECRET);
    let slack_file = private_file(dir, "slack-url", slack);
    config_file(
        dir,
        &format!(
            "[alerts]\nwebhook_url = {signed:?}\nwebhook_secret_file = {secret:?}\n\n\
             [[alerts.webhooks]]\nname = \"ops\"\nformat = \"slack\"\nurl_file = {slack_file:?}\n\n\
             [[alerts.webhooks]]\nformat = \"teams\"\nurl = {teams:?}\n"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_webhooks_url_is_named_in_no_log_error_mirror_row_or_status() {
    let (_sb, dir, db, _org) = crossed_world().await;
    let signed = Receiver::start(&[], None).await;
    let slack = ChatReceiver::start(Format::Slack, &[]).await;
    // A Teams URL nothing listens on: its error must not name it.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        format!("http://{addr}/webhookb2/{TOKEN}")
    };
    let config = channels_config(dir.path(), &signed.url, &slack.url, &closed);
    let out = common::bin()
        .args(["-vv", "--config", config.to_str().expect("utf-8")])
        .args(["--db", db.to_str().expect("utf-8"), "alerts"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!slack.delivered().is_empty(), "{stderr}");
    assert!(!signed.delivered().is_empty(), "{stderr}");
    assert!(
        stderr.contains("pending"),
        "the Teams webhook is retried later: {stderr}"
    );
    assert!(!stderr.contains(TOKEN), "{stderr}");
    assert!(
        stderr.contains("teams"),
        "the failing webhook is named: {stderr}"
    );

    let conn = common::open(&db);
    let stored: String = conn
        .query_row(
            "SELECT group_concat(webhook || format || body || coalesce(error, ''), ' ') \
             FROM alert_deliveries",
            [],
            |r| r.get(0),
        )
        .expect("deliveries");
    assert!(
        stored.contains("ops") && stored.contains("teams"),
        "{stored}"
    );
    assert!(!stored.contains(TOKEN), "{stored}");
    let pending = common::count(
        &conn,
        "SELECT COUNT(*) FROM alert_deliveries WHERE webhook = 'teams' AND status = 'pending'",
    );
    assert!(pending >= 1);
    let status = status_json(&db)["alert_outbox"].to_string();
    assert!(
        status.contains("teams") && !status.contains(TOKEN),
        "{status}"
    );

    // A URL that is not one is refused naming the webhook, not echoing it.
    std::fs::write(
        dir.path().join("slack-url"),
        format!("hooks.slack.com/{TOKEN}\n"),
    )
    .expect("write");
    let (ok, stderr) = alerts_cli(&config, &db);
    assert!(!ok);
    assert!(stderr.contains("\"ops\""), "{stderr}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

/// A status to answer with, and the `Retry-After` seconds to send with it.
type Answer = (u16, Option<&'static str>);

/// A receiver that answers from a script of statuses with an optional
/// `Retry-After`, 200 once the script runs out, and notes when each POST came.
struct Scripted {
    url: String,
    arrivals: Arc<Mutex<Vec<std::time::Instant>>>,
}

impl Scripted {
    async fn start(script: &[Answer]) -> Scripted {
        let script: Arc<Mutex<VecDeque<Answer>>> =
            Arc::new(Mutex::new(script.iter().copied().collect()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let seen = arrivals.clone();
        let app = Router::new().route(
            "/hook",
            axum::routing::post(move || {
                let (script, seen) = (script.clone(), seen.clone());
                async move {
                    seen.lock()
                        .expect("arrivals")
                        .push(std::time::Instant::now());
                    let next = script.lock().expect("script").pop_front();
                    let (status, retry_after) = next.unwrap_or((200, None));
                    let mut headers = HeaderMap::new();
                    if let Some(secs) = retry_after {
                        headers.insert("retry-after", secs.parse().expect("header value"));
                    }
                    (StatusCode::from_u16(status).expect("status"), headers, "")
                }
            }),
        );
        Scripted {
            url: serve(app).await,
            arrivals,
        }
    }

    /// The waits between one POST and the next.
    fn gaps(&self) -> Vec<Duration> {
        let arrivals = self.arrivals.lock().expect("arrivals");
        arrivals.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// Delivers one event to a receiver answering `script`, with four attempts 20 ms
/// apart at first; returns the outcome, the attempts and the receiver.
async fn deliver_to(script: &[Answer]) -> (orgledger::alerts::outbox::Delivery, u32, Scripted) {
    let receiver = Scripted::start(script).await;
    let hook = chat("scripted", &receiver.url, Format::Slack, 4);
    let (outcome, attempts) = hook.deliver("evt_1", r#"{"text":"evt_1"}"#).await;
    (outcome, attempts, receiver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_retried_like_the_api_client_429_and_5xx_later_other_4xx_never() {
    use orgledger::alerts::outbox::Delivery;
    // 429 with Retry-After: the next attempt waits it out, far past the 20 ms backoff.
    let (outcome, attempts, receiver) = deliver_to(&[(429, Some("1")), (503, None)]).await;
    assert!(matches!(outcome, Delivery::Delivered(200)), "{outcome:?}");
    assert_eq!(attempts, 3);
    let gaps = receiver.gaps();
    assert!(
        gaps[0] >= Duration::from_secs(1),
        "Retry-After: 1 waited: {gaps:?}"
    );
    assert!(
        gaps[1] < Duration::from_secs(1),
        "a 503 waits the backoff: {gaps:?}"
    );
    // 408 and 5xx are retried until the attempts run out, then left pending.
    let (outcome, attempts, _) =
        deliver_to(&[(408, None), (500, None), (502, None), (504, None)]).await;
    assert!(
        matches!(
            outcome,
            Delivery::Pending {
                status: Some(504),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(attempts, 4);
    // Any other 4xx is final at once.
    for status in [400, 401, 403, 404, 410] {
        let (outcome, attempts, receiver) = deliver_to(&[(status, None)]).await;
        assert!(
            matches!(outcome, Delivery::Failed { status: s, .. } if s == status),
            "{status}: {outcome:?}"
        );
        assert_eq!((attempts, receiver.gaps().len()), (1, 0), "{status}");
    }
    // A Retry-After longer than a run waits leaves the event to the next run.
    let started = std::time::Instant::now();
    let (outcome, attempts, _) = deliver_to(&[(429, Some("3600"))]).await;
    assert!(
        matches!(
            outcome,
            Delivery::Pending {
                status: Some(429),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(attempts, 1);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not waited out"
    );
}
