//! Alerts by e-mail: one message per recipient and run, a digest of the events the
//! outbox holds for that address, most urgent first.
//!
//! The events were queued for each address by the evaluation that found them, in
//! its transaction (`alerts::outbox`, routed by [`crate::email::routing`]). Here
//! each address's pending events become one message; the outcome is recorded on
//! every one of them at once, before the next evaluation, so an event is in one
//! delivered digest per address: never lost (a digest not sent stays pending and
//! its events join the next run's), never twice. A 5xx answer to the recipient or
//! the message marks them failed for good; a server that cannot be reached, or
//! that refuses the login, stops the run's sending and leaves them pending.

use crate::alerts::events::Event;
use crate::alerts::outbox::{self, Delivery, MailRoute};
use crate::email::layout::{self, NOTE};
use crate::email::message::{self, Content, address};
use crate::email::smtp::Mailer;
use crate::email::{EmailError, Tally};
use crate::mirror;
use lettre::message::Mailbox;
use maud::html;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::path::Path;

/// Sends every configured address its pending events as one digest.
pub async fn deliver(
    db: &Path,
    mailer: &Mailer,
    route: &dyn MailRoute,
) -> Result<Tally, EmailError> {
    let sql = |cause| EmailError::Sql {
        db: db.to_path_buf(),
        cause,
    };
    let mut conn = mirror::open_rw(db)?;
    let configured: BTreeSet<String> = route.addresses().into_iter().collect();
    let mut tally = Tally::default();
    for (to, pending) in outbox::pending_mail(&conn).map_err(sql)? {
        // An address no longer configured keeps its events until it is again.
        if !configured.contains(&to) {
            continue;
        }
        let ids: Vec<String> = pending.iter().map(|p| p.id.clone()).collect();
        let destination = outbox::mailbox(&to);
        let events: Result<Vec<Event>, _> = pending
            .iter()
            .map(|p| serde_json::from_str(&p.body))
            .collect();
        let events = match events {
            Ok(events) => events,
            Err(e) => {
                // Only this build writes these bodies; one that does not read back
                // cannot be sent, and is said so rather than retried for ever.
                let unreadable = Delivery::Failed {
                    status: 0,
                    excerpt: format!("a stored event does not read back: {e}"),
                };
                let now = mirror::now_text();
                outbox::record_all(&mut conn, (&ids, &destination), &unreadable, 0, &now)
                    .map_err(sql)?;
                tally.add(&unreadable);
                continue;
            }
        };
        let recipient = address(&to, "an alert recipient")?;
        let key = format!("alerts/{to}/{}", ids.join(","));
        let mailbox = Mailbox::new(None, recipient.clone());
        let bytes = message::build(mailer.from(), &mailbox, &key, &compose(&to, events))?;
        let sent = mailer.send(&recipient, &bytes).await;
        let now = mirror::now_text();
        outbox::record_all(
            &mut conn,
            (&ids, &destination),
            &sent.outcome,
            sent.attempts,
            &now,
        )
        .map_err(sql)?;
        let events = ids.len();
        tally.add(&sent.outcome);
        match (&sent.outcome, &sent.failure) {
            (Delivery::Delivered(_), _) => {
                tracing::info!(to = %to, events, attempts = sent.attempts, "alert digest e-mailed");
            }
            (Delivery::Failed { excerpt, .. }, _) => {
                tracing::warn!(to = %to, events, "the mail server refused an alert digest for good: {excerpt}");
            }
            (Delivery::Pending { error, .. }, failure) => {
                tracing::warn!(to = %to, events, attempts = sent.attempts, "alert digest not sent ({error}); its events wait for the next run");
                if failure.as_ref().is_none_or(|f| f.stops_the_run()) {
                    break;
                }
            }
        }
    }
    Ok(tally)
}

/// One recipient's digest of `events`.
pub fn compose(to: &str, mut events: Vec<Event>) -> Content {
    events.sort_by(most_urgent_first);
    let n = events.len();
    let as_of = events
        .iter()
        .filter_map(|e| e.data["as_of"].as_str())
        .max()
        .unwrap_or("")
        .to_string();
    let title = format!("{} as of {as_of}", alerts_word(n));
    let subject = match events.first() {
        Some(only) if n == 1 => format!("orgledger alert: {}", cut(&only.text, 140)),
        _ => format!("orgledger: {title}"),
    };
    let mut text = format!("{title}, most urgent first.\n\n");
    for (i, e) in events.iter().enumerate() {
        let figures: Vec<String> = e
            .figures()
            .iter()
            .map(|(l, v)| format!("{l}: {v}"))
            .collect();
        text.push_str(&format!(
            "{}. {}\n   {}\n   {}\n   id {}\n\n",
            i + 1,
            e.kind,
            e.text,
            figures.join(", "),
            e.id
        ));
    }
    text.push_str(&format!("-- \n{}\n", footer(to)));
    let body = html! {
        p { (title) ", most urgent first." }
        @for e in &events {
            @let edge = layout::colour(class(e)).unwrap_or_else(|| "#8a8f98".to_string());
            div style=(format!("border-left:4px solid {edge};padding:2px 0 2px 12px;margin:14px 0")) {
                p style="margin:0;font-weight:600" { (e.kind) }
                p style="margin:2px 0 4px" { (e.text) }
                @let rows: Vec<(String, String)> = e.figures().into_iter().map(|(l, v)| (l.to_string(), v)).collect();
                (layout::figures(&rows))
                p style=(NOTE) { "id " (e.id) }
            }
        }
        p style=(NOTE) { (footer(to)) }
    };
    Content {
        subject,
        text,
        html: layout::document(&format!("orgledger: {title}"), body),
        attachments: Vec::new(),
    }
}

