//! The short text a person reads at a glance after a run: organizations near or over
//! a limit, trials expiring soon, and the top compute users of the last 30 days.

use crate::report::ReportOutcome;
use crate::report::cols::{floats, ints, strs};
use polars::prelude::DataFrame;
use std::fmt::Write;

/// At most this many lines per section.
const MAX_LINES: usize = 10;

/// A few lines for a person: see the module documentation.
pub fn summary(outcome: &ReportOutcome) -> String {
    let mut out = String::new();
    let source = match (&outcome.run_id, &outcome.observed_at) {
        (Some(id), Some(at)) => format!("sync run {id}, observed {at}"),
        _ => "no finished sync run before that date".to_string(),
    };
    let _ = writeln!(
        out,
        "Reports as of {} ({source}) in {}",
        outcome.as_of,
        outcome.dir.display()
    );
    if let Some(df) = outcome.frames.get("entitlements") {
        limits(&mut out, df, outcome.as_of);
    }
    if let Some(df) = outcome.frames.get("trials") {
        trials(&mut out, df);
    }
    if let Some(df) = outcome.frames.get("compute_trends") {
        top_users(&mut out, df);
    }
    let files: usize = outcome.files.len();
    let _ = writeln!(out, "{files} files written (see manifest.json)");
    out
}

/// Projections further out than this are noise in a summary (the CSV keeps them).
const PROJECTION_HORIZON_DAYS: u64 = 730;

fn limits(out: &mut String, df: &DataFrame, as_of: chrono::NaiveDate) {
    let horizon = (as_of + chrono::Days::new(PROJECTION_HORIZON_DAYS))
        .format("%Y-%m-%d")
        .to_string();
    let org = strs(df, "organization_name");
    let id = ints(df, "organization_id");
    let metric = strs(df, "metric");
    let status = strs(df, "status");
    let pct = floats(df, "pct_used");
    let exhaustion = strs(df, "projected_exhaustion");
    let mut rows: Vec<usize> = (0..df.height())
        .filter(|&r| matches!(status[r], Some("warning" | "exceeded")))
        .collect();
    rows.sort_by(|&a, &b| pct[b].unwrap_or(0.0).total_cmp(&pct[a].unwrap_or(0.0)));
    let orgs: std::collections::BTreeSet<Option<i64>> = rows.iter().map(|&r| id[r]).collect();
    let _ = writeln!(
        out,
        "Limits: {} organization(s) near or over a limit",
        orgs.len()
    );
    for &r in rows.iter().take(MAX_LINES) {
        let runs_out = exhaustion[r]
            .filter(|d| *d <= horizon.as_str())
            .map(|d| format!(", runs out {d}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} (#{}): {} at {:.1}% ({}){runs_out}",
            org[r].unwrap_or("?"),
            id[r].map_or_else(|| "?".to_string(), |n| n.to_string()),
            metric[r].unwrap_or("?"),
            pct[r].unwrap_or(f64::NAN),
            status[r].unwrap_or("?"),
        );
    }
    more(out, rows.len());
}

fn trials(out: &mut String, df: &DataFrame) {
    let user = strs(df, "user_name");
    let org = strs(df, "organization_name");
    let status = strs(df, "status");
    let expires = strs(df, "expiration_date");
    let days = ints(df, "days_left");
    let mut rows: Vec<usize> = (0..df.height())
        .filter(|&r| status[r] == Some("expiring"))
        .collect();
    rows.sort_by_key(|&r| days[r].unwrap_or(i64::MAX));
    let _ = writeln!(out, "Trials expiring soon: {}", rows.len());
    for &r in rows.iter().take(MAX_LINES) {
        let _ = writeln!(
            out,
            "  {} ({}): expires {} (in {} days)",
            user[r].unwrap_or("?"),
            org[r].unwrap_or("?"),
            expires[r].map_or("?", |d| d.get(..10).unwrap_or(d)),
            days[r].map_or_else(|| "?".to_string(), |n| n.to_string()),
        );
    }
    more(out, rows.len());
}

fn top_users(out: &mut String, df: &DataFrame) {
    let kind = strs(df, "entity_type");
    let period = strs(df, "period");
    let start = strs(df, "period_start");
    let id = ints(df, "entity_id");
    let name = strs(df, "entity_name");
    let last30 = floats(df, "rolling_30d");
    let prev30 = floats(df, "rolling_30d_prev");
    // Each user's latest day row (rows are sorted by entity, then period, then start).
    let mut latest: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    for r in 0..df.height() {
        if kind[r] == Some("user")
            && period[r] == Some("day")
            && let Some(user) = id[r]
        {
            let newer = latest.get(&user).is_none_or(|&old| start[r] > start[old]);
            if newer {
                latest.insert(user, r);
            }
        }
    }
    let mut rows: Vec<usize> = latest
        .into_values()
        .filter(|&r| last30[r].is_some())
        .collect();
    rows.sort_by(|&a, &b| {
        last30[b]
            .unwrap_or(0.0)
            .total_cmp(&last30[a].unwrap_or(0.0))
            .then(id[a].cmp(&id[b]))
    });
    let _ = writeln!(out, "Top compute users, last 30 days:");
    if rows.is_empty() {
        let _ = writeln!(out, "  (no daily metrics)");
    }
    for (rank, &r) in rows.iter().take(5).enumerate() {
        let hours = last30[r].unwrap_or(0.0) / 3600.0;
        let trend = match prev30[r] {
            Some(p) if p > 0.0 => {
                let change = 100.0 * (last30[r].unwrap_or(0.0) - p) / p;
                let word = if change >= 0.0 { "up" } else { "down" };
                format!("{word} {:.0}% vs the 30 days before", change.abs())
            }
            _ => "no earlier 30 days to compare".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}. {} (#{}): {hours:.1} h ({trend})",
            rank + 1,
            name[r].unwrap_or("?"),
            id[r].map_or_else(|| "?".to_string(), |n| n.to_string()),
        );
    }
}

fn more(out: &mut String, total: usize) {
    if total > MAX_LINES {
        let _ = writeln!(out, "  ... and {} more", total - MAX_LINES);
    }
}
