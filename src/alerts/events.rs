//! What holds on the as-of date: one [`Observation`] per condition, read from the
//! `entitlements` and `trials` report tables (their formulas are the reports' own)
//! and from `sync_runs`. Whether an observation is a new crossing is `state`'s job.

use crate::alerts::{Kind, Rules};
use crate::calendar::{day_of, parse_day};
use crate::report::ReportError;
use crate::report::attention::RunsOut;
use crate::report::entitlements::Entitlements;
use crate::report::trials::Trials;
use crate::report::units::metric_label;
use chrono::NaiveDate;
use polars::prelude::DataFrame;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One event as it is sent and stored: Standard Webhooks' `type`, `id`,
/// `timestamp`, `data`, plus a one-line `text` that chat tools (Slack) show as is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// `entitlement.threshold`, `trial.expiring`, ….
    #[serde(rename = "type")]
    pub kind: String,
    /// Stable for one crossing: a receiver drops a second delivery with the same id.
    pub id: String,
    /// When the event was created (UTC, ISO 8601).
    pub timestamp: String,
    /// The event in one line.
    pub text: String,
    /// The figures (docs/alerts.md lists every field).
    pub data: Value,
}

impl Event {
    /// The event as one line of JSON (the webhook body, the JSON Lines line).
    pub fn to_json(&self) -> String {
        // A struct of strings and a JSON value always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Its key figures as a chat message shows them under the text: label and
    /// value, the as-of day first; figures the event does not have are left out.
    pub fn figures(&self) -> Vec<(&'static str, String)> {
        let fields = Kind::parse(&self.kind).map_or(&[][..], key_fields);
        let unit = self.data["unit"].as_str().unwrap_or("");
        let as_of = self.data["as_of"]
            .as_str()
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        std::iter::once(("As of", "as_of"))
            .chain(fields.iter().copied())
            .filter_map(|(label, field)| {
                let value = &self.data[field];
                let shown = match (field, value.as_str(), as_of) {
                    // A date as the page says it: past the horizon, no date at all.
                    ("projected_exhaustion", Some(date), Some(as_of)) => {
                        Some(RunsOut::of(date, as_of).text())
                    }
                    _ => figure(field, value, unit),
                };
                Some((label, shown?))
            })
            .collect()
    }
}

/// The `data` fields a chat message shows for each type, with their labels.
fn key_fields(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::EntitlementThreshold => &[
            ("Organization", "organization_name"),
            ("Metric", "metric"),
            ("Used", "used"),
            ("Limit", "limit"),
            ("% used", "pct_used"),
            ("Threshold %", "threshold"),
            ("Limit reached around", "projected_exhaustion"),
            ("Missing data", "missing"),
        ],
        Kind::TrialExpiring | Kind::TrialExpired | Kind::TrialDeletionDue => &[
            ("User", "user_name"),
            ("Organization", "organization_name"),
            ("Status", "status"),
            ("Expires", "expiration_date"),
            ("Deletion due", "deletion_due"),
            ("Days left", "days_left"),
        ],
        Kind::SyncFailing => &[("Failed runs in a row", "runs"), ("Errors", "errors")],
        Kind::SyncRecovered => &[("Run", "run_id"), ("Status", "status"), ("At", "at")],
    }
}

