//! The webhook outbox: every event bound for a webhook is stored (`alert_outbox`,
//! one row per event) before the first attempt, with one delivery per webhook
//! configured at the time (`alert_deliveries`). A delivery stays `pending` until a
//! 2xx (`delivered`) or a refusal that retrying cannot change (`failed`), so a
//! receiver that is down gets it on a later attempt or run while the others are not
//! sent it again. Each delivery's body is stored as rendered for its webhook's
//! format the first time, so a redelivery is byte for byte the same message.
//! Webhooks are named in the mirror, never by their URL (a chat tool's URL is its
//! secret).
//!
//! E-mail recipients are destinations beside the webhooks: an event routed to an
//! address ([`MailRoute`]) gets a delivery named `email:<address>` holding the
//! event, queued in the same transaction; the e-mail room sends each address's
//! pending events as one digest and records the outcome on each of them.

use crate::alerts::events::Event;
use crate::alerts::webhook::Webhook;
use rusqlite::{Connection, Transaction, params};
use std::collections::BTreeMap;

/// The `status` section of `orgledger status`.
pub(crate) const STATUS_SQL: &str = "SELECT webhook, status, COUNT(*) AS events, \
    SUM(attempts) AS attempts, MAX(last_attempt_at) AS last_attempt FROM alert_deliveries \
    GROUP BY webhook, status ORDER BY webhook, status";

/// The alert e-mails of each recipient: what was delivered, what waits, what was
/// refused for good, and the last refusal or error with its SMTP code.
pub(crate) const MAIL_STATUS_SQL: &str = "SELECT substr(d.webhook, 7) AS recipient, \
    SUM(d.status = 'delivered') AS delivered, SUM(d.status = 'pending') AS pending, \
    SUM(d.status = 'failed') AS failed, MAX(d.delivered_at) AS last_sent, \
    MAX(d.last_attempt_at) AS last_attempt, \
    (SELECT f.http_status FROM alert_deliveries f WHERE f.webhook = d.webhook AND f.error IS NOT NULL \
     AND f.status != 'delivered' ORDER BY f.last_attempt_at DESC LIMIT 1) AS code, \
    (SELECT f.error FROM alert_deliveries f WHERE f.webhook = d.webhook AND f.error IS NOT NULL \
     AND f.status != 'delivered' ORDER BY f.last_attempt_at DESC LIMIT 1) AS last_error \
    FROM alert_deliveries d WHERE d.webhook LIKE 'email:%' GROUP BY d.webhook ORDER BY d.webhook";

/// How `alert_deliveries` names an e-mail recipient's deliveries; a webhook's name
/// may not start so.
pub const MAIL_PREFIX: &str = "email:";

/// The format of an e-mail delivery: its body is the event's JSON, put in a digest
/// with the recipient's other events when it is sent.
const MAIL_FORMAT: &str = "email";

/// Who gets an event by e-mail. The e-mail room decides (by kind and organization);
/// the outbox queues a delivery for each address in the transaction that records
/// the event, so no event is lost between the evaluation and the e-mail.
pub trait MailRoute: Send + Sync + std::fmt::Debug {
    /// The addresses `event` goes to (none: it is not e-mailed).
    fn recipients(&self, event: &Event) -> Vec<String>;

    /// Every address it may name: pending deliveries to others wait until an
    /// address is configured again, as a webhook's do.
    fn addresses(&self) -> Vec<String>;
}

/// The destination name of `address`'s deliveries.
pub fn mailbox(address: &str) -> String {
    format!("{MAIL_PREFIX}{address}")
}

/// Queues events for every webhook and e-mail recipient (an event already queued
/// for one is kept as it is).
pub(crate) fn enqueue(
    tx: &Transaction<'_>,
    events: &[Event],
    webhooks: &[Webhook],
    mail: Option<&dyn MailRoute>,
    now: &str,
) -> rusqlite::Result<()> {
    let mut event_stmt = tx.prepare(
        "INSERT OR IGNORE INTO alert_outbox (id, type, created_at, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut delivery_stmt = tx.prepare(
        "INSERT OR IGNORE INTO alert_deliveries (event_id, webhook, format, body, status) \
         VALUES (?1, ?2, ?3, ?4, 'pending')",
    )?;
    for e in events {
        event_stmt.execute(params![e.id, e.kind, now, e.to_json()])?;
        for hook in webhooks {
            let format = hook.format();
            delivery_stmt.execute(params![e.id, hook.name(), format.as_str(), format.body(e)])?;
        }
        let mut recipients = mail.map(|route| route.recipients(e)).unwrap_or_default();
        recipients.sort();
        recipients.dedup();
        for address in recipients {
            delivery_stmt.execute(params![e.id, mailbox(&address), MAIL_FORMAT, e.to_json()])?;
        }
    }
    Ok(())
}

