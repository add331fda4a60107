//! The white-label user document (`get-whitelabel-user`): the user, its organization
//! summaries, trials, daily metrics, experiments and projects.
//!
//! Mapped on the fetching task that received it, like every document: a user's daily
//! metrics are the largest lists of a sync, and building their rows in parallel keeps
//! the single SQLite writer to comparing hashes and executing statements.

use super::{
    Cell, DocRows, Problem, experiment_rows, limit_cells, project_rows, user_cells, with_key,
};
use crate::api::models::{
    DailyMetrics, OrganizationSummary, WhitelabelUser, WhitelabelUserResponse,
};
use crate::api::tolerant::{DatedTimestamp, Timestamp};
use crate::mirror::spec;
use crate::mirror::table::Row;
use rusqlite::types::Value;
use std::collections::BTreeMap;

/// Position of the day in a `daily_metrics` row (after the user).
const DAY: usize = 1;

/// The user, its organization summaries, trials, daily metrics, experiments and
/// projects.
pub fn whitelabel_user(wl_org_id: i64, user_id: i64, doc: &WhitelabelUserResponse) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("white label user {user_id}");
    let Some(u) = doc.user.as_ref() else {
        out.problems
            .push(format!("{context}: the response has no `user` object").into());
        return out;
    };
    let mut row = with_key(vec![user_id.cell()], user_cells!(u));
    row.extend([
        u.suspended.cell(),
        u.evaluation.cell(),
        u.ambassador.cell(),
        wl_org_id.cell(),
    ]);
    out.root(&spec::USERS, row);
    let summaries = u
        .organizations
        .iter()
        .filter_map(|o| organization_summary_row(user_id, o))
        .collect();
    out.scope(&spec::USER_ORGANIZATIONS, vec![user_id.cell()], summaries);
    trial_rows(&mut out, user_id, u, &context);
    daily_metrics_rows(&mut out, user_id, u, &context);
    experiment_rows(&mut out, "user", user_id, &u.experiments);
    for p in &u.projects {
        project_rows(&mut out, p, &context);
    }
    out
}

/// A `user_organizations` row; None for a summary without an organization id.
fn organization_summary_row(user_id: i64, o: &OrganizationSummary) -> Option<Vec<Value>> {
    let license = o.public_project_license.as_ref();
    let mut row = vec![
        user_id.cell(),
        o.id?.cell(),
        o.name.cell(),
        o.is_developer_profile.cell(),
        o.whitelabel_id.cell(),
        o.is_admin.cell(),
        o.created.cell(),
        o.trial_id.cell(),
        o.trial_expired_date.cell(),
        o.trial_upgraded_date.cell(),
        o.user_count.cell(),
        o.admin_count.cell(),
        o.private_project_count.cell(),
        license.and_then(|l| l.name.clone()).cell(),
        license.and_then(|l| l.link.clone()).cell(),
        o.logo.cell(),
        o.last_accessed.cell(),
    ];
    row.extend(limit_cells(o.entitlement_limits.as_ref()));
    Some(row)
}

fn trial_rows(out: &mut DocRows, user_id: i64, u: &WhitelabelUser, context: &str) {
    let mut trials = Vec::with_capacity(u.trials.len());
    for t in &u.trials {
        let Some(id) = t.id else {
            out.skipped(context, "a trial without an id");
            continue;
        };
        trials.push(vec![
            id.cell(),
            t.user_id.or(Some(user_id)).cell(),
            t.organization_id.cell(),
            t.created.cell(),
            t.expiration_date.cell(),
            t.expired_date.cell(),
            t.deleted_date.cell(),
            t.upgraded_date.cell(),
            t.notes.cell(),
        ]);
    }
    out.scope(&spec::TRIALS, vec![user_id.cell()], trials);
}

fn daily_metrics_rows(out: &mut DocRows, user_id: i64, u: &WhitelabelUser, context: &str) {
    let mut metrics = Vec::with_capacity(u.daily_metrics.len());
    // Every record of a user usually carries the same `computeTimeCalculatedSince`:
    // its text is formatted once and copied.
    let mut since: Option<(Timestamp, String)> = None;
    let width = spec::DAILY_METRICS.width();
    for m in &u.daily_metrics {
        let Some(date) = m.date else {
            out.skipped(context, "a daily metrics record without a date");
            continue;
        };
        let stamp = date.at.as_text();
        let mut row = Vec::with_capacity(width);
        row.extend([user_id.cell(), Value::Text(day_of(&date, &stamp))]);
        row.push(Value::Text(stamp));
        row.extend(metric_cells(m));
        row.push(match m.compute_time_calculated_since {
            Some(t) => Value::Text(match &since {
                Some((last, text)) if *last == t => text.clone(),
                _ => since.insert((t, t.as_text())).1.clone(),
            }),
            None => Value::Null,
        });
        metrics.push(row);
    }
    let dropped = out.scope_keeping_last(&spec::DAILY_METRICS, vec![user_id.cell()], metrics);
    report_repeated_days(out, user_id, &dropped);
}

