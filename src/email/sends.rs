//! The record of report messages (`email_sends`): one row per subscription, as-of
//! date and recipient. A recipient whose row says `delivered` (or `failed`: refused for
//! good) is not sent that date's report again, across daemon restarts and repeated
//! report runs; a row still `pending` is tried by the next run of the same date,
//! and a later date's report supersedes it.

use crate::alerts::outbox::Delivery;
use rusqlite::{Connection, OptionalExtension, params};

/// `status`: the last as-of date of each subscription, recipient by recipient.
pub(crate) const STATUS_SQL: &str = "SELECT subscription, as_of, recipient, status, attempts, \
    last_attempt_at AS last_attempt, sent_at, smtp_code AS code, error FROM email_sends s \
    WHERE as_of = (SELECT MAX(as_of) FROM email_sends t WHERE t.subscription = s.subscription) \
    ORDER BY subscription, recipient";

/// Where one recipient's message of a date stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Never tried, or tried and still to be sent.
    Due,
    /// Sent at this time.
    Sent(String),
    /// Refused for good, with the refusal.
    Failed(String),
}

/// The standing of `recipient`'s message of `as_of`.
pub(crate) fn standing(
    conn: &Connection,
    (subscription, as_of, recipient): (&str, &str, &str),
) -> rusqlite::Result<Standing> {
    let row: Option<(String, Option<String>, Option<String>)> = conn
        .query_row(
            "SELECT status, sent_at, error FROM email_sends \
             WHERE subscription = ?1 AND as_of = ?2 AND recipient = ?3",
            params![subscription, as_of, recipient],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(match row {
        Some((status, sent_at, _)) if status == "delivered" => {
            Standing::Sent(sent_at.unwrap_or_default())
        }
        Some((status, _, error)) if status == "failed" => {
            Standing::Failed(error.unwrap_or_default())
        }
        _ => Standing::Due,
    })
}

/// Records an attempt's outcome (the row is made on the first attempt), and marks
/// the pending rows of the subscription's earlier dates superseded once a date's
/// message went out.
pub(crate) fn record(
    conn: &mut Connection,
    (subscription, as_of, recipient): (&str, &str, &str),
    outcome: &Delivery,
    attempts: u32,
    now: &str,
) -> rusqlite::Result<()> {
    let (status, code, error, sent_at) = outcome.columns(now);
    let tx = conn.transaction()?;
    tx.execute(
        "INSERT INTO email_sends (subscription, as_of, recipient, status, attempts, last_attempt_at, \
         smtp_code, error, sent_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (subscription, as_of, recipient) DO UPDATE SET status = excluded.status, \
         attempts = attempts + excluded.attempts, last_attempt_at = excluded.last_attempt_at, \
         smtp_code = excluded.smtp_code, error = excluded.error, sent_at = excluded.sent_at",
        params![subscription, as_of, recipient, status, attempts, now, code, error, sent_at],
    )?;
    if status == "delivered" {
        tx.execute(
            "UPDATE email_sends SET status = 'superseded' WHERE subscription = ?1 AND recipient = ?2 \
             AND as_of < ?3 AND status = 'pending'",
            params![subscription, recipient, as_of],
        )?;
    }
    tx.commit()
}