/// One figure as text: amounts in the metric's unit, a list as its length; `None`
/// for a figure that is absent or empty.
fn figure(field: &str, value: &Value, unit: &str) -> Option<String> {
    let text = match value {
        Value::Null => return None,
        Value::String(s) if field == "metric" => metric_label(s).to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) if matches!(field, "used" | "limit") => {
            crate::report::units::human(n.as_f64(), unit)
        }
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Array(items) => items.len().to_string(),
        Value::Object(_) => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// A condition on the as-of date. Entitlements and trials are listed only while
/// they hold (absence means "no longer"); the sync condition is always listed,
/// carrying what its recovery event says when it does not hold.
#[derive(Debug, Clone)]
pub(crate) struct Observation {
    /// The condition's identity across runs, e.g. `entitlement.threshold/12/users/80`.
    pub key: String,
    /// The event type of its rising edge.
    pub kind: Kind,
    pub active: bool,
    pub data: Value,
    pub text: String,
}

impl Observation {
    /// The event of one of its edges.
    pub(crate) fn into_event(self, kind: Kind, id: String, now: &str) -> Event {
        Event {
            kind: kind.as_str().to_string(),
            id,
            timestamp: now.to_string(),
            text: self.text,
            data: self.data,
        }
    }
}

/// The entitlement rows at or over each threshold.
pub(crate) fn entitlements(
    df: &DataFrame,
    thresholds: &[f64],
    as_of: NaiveDate,
) -> Result<Vec<Observation>, ReportError> {
    let t = Entitlements::read(df)?;
    let mut out = Vec::new();
    for r in 0..t.height() {
        let Some(p) = t.pct_used[r] else { continue };
        let complete = t.complete[r].unwrap_or(true);
        let missing = t.missing[r].unwrap_or("");
        for &threshold in thresholds.iter().filter(|th| p >= **th) {
            let org_id = t.organization_id[r].unwrap_or_default();
            let metric = t.metric[r].unwrap_or("?");
            let org_name = t.organization_name[r].unwrap_or("?");
            let mut text = format!(
                "{org_name} (organization {org_id}) passed {threshold} % of its {} entitlement: {} of {} ({p} %)",
                metric_label(metric),
                t.used_human[r].unwrap_or("?"),
                t.limit_human[r].unwrap_or("?"),
            );
            let exhaustion = t.projected_exhaustion[r];
            if let Some(date) = exhaustion {
                text.push_str(&format!("; {}", RunsOut::of(date, as_of).clause()));
            }
            if !complete {
                text.push_str(&format!("; incomplete data (missing: {missing})"));
            }
            let data = json!({
                "as_of": as_of.to_string(),
                "organization_id": t.organization_id[r],
                "organization_name": t.organization_name[r],
                "metric": metric,
                "unit": t.unit[r],
                "used": t.used[r],
                "limit": t.limit[r],
                "pct_used": p,
                "threshold": threshold,
                "complete": complete,
                "missing": missing,
                "projected_exhaustion": exhaustion,
                "data_as_of": t.data_as_of[r],
            });
            out.push(Observation {
                key: threshold_key(org_id, metric, threshold),
                kind: Kind::EntitlementThreshold,
                active: true,
                data,
                text,
            });
        }
    }
    Ok(out)
}

/// The trials expiring soon, expired, or whose organization is due for deletion soon.
pub(crate) fn trials(
    df: &DataFrame,
    rules: &Rules,
    as_of: NaiveDate,
) -> Result<Vec<Observation>, ReportError> {
    let t = Trials::read(df)?;
    let today = day_of(as_of);
    let mut out = Vec::new();
    for r in 0..t.height() {
        let trial = t.trial_id[r].unwrap_or_default();
        let who = format!(
            "trial {trial} of {} ({})",
            t.user_name[r].unwrap_or("?"),
            t.organization_name[r].unwrap_or("?")
        );
        let (expiration, expired, due) =
            (t.expiration_date[r], t.expired_date[r], t.deletion_due[r]);
        let to_deletion = due.and_then(parse_day).map(|d| d - today);
        let (kind, left, text) = match (t.status[r], t.days_left[r]) {
            // The report's status applies `[thresholds] trial_expiring_days`.
            (Some("expiring"), Some(left)) => (
                Kind::TrialExpiring,
                Some(left),
                format!(
                    "The {who} expires in {left} days ({})",
                    expiration.map_or("?", day_part)
                ),
            ),
            (Some("expired"), _) => (
                Kind::TrialExpired,
                to_deletion,
                format!(
                    "The {who} expired on {}; its organization is due for deletion on {}",
                    expired.or(expiration).map_or("?", day_part),
                    due.unwrap_or("?")
                ),
            ),
            _ => continue,
        };
        let data = |left: Option<i64>| {
            json!({
                "as_of": as_of.to_string(),
                "trial_id": t.trial_id[r],
                "user_id": t.user_id[r],
                "user_name": t.user_name[r],
                "user_email": t.user_email[r],
                "organization_id": t.organization_id[r],
                "organization_name": t.organization_name[r],
                "expiration_date": expiration,
                "expired_date": expired,
                "deletion_due": due,
                "status": t.status[r],
                "days_left": left,
            })
        };
        out.push(Observation {
            key: trial_key(kind, trial),
            kind,
            active: true,
            data: data(left),
            text,
        });
        if let Some(left) =
            to_deletion.filter(|d| kind == Kind::TrialExpired && *d <= rules.trial_deletion_days)
        {
            out.push(Observation {
                key: trial_key(Kind::TrialDeletionDue, trial),
                kind: Kind::TrialDeletionDue,
                active: true,
                data: data(Some(left)),
                text: format!(
                    "The organization of the {who} is due for deletion in {left} days ({})",
                    due.unwrap_or("?")
                ),
            });
        }
    }
    Ok(out)
}

/// What a condition's key in `alert_state` names: built here for every observation
/// and read back here ([`Subject::parse`]), so the key's format has one definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Subject {
    /// `entitlement.threshold/<org>/<metric>/<pct>`.
    Threshold { org: i64, metric: String, pct: f64 },
    /// `<kind>/<trial>`, for the trial kinds.
    Trial { kind: Kind, trial: i64 },
}