/// One problem per day that more than one record fell on, about that user and day
/// ([`day_entity`]): the day's figures are those of the last record only, and the
/// reports flag what they built from that day.
fn report_repeated_days(out: &mut DocRows, user_id: i64, dropped: &[Row]) {
    let mut days: BTreeMap<&str, usize> = BTreeMap::new();
    for row in dropped {
        if let Some(Value::Text(day)) = row.values.get(DAY) {
            *days.entry(day.as_str()).or_default() += 1;
        }
    }
    for (day, repeats) in days {
        out.problems.push(Problem {
            entity: Some(day_entity(user_id, day)),
            message: format!(
                "daily_metrics: {} records for the day {day} (the date written in each record's timestamp); the last of them was kept",
                repeats + 1
            ),
        });
    }
}

/// The entity of one user's day in `sync_errors`: the document's (`user N`, see
/// `Job::entity`) and the day. `queries/completeness.sql` reads both back from it
/// (`collided_day`), so the two must change together.
fn day_entity(user_id: i64, day: &str) -> String {
    format!("user {user_id} on {day}")
}

/// The day is the one written in the record's own offset, not the UTC day of the
/// instant (they differ for `2026-06-10T00:00:00+02:00`); `stamp` is the instant's
/// UTC text, whose first ten characters are the day when the offset is zero.
fn day_of(date: &DatedTimestamp, stamp: &str) -> String {
    if date.offset_secs == 0 {
        stamp[..10].to_string()
    } else {
        date.day().format("%Y-%m-%d").to_string()
    }
}

/// The record's totals and changes, in the order of the table's columns.
fn metric_cells(m: &DailyMetrics) -> [Value; 18] {
    [
        m.total_users.cell(),
        m.total_staff_users.cell(),
        m.total_projects.cell(),
        m.total_current_contract_cpu_compute_time_seconds.cell(),
        m.total_current_contract_gpu_compute_time_seconds.cell(),
        m.total_current_contract_compute_time_seconds.cell(),
        m.total_storage_size_bytes.cell(),
        m.users_added.cell(),
        m.users_deleted.cell(),
        m.projects_added.cell(),
        m.projects_deleted.cell(),
        m.cpu_compute_time_seconds.cell(),
        m.gpu_compute_time_seconds.cell(),
        m.compute_time_seconds.cell(),
        m.storage_bytes_added.cell(),
        m.storage_bytes_deleted.cell(),
        m.staff_users_added.cell(),
        m.staff_users_deleted.cell(),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::RowSet;
    use super::*;
    use crate::api::models::*;

    /// The daily-metrics rows a user document with these (date, CPU seconds)
    /// records becomes, and the document's problems.
    fn daily_rows(records: &[(&str, i64)]) -> (Vec<Row>, Vec<Problem>) {
        let daily_metrics = records
            .iter()
            .map(|&(date, cpu)| DailyMetrics {
                date: date.parse().ok(),
                cpu_compute_time_seconds: Some(cpu),
                ..Default::default()
            })
            .collect();
        let user = WhitelabelUserResponse {
            user: Some(WhitelabelUser {
                daily_metrics,
                ..Default::default()
            }),
            ..Default::default()
        };
        let doc = whitelabel_user(1, 3, &user);
        let metrics = doc
            .sets
            .into_iter()
            .find_map(|set| match set {
                RowSet::Scope { table, rows, .. } if table.name == "daily_metrics" => Some(rows),
                _ => None,
            })
            .expect("daily metrics");
        (metrics, doc.problems)
    }

    #[test]
    fn a_record_s_day_is_the_date_written_in_its_offset() {
        let (metrics, problems) = daily_rows(&[
            // 2026-06-09T22:00Z: the platform's day 2026-06-10.
            ("2026-06-10T00:00:00+02:00", 1),
            ("2026-06-11T00:00:00.000Z", 2),
            // 2026-06-12T03:00Z: the platform's day 2026-06-11 again.
            ("2026-06-11T22:00:00-05:00", 3),
        ]);
        let days: Vec<(Value, Value)> = metrics
            .iter()
            .map(|r| (r.values[1].clone(), r.values[2].clone()))
            .collect();
        assert_eq!(
            days,
            [
                (
                    Value::Text("2026-06-10".into()),
                    Value::Text("2026-06-09T22:00:00.000Z".into())
                ),
                (
                    Value::Text("2026-06-11".into()),
                    Value::Text("2026-06-12T03:00:00.000Z".into())
                ),
            ]
        );
        assert_repeated_day(&problems, "2026-06-11");
    }

    /// The one problem is about user 3 on `day`, where two records fell.
    fn assert_repeated_day(problems: &[Problem], day: &str) {
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0].entity.as_deref(),
            Some(format!("user 3 on {day}").as_str())
        );
        assert!(
            problems[0]
                .message
                .starts_with(&format!("daily_metrics: 2 records for the day {day}")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_repeated_key_keeps_the_last_entry_and_is_reported() {
        let (metrics, problems) = daily_rows(&[
            ("2026-01-01T00:00:00Z", 1),
            ("2026-01-02T00:00:00Z", 2),
            ("2026-01-01T00:00:00Z", 3),
        ]);
        let cpu = spec::DAILY_METRICS
            .all_columns()
            .position(|c| c.name == "cpu_compute_time_seconds")
            .expect("column");
        let kept: Vec<(Value, Value)> = metrics
            .iter()
            .map(|r| (r.values[1].clone(), r.values[cpu].clone()))
            .collect();
        assert_eq!(
            kept,
            [
                (Value::Text("2026-01-02".into()), Value::Integer(2)),
                (Value::Text("2026-01-01".into()), Value::Integer(3)),
            ]
        );
        assert_repeated_day(&problems, "2026-01-01");
    }
}