fn alerts_word(n: usize) -> String {
    if n == 1 {
        "1 alert".to_string()
    } else {
        format!("{n} alerts")
    }
}

fn footer(to: &str) -> String {
    format!(
        "orgledger sends {to} the alerts that [[alerts.email]] in its config routes to this address; \
         docs/alerts.md describes each event and its fields."
    )
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// How urgent an event is, most urgent lowest: syncs failing (every figure goes
/// stale), deletions due, limits reached or passed, trials expired, trials
/// expiring, limits nearing, syncs recovered.
fn rank(e: &Event) -> u8 {
    let threshold = e.data["threshold"].as_f64().unwrap_or(0.0);
    match e.kind.as_str() {
        "sync.failing" => 0,
        "trial.deletion_due" => 1,
        "entitlement.threshold" if threshold >= 100.0 => 2,
        "trial.expired" => 3,
        "trial.expiring" => 4,
        "entitlement.threshold" => 5,
        "sync.recovered" => 6,
        _ => 7,
    }
}

/// Rank, then within a rank: the higher threshold and share used first, the fewer
/// days left first.
fn most_urgent_first(a: &Event, b: &Event) -> Ordering {
    let number = |e: &Event, field: &str| e.data[field].as_f64();
    rank(a)
        .cmp(&rank(b))
        .then_with(|| {
            let key = |e: &Event| (number(e, "threshold"), number(e, "pct_used"));
            let (ta, pa) = key(a);
            let (tb, pb) = key(b);
            let desc =
                |x: Option<f64>, y: Option<f64>| y.unwrap_or(0.0).total_cmp(&x.unwrap_or(0.0));
            desc(ta, tb).then(desc(pa, pb))
        })
        .then_with(|| {
            let left = |e: &Event| number(e, "days_left").unwrap_or(f64::MAX);
            left(a).total_cmp(&left(b))
        })
        .then_with(|| a.id.cmp(&b.id))
}

/// The status colour an event is edged with.
fn class(e: &Event) -> &'static str {
    match rank(e) {
        0 | 2 => "exceeded",
        1 | 3 => "expired",
        4 => "expiring",
        5 => "warning",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, id: &str, data: serde_json::Value) -> Event {
        Event {
            kind: kind.into(),
            id: id.into(),
            timestamp: "2026-06-01T05:30:00.000Z".into(),
            text: format!("{kind} {id}"),
            data,
        }
    }

    #[test]
    fn a_digest_lists_the_most_urgent_first_in_both_parts() {
        let events = vec![
            event("sync.recovered", "evt_r", json!({"as_of": "2026-06-01"})),
            event(
                "entitlement.threshold",
                "evt_80",
                json!({"as_of": "2026-06-01", "threshold": 80.0, "pct_used": 85.0}),
            ),
            event(
                "trial.expiring",
                "evt_9",
                json!({"as_of": "2026-06-01", "days_left": 9}),
            ),
            event(
                "trial.expiring",
                "evt_2",
                json!({"as_of": "2026-06-01", "days_left": 2}),
            ),
            event(
                "entitlement.threshold",
                "evt_100",
                json!({"as_of": "2026-06-01", "threshold": 100.0, "pct_used": 130.0}),
            ),
            event("sync.failing", "evt_f", json!({"as_of": "2026-06-01"})),
        ];
        let content = compose("ops@example.com", events);
        let order = ["evt_f", "evt_100", "evt_2", "evt_9", "evt_80", "evt_r"];
        for part in [&content.text, &content.html] {
            let at: Vec<usize> = order
                .iter()
                .map(|id| {
                    part.find(&format!("id {id}"))
                        .unwrap_or_else(|| panic!("{id} in {part}"))
                })
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        }
        assert_eq!(content.subject, "orgledger: 6 alerts as of 2026-06-01");
        assert!(content.html.starts_with("<!DOCTYPE html>"));
        let one = compose(
            "ops@example.com",
            vec![event("sync.failing", "evt_f", json!({}))],
        );
        assert_eq!(one.subject, "orgledger alert: sync.failing evt_f");
    }
}