impl Subject {
    /// The key.
    pub(crate) fn key(&self) -> String {
        match self {
            Subject::Threshold { org, metric, pct } => {
                format!(
                    "{}/{org}/{metric}/{pct}",
                    Kind::EntitlementThreshold.as_str()
                )
            }
            Subject::Trial { kind, trial } => format!("{}/{trial}", kind.as_str()),
        }
    }

    /// What `key` names; None for the keys of other conditions (sync).
    pub(crate) fn parse(key: &str) -> Option<Subject> {
        let parts: Vec<&str> = key.split('/').collect();
        match parts.as_slice() {
            [kind, org, metric, pct] if *kind == Kind::EntitlementThreshold.as_str() => {
                Some(Subject::Threshold {
                    org: org.parse().ok()?,
                    metric: metric.to_string(),
                    pct: pct.parse().ok()?,
                })
            }
            [kind, trial] => {
                let kind = Kind::parse(kind).filter(|k| k.as_str().starts_with("trial."))?;
                Some(Subject::Trial {
                    kind,
                    trial: trial.parse().ok()?,
                })
            }
            _ => None,
        }
    }
}

/// The key of an entitlement threshold's condition.
fn threshold_key(org: i64, metric: &str, threshold: f64) -> String {
    Subject::Threshold {
        org,
        metric: metric.to_string(),
        pct: threshold,
    }
    .key()
}

/// The key of a trial's condition.
fn trial_key(kind: Kind, trial: i64) -> String {
    Subject::Trial { kind, trial }.key()
}

fn day_part(text: &str) -> &str {
    text.get(..10).unwrap_or(text)
}

/// A finished sync run.
struct Run {
    id: i64,
    status: String,
    at: String,
    errors: i64,
    message: Option<String>,
}

