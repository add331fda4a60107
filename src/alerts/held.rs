//! Which alert conditions have held for each organization up to a day, whichever
//! destination their events went to: what the organization pages show. The one
//! reader of `alert_state` besides the evaluation, so a page never parses a key:
//! [`Subject`] reads each key back with the definition that built it.

use crate::alerts::events::Subject;
use crate::report::units::metric_label;
use chrono::NaiveDate;
use rusqlite::Connection;
use std::collections::HashMap;

/// One condition that has held for an organization, said without personal data.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The day it last changed (crossed or cleared).
    pub at: String,
    /// The event type.
    pub kind: String,
    /// The condition in words, with whether it still holds.
    pub text: String,
}

/// Every condition whose state changed on or before `as_of`, by organization,
/// oldest first: entitlement thresholds by the organization in their key, trial
/// conditions by `trial_orgs` (trial id → organization, from the trials report).
pub fn by_organization(
    conn: &Connection,
    as_of: NaiveDate,
    trial_orgs: &HashMap<i64, i64>,
) -> rusqlite::Result<HashMap<i64, Vec<Held>>> {
    let mut stmt = conn.prepare(
        "SELECT key, kind, active, crossings, since FROM main.alert_state \
         WHERE since <= ?1 ORDER BY since, key",
    )?;
    let day = as_of.format("%Y-%m-%d").to_string();
    let rows = stmt.query_map([day], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, bool>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, String>(4)?,
        ))
    })?;
    let mut out: HashMap<i64, Vec<Held>> = HashMap::new();
    for row in rows {
        let (key, kind, active, crossings, since) = row?;
        let Some((org, what)) = Subject::parse(&key).and_then(|s| described(&s, trial_orgs)) else {
            continue;
        };
        let state = if active { "holds" } else { "no longer holds" };
        out.entry(org).or_default().push(Held {
            at: since,
            kind,
            text: format!("{what}; {state} (crossings: {crossings})"),
        });
    }
    Ok(out)
}

/// The organization a condition belongs to, and the condition in words.
fn described(subject: &Subject, trial_orgs: &HashMap<i64, i64>) -> Option<(i64, String)> {
    match subject {
        Subject::Threshold { org, metric, pct } => Some((
            *org,
            format!("{} at {pct} % of its limit", metric_label(metric)),
        )),
        Subject::Trial { kind, trial } => Some((
            *trial_orgs.get(trial)?,
            format!("trial {trial}: {}", kind.as_str()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::testkit::TestMirror;

    #[test]
    fn conditions_go_to_the_organization_their_key_or_their_trial_names() {
        let mut m = TestMirror::new();
        m.close();
        let conn = Connection::open(&m.path).expect("mirror");
        conn.execute_batch(
            "INSERT INTO alert_state (key, kind, active, crossings, since) VALUES
             ('entitlement.threshold/7/storage_bytes/80', 'entitlement.threshold', 1, 2, '2025-03-02'),
             ('trial.expiring/5', 'trial.expiring', 0, 1, '2025-03-01'),
             ('trial.expired/6', 'trial.expired', 1, 1, '2025-03-01'),
             ('sync.failing', 'sync.failing', 1, 1, '2025-03-01'),
             ('entitlement.threshold/7/users/100', 'entitlement.threshold', 1, 1, '2025-03-09');",
        )
        .expect("conditions");
        let as_of = NaiveDate::from_ymd_opt(2025, 3, 5).expect("date");
        let held = by_organization(&conn, as_of, &HashMap::from([(5, 7)])).expect("held");
        // Trial 6 has no organization in the trials report; the last threshold
        // changed after the as-of day; the sync's condition is nobody's.
        assert_eq!(held.len(), 1, "{held:?}");
        let texts: Vec<&str> = held[&7].iter().map(|h| h.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "trial 5: trial.expiring; no longer holds (crossings: 1)",
                "storage at 80 % of its limit; holds (crossings: 2)",
            ]
        );
        assert_eq!(held[&7][1].at, "2025-03-02");
    }
}
