//! Crossings: which observations are new since the last evaluation, kept in the
//! mirror's `alert_state` so an event fires once per crossing and re-arms when the
//! condition stops holding. Ids are derived from the condition and its crossing
//! number, so the same crossing always has the same id.

use crate::alerts::Kind;
use crate::alerts::events::{Event, Observation};
use chrono::NaiveDate;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

/// A condition's row in `alert_state`.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    kind: String,
    active: bool,
    crossings: i64,
}

/// A row to write back.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    key: String,
    kind: Kind,
    active: bool,
    crossings: i64,
    event_id: String,
}

/// What an evaluation found: the events to send and the state to store.
#[derive(Debug, Default)]
pub(crate) struct Transitions {
    pub fired: Vec<Event>,
    pub changes: Vec<Change>,
}

/// The id of one crossing (or of its recovery, `suffix` "recovered").
pub(crate) fn event_id(key: &str, crossing: &str, suffix: &str) -> String {
    let digest = Sha256::digest(format!("{key}#{crossing}#{suffix}").as_bytes());
    format!("evt_{}", hex::encode(&digest[..13]))
}

/// Every row of `alert_state`.
pub(crate) fn load(conn: &Connection) -> rusqlite::Result<HashMap<String, Stored>> {
    let mut stmt = conn.prepare("SELECT key, kind, active, crossings FROM alert_state")?;
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Stored {
                kind: r.get(1)?,
                active: r.get(2)?,
                crossings: r.get(3)?,
            },
        ))
    })?
    .collect()
}

/// Compares the observations with the stored state. `tracked` says which condition
/// kinds were evaluated: a stored condition of another kind is left alone, one of a
/// tracked kind that was not observed no longer holds. `emit` says which event
/// types are sent.
pub(crate) fn transitions(
    stored: &HashMap<String, Stored>,
    observations: Vec<Observation>,
    tracked: &HashSet<Kind>,
    emit: &HashSet<Kind>,
    now: &str,
) -> Transitions {
    let mut out = Transitions::default();
    let mut seen = HashSet::new();
    for obs in observations {
        seen.insert(obs.key.clone());
        let before = stored.get(&obs.key);
        let was_active = before.is_some_and(|s| s.active);
        let crossings = before.map_or(0, |s| s.crossings);
        if obs.active && !was_active {
            let crossing = crossings + 1;
            let id = event_id(&obs.key, &crossing.to_string(), "");
            out.changes.push(Change {
                key: obs.key.clone(),
                kind: obs.kind,
                active: true,
                crossings: crossing,
                event_id: id.clone(),
            });
            if emit.contains(&obs.kind) {
                let kind = obs.kind;
                out.fired.push(obs.into_event(kind, id, now));
            }
        } else if !obs.active && was_active {
            out.changes.push(Change {
                key: obs.key.clone(),
                kind: obs.kind,
                active: false,
                crossings,
                event_id: String::new(),
            });
            if obs.kind == Kind::SyncFailing && emit.contains(&Kind::SyncRecovered) {
                let id = event_id(&obs.key, &crossings.to_string(), "recovered");
                out.fired.push(obs.into_event(Kind::SyncRecovered, id, now));
            }
        }
    }
    for (key, s) in stored {
        let Some(kind) = Kind::parse(&s.kind) else {
            continue;
        };
        if s.active && tracked.contains(&kind) && !seen.contains(key) {
            out.changes.push(Change {
                key: key.clone(),
                kind,
                active: false,
                crossings: s.crossings,
                event_id: String::new(),
            });
        }
    }
    out
}

/// Writes the changed conditions.
pub(crate) fn save(
    tx: &Transaction<'_>,
    changes: &[Change],
    as_of: NaiveDate,
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare(
        "INSERT INTO alert_state (key, kind, active, crossings, event_id, since) \
         VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''), ?6) \
         ON CONFLICT (key) DO UPDATE SET active = excluded.active, crossings = excluded.crossings, \
         event_id = COALESCE(excluded.event_id, event_id), since = excluded.since",
    )?;
    let day = as_of.to_string();
    for c in changes {
        stmt.execute(params![
            c.key,
            c.kind.as_str(),
            c.active,
            c.crossings,
            c.event_id,
            day
        ])?;
    }
    Ok(())
}

/// The latest as-of date whose evaluation advanced the state.
pub(crate) fn latest_advanced(conn: &Connection) -> rusqlite::Result<Option<NaiveDate>> {
    let day: Option<String> = conn
        .query_row(
            "SELECT MAX(as_of) FROM alert_runs WHERE mode = 'advanced'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    Ok(day.and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()))
}

/// Records one evaluation in `alert_runs`.
pub(crate) fn record_run(
    tx: &Transaction<'_>,
    as_of: NaiveDate,
    mode: &str,
    events: usize,
    now: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO alert_runs (as_of, at, mode, events) VALUES (?1, ?2, ?3, ?4)",
        params![as_of.to_string(), now, mode, events as i64],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(key: &str, active: bool) -> Observation {
        Observation {
            key: key.into(),
            kind: Kind::EntitlementThreshold,
            active,
            data: json!({}),
            text: String::new(),
        }
    }

    fn apply(stored: &mut HashMap<String, Stored>, t: &Transitions) {
        for c in &t.changes {
            stored.insert(
                c.key.clone(),
                Stored {
                    kind: c.kind.as_str().into(),
                    active: c.active,
                    crossings: c.crossings,
                },
            );
        }
    }

    #[test]
    fn a_condition_fires_once_re_arms_when_absent_and_fires_again_with_a_new_id() {
        let kinds: HashSet<Kind> = [Kind::EntitlementThreshold].into();
        let mut stored = HashMap::new();
        let run = |stored: &HashMap<String, Stored>, active: bool| {
            let o = if active { vec![obs("k", true)] } else { vec![] };
            transitions(stored, o, &kinds, &kinds, "now")
        };
        let first = run(&stored, true);
        assert_eq!(first.fired.len(), 1);
        apply(&mut stored, &first);
        assert!(
            run(&stored, true).fired.is_empty(),
            "still holding: no event"
        );
        let gone = run(&stored, false);
        assert!(gone.fired.is_empty());
        apply(&mut stored, &gone);
        let again = run(&stored, true);
        assert_eq!(again.fired.len(), 1);
        assert_ne!(again.fired[0].id, first.fired[0].id);
        assert_eq!(first.fired[0].id, event_id("k", "1", ""));
    }

    #[test]
    fn untracked_kinds_keep_their_state() {
        let mut stored = HashMap::new();
        stored.insert(
            "t".to_string(),
            Stored {
                kind: Kind::TrialExpired.as_str().into(),
                active: true,
                crossings: 1,
            },
        );
        let kinds: HashSet<Kind> = [Kind::EntitlementThreshold].into();
        let t = transitions(&stored, vec![], &kinds, &kinds, "now");
        assert!(t.changes.is_empty());
    }
}