/// A delivery waiting for its webhook.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub id: String,
    pub body: String,
}

/// The webhook's pending deliveries, oldest event first.
pub(crate) fn pending(conn: &Connection, webhook: &str) -> rusqlite::Result<Vec<Pending>> {
    let mut stmt = conn.prepare(
        "SELECT d.event_id, d.body FROM alert_deliveries d \
         JOIN alert_outbox e ON e.id = d.event_id \
         WHERE d.webhook = ?1 AND d.status = 'pending' ORDER BY e.created_at, e.rowid",
    )?;
    stmt.query_map([webhook], |r| {
        Ok(Pending {
            id: r.get(0)?,
            body: r.get(1)?,
        })
    })?
    .collect()
}

/// The e-mail deliveries waiting, by address, each address's events oldest first
/// (the body is the event's JSON).
pub(crate) fn pending_mail(conn: &Connection) -> rusqlite::Result<BTreeMap<String, Vec<Pending>>> {
    let mut stmt = conn.prepare(
        "SELECT substr(d.webhook, 7), d.event_id, d.body FROM alert_deliveries d \
         JOIN alert_outbox e ON e.id = d.event_id \
         WHERE d.webhook LIKE 'email:%' AND d.status = 'pending' ORDER BY e.created_at, e.rowid",
    )?;
    let mut by_address: BTreeMap<String, Vec<Pending>> = BTreeMap::new();
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Pending {
                id: r.get(1)?,
                body: r.get(2)?,
            },
        ))
    })?;
    for row in rows {
        let (address, pending) = row?;
        by_address.entry(address).or_default().push(pending);
    }
    Ok(by_address)
}

/// Stores one outcome on several events' deliveries to `destination` at once: the
/// events of one digest, sent or not together.
pub(crate) fn record_all(
    conn: &mut Connection,
    (ids, destination): (&[String], &str),
    outcome: &Delivery,
    attempts: u32,
    now: &str,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for id in ids {
        record(&tx, (id, destination), outcome, attempts, now)?;
    }
    tx.commit()
}

/// Where a delivery stands after this run's attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A 2xx answer.
    Delivered(u16),
    /// A 4xx other than 408/429 (an SMTP 5xx for an e-mail): retrying would get
    /// the same answer.
    Failed {
        /// The HTTP status (the SMTP reply code).
        status: u16,
        /// The start of the response body.
        excerpt: String,
    },
    /// Still to be delivered (5xx, 408, 429, no answer; an SMTP 4xx or a server
    /// that cannot be reached).
    Pending {
        /// The last HTTP status (SMTP reply code), if the receiver answered.
        status: Option<u16>,
        /// What went wrong.
        error: String,
    },
}

/// Stores the outcome of `attempts` attempts on one event's delivery to `webhook`.
pub(crate) fn record(
    conn: &Connection,
    (id, webhook): (&str, &str),
    outcome: &Delivery,
    attempts: u32,
    now: &str,
) -> rusqlite::Result<()> {
    let (status, http, error, delivered_at) = outcome.columns(now);
    conn.execute(
        "UPDATE alert_deliveries SET status = ?3, attempts = attempts + ?4, last_attempt_at = ?5, \
         http_status = ?6, error = ?7, delivered_at = ?8 WHERE event_id = ?1 AND webhook = ?2",
        params![
            id,
            webhook,
            status,
            attempts,
            now,
            http,
            error,
            delivered_at
        ],
    )?;
    Ok(())
}

impl Delivery {
    /// How a record stores it: status (`delivered`, `failed`, `pending`), the last
    /// code, the error, and when delivered (`now`, if it was).
    pub(crate) fn columns<'a>(
        &'a self,
        now: &'a str,
    ) -> (&'static str, Option<u16>, Option<&'a str>, Option<&'a str>) {
        match self {
            Delivery::Delivered(code) => ("delivered", Some(*code), None, Some(now)),
            Delivery::Failed { status, excerpt } => {
                ("failed", Some(*status), Some(excerpt.as_str()), None)
            }
            Delivery::Pending { status, error } => ("pending", *status, Some(error.as_str()), None),
        }
    }
}

/// Deliveries (one per event and webhook) per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Waiting for (another) attempt.
    pub pending: u64,
    /// Answered 2xx.
    pub delivered: u64,
    /// Refused for good.
    pub failed: u64,
}

/// Counts the deliveries by status, over every webhook.
pub(crate) fn counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let mut stmt = conn.prepare("SELECT status, COUNT(*) FROM alert_deliveries GROUP BY status")?;
    let mut counts = Counts::default();
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (status, n) = row?;
        let n = n.max(0) as u64;
        match status.as_str() {
            "pending" => counts.pending = n,
            "delivered" => counts.delivered = n,
            _ => counts.failed = n,
        }
    }
    Ok(counts)
}
