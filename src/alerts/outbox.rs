//! The webhook outbox (`alert_outbox`): every event bound for the webhook is stored
//! before the first attempt and stays `pending` until a 2xx (`delivered`) or a
//! refusal that retrying cannot change (`failed`), so a receiver that is down
//! gets it on a later attempt or run. The body is stored as sent the first time,
//! so a redelivery is byte for byte the same event.

use crate::alerts::events::Event;
use rusqlite::{Connection, Transaction, params};

/// The `status` section of `orgledger status`.
pub(crate) const STATUS_SQL: &str = "SELECT status, COUNT(*) AS events, SUM(attempts) AS attempts, \
    MAX(last_attempt_at) AS last_attempt FROM alert_outbox GROUP BY status ORDER BY status";

/// Queues events (an id already queued is kept as it is).
pub(crate) fn enqueue(tx: &Transaction<'_>, events: &[Event], now: &str) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare(
        "INSERT OR IGNORE INTO alert_outbox (id, type, created_at, body, status) \
         VALUES (?1, ?2, ?3, ?4, 'pending')",
    )?;
    for e in events {
        stmt.execute(params![e.id, e.kind, now, e.to_json()])?;
    }
    Ok(())
}

/// An event waiting for delivery.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub id: String,
    pub body: String,
}

/// The pending events, oldest first.
pub(crate) fn pending(conn: &Connection) -> rusqlite::Result<Vec<Pending>> {
    let mut stmt = conn.prepare(
        "SELECT id, body FROM alert_outbox WHERE status = 'pending' ORDER BY created_at, rowid",
    )?;
    stmt.query_map([], |r| {
        Ok(Pending {
            id: r.get(0)?,
            body: r.get(1)?,
        })
    })?
    .collect()
}

/// Where an event stands after this run's attempts.
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

/// Stores the outcome of `attempts` attempts on one event.
pub(crate) fn record(
    conn: &Connection,
    id: &str,
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
        "UPDATE alert_outbox SET status = ?2, attempts = attempts + ?3, last_attempt_at = ?4, \
         http_status = ?5, error = ?6, delivered_at = ?7 WHERE id = ?1",
        params![id, status, attempts, now, http, error, delivered_at],
    )?;
    Ok(())
}

/// Events per outbox status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Waiting for (another) attempt.
    pub pending: u64,
    /// Answered 2xx.
    pub delivered: u64,
    /// Refused for good.
    pub failed: u64,
}

/// Counts the outbox by status.
pub(crate) fn counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let mut stmt = conn.prepare("SELECT status, COUNT(*) FROM alert_outbox GROUP BY status")?;
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