/// Whether the last `k` finished runs before `cutoff` all failed or were partial.
pub(crate) fn sync(
    conn: &Connection,
    cutoff: &str,
    k: u32,
    as_of: NaiveDate,
) -> rusqlite::Result<Observation> {
    let mut stmt = conn.prepare(
        "SELECT id, status, COALESCE(observed_at, started_at), errors, message FROM sync_runs \
         WHERE status IN ('succeeded','partial','failed') AND COALESCE(observed_at, started_at) < ?1 \
         ORDER BY id DESC LIMIT ?2",
    )?;
    let runs = stmt
        .query_map(rusqlite::params![cutoff, k], |r| {
            Ok(Run {
                id: r.get(0)?,
                status: r.get(1)?,
                at: r.get(2)?,
                errors: r.get(3)?,
                message: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<Run>>>()?;
    let failing = k > 0 && runs.len() == k as usize && runs.iter().all(|r| r.status != "succeeded");
    let key = Kind::SyncFailing.as_str().to_string();
    let listed: Vec<Value> = runs
        .iter()
        .map(|r| json!({"run_id": r.id, "status": r.status, "at": r.at, "errors": r.errors, "message": r.message}))
        .collect();
    if !failing {
        let last = runs.first();
        return Ok(Observation {
            key,
            kind: Kind::SyncFailing,
            active: false,
            data: json!({
                "as_of": as_of.to_string(),
                "run_id": last.map(|r| r.id),
                "status": last.map(|r| r.status.as_str()),
                "at": last.map(|r| r.at.as_str()),
            }),
            text: format!(
                "Syncs recovered: run {} {}",
                last.map_or("?".to_string(), |r| r.id.to_string()),
                last.map_or("?", |r| r.status.as_str())
            ),
        });
    }
    let summary = error_summary(conn, &runs)?;
    let ids: Vec<String> = runs.iter().rev().map(|r| r.id.to_string()).collect();
    let total: i64 = runs.iter().map(|r| r.errors).sum();
    let worst = summary.first().map_or_else(
        || {
            runs.iter()
                .find_map(|r| r.message.clone())
                .unwrap_or_default()
        },
        |e| format!("mostly {}", e["what"].as_str().unwrap_or("?")),
    );
    Ok(Observation {
        key,
        kind: Kind::SyncFailing,
        active: true,
        text: format!(
            "The last {k} syncs failed or were partial (runs {}): {total} errors, {worst}",
            ids.join(", ")
        ),
        data: json!({
            "as_of": as_of.to_string(),
            "runs": listed,
            "errors": total,
            "error_summary": summary,
        }),
    })
}

/// The runs' errors grouped by operation and HTTP status, most frequent first.
fn error_summary(conn: &Connection, runs: &[Run]) -> rusqlite::Result<Vec<Value>> {
    let (Some(first), Some(last)) = (runs.last(), runs.first()) else {
        return Ok(Vec::new());
    };
    let mut stmt = conn.prepare(
        "SELECT operation, http_status, COUNT(*), MIN(message) FROM sync_errors \
         WHERE run_id BETWEEN ?1 AND ?2 GROUP BY operation, http_status \
         ORDER BY COUNT(*) DESC, operation LIMIT 5",
    )?;
    stmt.query_map([first.id, last.id], |r| {
        let operation: String = r.get(0)?;
        let status: Option<i64> = r.get(1)?;
        let what = match status {
            Some(s) => format!("{operation} HTTP {s}"),
            None => operation.clone(),
        };
        Ok(json!({
            "operation": operation,
            "http_status": status,
            "count": r.get::<_, i64>(2)?,
            "example": r.get::<_, String>(3)?,
            "what": what,
        }))
    })?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn every_key_reads_back_as_the_subject_it_was_built_from() {
        let subjects = [
            Subject::Threshold {
                org: 7,
                metric: "storage_bytes".into(),
                pct: 80.0,
            },
            Subject::Threshold {
                org: 9,
                metric: "users".into(),
                pct: 92.5,
            },
            Subject::Trial {
                kind: Kind::TrialExpiring,
                trial: 5,
            },
            Subject::Trial {
                kind: Kind::TrialDeletionDue,
                trial: 6,
            },
        ];
        for subject in subjects {
            assert_eq!(Subject::parse(&subject.key()), Some(subject.clone()));
        }
        assert_eq!(
            threshold_key(7, "users", 100.0),
            "entitlement.threshold/7/users/100"
        );
        assert_eq!(Subject::parse("sync.failing"), None);
        assert_eq!(Subject::parse("sync.failing/3"), None);
        assert_eq!(Subject::parse("entitlement.threshold/x/users/80"), None);
    }

    /// An `entitlements` table of one row: organization 7's users at 120 %, the
    /// other columns empty unless `with` sets them.
    fn row(with: Vec<Column>) -> DataFrame {
        let null = |name: &str, dtype: DataType| Column::full_null(name.into(), 1, &dtype);
        let mut cols = vec![
            Column::new("organization_id".into(), [7i64]),
            Column::new("organization_name".into(), ["Seven"]),
            Column::new("metric".into(), ["users"]),
            null("unit", DataType::String),
            null("used", DataType::Float64),
            null("limit", DataType::Float64),
            Column::new("pct_used".into(), [120.0]),
            null("remaining", DataType::Float64),
            null("status", DataType::String),
            null("used_human", DataType::String),
            null("limit_human", DataType::String),
            null("projected_exhaustion", DataType::String),
            null("complete", DataType::Boolean),
            null("missing", DataType::String),
            null("data_as_of", DataType::String),
        ];
        for column in with {
            if let Some(at) = cols.iter().position(|c| c.name() == column.name()) {
                cols[at] = column;
            }
        }
        DataFrame::new(1, cols).expect("frame")
    }

    #[test]
    fn every_threshold_passed_fires_and_completeness_falls_back_to_complete() {
        let day = NaiveDate::from_ymd_opt(2026, 1, 31).expect("date");
        let obs = entitlements(&row(vec![]), &[80.0, 100.0, 150.0], day).expect("read");
        assert_eq!(obs.len(), 2, "80 and 100, not 150");
        assert_eq!(obs[0].data["complete"], true);
        assert_eq!(obs[0].data["missing"], "");
        assert!(obs[0].data["data_as_of"].is_null());
        assert_eq!(obs[1].key, "entitlement.threshold/7/users/100");

        let partial = row(vec![
            Column::new("complete".into(), [false]),
            Column::new("missing".into(), ["daily_metrics"]),
            Column::new("data_as_of".into(), ["2026-01-30"]),
        ]);
        let obs = entitlements(&partial, &[80.0], day).expect("read");
        assert_eq!(obs[0].data["complete"], false);
        assert_eq!(obs[0].data["missing"], "daily_metrics");
        assert_eq!(obs[0].data["data_as_of"], "2026-01-30");
        assert!(
            obs[0].text.contains("missing: daily_metrics"),
            "{}",
            obs[0].text
        );
    }

    #[test]
    fn a_table_without_pct_used_is_an_error_not_silence() {
        let day = NaiveDate::from_ymd_opt(2026, 1, 31).expect("date");
        let renamed = row(vec![])
            .rename("pct_used", "pct".into())
            .map(|d| d.clone())
            .expect("rename");
        let err = entitlements(&renamed, &[80.0], day).expect_err("no pct_used");
        assert!(err.to_string().contains("pct_used"), "{err}");
    }

    #[test]
    fn the_text_names_metrics_and_far_exhaustion_as_the_reports_do() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 26).expect("date");
        let with = |metric: &str, exhaustion: &str| {
            let frame = row(vec![
                Column::new("metric".into(), [metric]),
                Column::new("pct_used".into(), [90.0]),
                Column::new("projected_exhaustion".into(), [exhaustion]),
            ]);
            entitlements(&frame, &[80.0], day)
                .expect("read")
                .remove(0)
                .text
        };
        let far = with("storage_bytes", "2361-07-14");
        assert!(far.contains("of its storage entitlement"), "{far}");
        assert!(far.contains("limit not reached within 10 years"), "{far}");
        assert!(!far.contains("2361"), "{far}");
        let near = with("compute_seconds", "2027-03-01");
        assert!(near.contains("of its compute time entitlement"), "{near}");
        assert!(near.contains("limit reached around 2027-03-01"), "{near}");
    }

    #[test]
    fn a_message_s_figures_say_a_far_exhaustion_as_the_text_does_and_the_data_keeps_the_date() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 26).expect("date");
        let event = |exhaustion: &str| {
            let frame = row(vec![
                Column::new("metric".into(), ["storage_bytes"]),
                Column::new("pct_used".into(), [90.0]),
                Column::new("projected_exhaustion".into(), [exhaustion]),
            ]);
            let observed = entitlements(&frame, &[80.0], day).expect("read").remove(0);
            observed.into_event(Kind::EntitlementThreshold, "id".into(), "now")
        };
        let shown = |e: &Event| {
            e.figures()
                .into_iter()
                .find(|(label, _)| *label == "Limit reached around")
                .map(|(_, v)| v)
        };
        let far = event("3254-06-22");
        assert_eq!(shown(&far).as_deref(), Some("not within 10 years"));
        assert_eq!(far.data["projected_exhaustion"], "3254-06-22");
        let near = event("2027-03-01");
        assert_eq!(shown(&near).as_deref(), Some("2027-03-01"));
    }
}
