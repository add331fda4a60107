//! The webhook outbox: every event bound for a webhook is stored (`alert_outbox`,
//! one row per event) before the first attempt, with one delivery per webhook
//! configured at the time (`alert_deliveries`). A delivery stays `pending` until a
//! 2xx (`delivered`) or a refusal that retrying cannot change (`failed`), so a
//! receiver that is down gets it on a later attempt or run while the others are not
//! sent it again. Each delivery's body is stored as rendered for its webhook's
//! format the first time, so a redelivery is byte for byte the same message.
//! Webhooks are named in the mirror, never by their URL (a chat tool's URL is its
//! secret).

use crate::alerts::events::Event;
use crate::alerts::webhook::Webhook;
use rusqlite::{Connection, Transaction, params};

/// The `status` section of `orgledger status`.
pub(crate) const STATUS_SQL: &str = "SELECT webhook, status, COUNT(*) AS events, \
    SUM(attempts) AS attempts, MAX(last_attempt_at) AS last_attempt FROM alert_deliveries \
    GROUP BY webhook, status ORDER BY webhook, status";

/// Queues events for every webhook (an event already queued for a webhook is kept
/// as it is).
pub(crate) fn enqueue(
    tx: &Transaction<'_>,
    events: &[Event],
    webhooks: &[Webhook],
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

/// Where a delivery stands after this run's attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A 2xx answer.
    Delivered(u16),
    /// A 4xx other than 408/429: retrying would get the same answer.
    Failed {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        excerpt: String,
    },
    /// Still to be delivered (5xx, 408, 429, no answer).
    Pending {
        /// The last HTTP status, if the receiver answered.
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
    let (status, http, error, delivered_at) = match outcome {
        Delivery::Delivered(s) => ("delivered", Some(*s), None, Some(now)),
        Delivery::Failed { status, excerpt } => {
            ("failed", Some(*status), Some(excerpt.as_str()), None)
        }
        Delivery::Pending { status, error } => ("pending", *status, Some(error.as_str()), None),
    };
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
