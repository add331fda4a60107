//! What the page shows, read from the finished (already redacted) report frames:
//! the numbers of each chart and the rows of the action tables. Charts and their
//! data tables are both drawn from these structs, so what a chart plots is exactly
//! what its table (and the CSV) says.

use crate::report::cols::{bools, floats, ints, strs};
use crate::report::dates::{day_text, parse_day};
use polars::prelude::DataFrame;

/// At most this many bars (entitlements, trials) in one chart; the rest are in the
/// tables and the CSV.
pub const MAX_BARS: usize = 30;
/// Users per trend chart.
pub const TOP_USERS: usize = 10;

/// Where a charted number comes from: the CSV, the columns that find its row, and
/// the column holding the number. Written into the page as `data-*` attributes so
/// a test can compare every point with the CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub key: Vec<(&'static str, String)>,
    pub column: &'static str,
    /// The value as the CSV has it (numbers as `f64` Display, dates as text).
    pub value: String,
}

/// One bar of the entitlement chart: an (organization, metric) with a percentage.
#[derive(Debug, Clone)]
pub struct UsageBar {
    pub org_id: Option<i64>,
    pub org_name: String,
    pub metric: String,
    pub unit: String,
    pub used: Option<f64>,
    pub limit: Option<f64>,
    pub pct: f64,
    pub status: String,
}

impl UsageBar {
    pub fn label(&self) -> String {
        format!(
            "{} · {}",
            shorten(&self.org_name, 30),
            metric_label(&self.metric)
        )
    }

    pub fn source(&self) -> Source {
        Source {
            key: vec![
                ("organization_id", opt_int(self.org_id)),
                ("metric", self.metric.clone()),
            ],
            column: "pct_used",
            value: self.pct.to_string(),
        }
    }
}

/// The entitlement chart: the most urgent bars, and how many had a percentage.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub bars: Vec<UsageBar>,
    pub total: usize,
}

/// Status order, most urgent first.
pub fn status_rank(status: &str) -> u8 {
    match status {
        "exceeded" => 0,
        "warning" => 1,
        "ok" => 2,
        "no_limit" => 3,
        _ => 4,
    }
}

pub fn metric_label(metric: &str) -> &str {
    match metric {
        "storage_bytes" => "storage",
        "compute_seconds" => "compute time",
        "gpu_compute_seconds" => "GPU time",
        other => other,
    }
}

/// Entitlement rows with a percentage, most urgent first (status, then percentage).
pub fn usage(df: &DataFrame) -> Usage {
    let id = ints(df, "organization_id");
    let name = strs(df, "organization_name");
    let metric = strs(df, "metric");
    let unit = strs(df, "unit");
    let used = floats(df, "used");
    let limit = floats(df, "limit");
    let pct = floats(df, "pct_used");
    let status = strs(df, "status");
    let mut bars: Vec<UsageBar> = (0..df.height())
        .filter_map(|r| {
            let pct = pct[r].filter(|p| p.is_finite())?;
            Some(UsageBar {
                org_id: id[r],
                org_name: name[r].unwrap_or("?").to_string(),
                metric: metric[r].unwrap_or("?").to_string(),
                unit: unit[r].unwrap_or("").to_string(),
                used: used[r],
                limit: limit[r],
                pct,
                status: status[r].unwrap_or("no_data").to_string(),
            })
        })
        .collect();
    bars.sort_by(|a, b| {
        status_rank(&a.status)
            .cmp(&status_rank(&b.status))
            .then(b.pct.total_cmp(&a.pct))
            .then(a.org_id.cmp(&b.org_id))
    });
    let total = bars.len();
    bars.truncate(MAX_BARS);
    Usage { bars, total }
}

/// One line (or bar series) of a trend chart.
#[derive(Debug, Clone)]
pub struct TrendSeries {
    pub entity_type: String,
    pub entity_id: Option<i64>,
    pub name: String,
    /// (index into [`Trend::starts`], compute seconds).
    pub points: Vec<(usize, f64)>,
    pub total: f64,
}

impl TrendSeries {
    pub fn sources<'a>(&'a self, trend: &'a Trend) -> impl Iterator<Item = Source> + 'a {
        self.points.iter().map(move |(i, v)| Source {
            key: vec![
                ("entity_type", self.entity_type.clone()),
                ("entity_id", opt_int(self.entity_id)),
                ("period", trend.period.to_string()),
                (
                    "period_start",
                    trend.starts.get(*i).cloned().unwrap_or_default(),
                ),
            ],
            column: "compute_seconds",
            value: v.to_string(),
        })
    }
}

/// One window of the compute trends: day rows (30 days), week rows (13 weeks,
/// about 90 days) or month rows (12 months, about 365 days).
#[derive(Debug, Clone)]
pub struct Trend {
    pub period: &'static str,
    pub window: &'static str,
    /// The period starts on the x axis, oldest first.
    pub starts: Vec<String>,
    /// The white labels' totals, largest first.
    pub whitelabels: Vec<TrendSeries>,
    /// The users with the most compute time in the window, most first.
    pub users: Vec<TrendSeries>,
}

/// The three trend windows from the `compute_trends` frame.
pub fn trends(df: &DataFrame) -> Vec<Trend> {
    let kind = strs(df, "entity_type");
    let id = ints(df, "entity_id");
    let name = strs(df, "entity_name");
    let period = strs(df, "period");
    let start = strs(df, "period_start");
    let seconds = floats(df, "compute_seconds");
    [
        ("day", "last 30 days, one bar per day"),
        (
            "week",
            "last 13 weeks (about 90 days), one bar per ISO week",
        ),
        (
            "month",
            "last 12 months (about 365 days), one bar per month",
        ),
    ]
    .into_iter()
    .map(|(p, window)| {
        let rows: Vec<usize> = (0..df.height())
            .filter(|&r| {
                period[r] == Some(p)
                    && matches!(kind[r], Some("user" | "whitelabel"))
                    && start[r].is_some()
                    && seconds[r].is_some_and(f64::is_finite)
            })
            .collect();
        let mut starts: Vec<String> = rows
            .iter()
            .filter_map(|&r| start[r].map(str::to_string))
            .collect();
        starts.sort();
        starts.dedup();
        let mut series: Vec<TrendSeries> = Vec::new();
        let mut index: std::collections::HashMap<(&str, Option<i64>), usize> =
            std::collections::HashMap::new();
        for &r in &rows {
            let k = kind[r].unwrap_or("?");
            let s = *index.entry((k, id[r])).or_insert_with(|| {
                series.push(TrendSeries {
                    entity_type: k.to_string(),
                    entity_id: id[r],
                    name: name[r].unwrap_or("?").to_string(),
                    points: Vec::new(),
                    total: 0.0,
                });
                series.len() - 1
            });
            let (Some(at), Some(v)) = (
                start[r].and_then(|d| starts.binary_search_by(|x| x.as_str().cmp(d)).ok()),
                seconds[r],
            ) else {
                continue;
            };
            series[s].points.push((at, v));
            series[s].total += v;
        }
        for s in &mut series {
            s.points.sort_by_key(|(i, _)| *i);
        }
        series.sort_by(|a, b| {
            b.total
                .total_cmp(&a.total)
                .then(a.entity_id.cmp(&b.entity_id))
        });
        let (whitelabels, mut users): (Vec<_>, Vec<_>) = series
            .into_iter()
            .partition(|s| s.entity_type == "whitelabel");
        users.truncate(TOP_USERS);
        Trend {
            period: p,
            window,
            starts,
            whitelabels,
            users,
        }
    })
    .collect()
}

/// One trial on the timeline: expiring (today → expiration) or expired (expiry →
/// deletion due).
#[derive(Debug, Clone)]
pub struct TrialBar {
    pub trial_id: Option<i64>,
    pub user: String,
    pub org: String,
    pub status: String,
    /// Day numbers of the bar's ends.
    pub from: i64,
    pub to: i64,
    pub expiration_date: Option<String>,
    pub deletion_due: Option<String>,
    pub days_left: Option<i64>,
}

impl TrialBar {
    pub fn label(&self) -> String {
        format!(
            "#{} {} ({})",
            opt_int(self.trial_id),
            shorten(&self.user, 22),
            shorten(&self.org, 22)
        )
    }

    /// The dates the bar ends on, as the CSV has them.
    pub fn sources(&self) -> Vec<Source> {
        let key = vec![("trial_id", opt_int(self.trial_id))];
        let mut out = Vec::new();
        if self.status == "expiring" {
            if let Some(d) = &self.expiration_date {
                out.push(Source {
                    key: key.clone(),
                    column: "expiration_date",
                    value: d.clone(),
                });
            }
        } else if let Some(d) = &self.deletion_due {
            out.push(Source {
                key,
                column: "deletion_due",
                value: d.clone(),
            });
        }
        out
    }
}

/// The trials timeline: expired trials by deletion date, then expiring ones by
/// expiration; `total` counts both before the cap.
#[derive(Debug, Clone, Default)]
pub struct Trials {
    pub bars: Vec<TrialBar>,
    pub total: usize,
}

pub fn trials(df: &DataFrame, today: i64) -> Trials {
    let mut bars = trial_rows(df, today);
    let total = bars.len();
    bars.truncate(MAX_BARS);
    Trials { bars, total }
}

/// Every expiring or expired trial, in timeline order.
fn trial_rows(df: &DataFrame, today: i64) -> Vec<TrialBar> {
    let id = ints(df, "trial_id");
    let user = strs(df, "user_name");
    let org = strs(df, "organization_name");
    let status = strs(df, "status");
    let expiration = strs(df, "expiration_date");
    let expired = strs(df, "expired_date");
    let due = strs(df, "deletion_due");
    let days_left = ints(df, "days_left");
    let mut bars: Vec<TrialBar> = (0..df.height())
        .filter_map(|r| {
            let s = status[r]?;
            let (from, to) = match s {
                "expiring" => (today, expiration[r].and_then(parse_day)?),
                "expired" => (
                    expired[r].or(expiration[r]).and_then(parse_day)?,
                    due[r].and_then(parse_day)?,
                ),
                _ => return None,
            };
            Some(TrialBar {
                trial_id: id[r],
                user: user[r].unwrap_or("?").to_string(),
                org: org[r].unwrap_or("?").to_string(),
                status: s.to_string(),
                from,
                to,
                expiration_date: expiration[r].map(str::to_string),
                deletion_due: due[r].map(str::to_string),
                days_left: days_left[r],
            })
        })
        .collect();
    bars.sort_by_key(|b| (b.status != "expired", b.to, b.trial_id));
    bars
}

/// A table of rows that need action: headers and cells (already in a person's
/// units), plus the CSV they come from.
#[derive(Debug, Clone, Default)]
pub struct ActionTable {
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
    /// A CSS class per row (the status), for colour.
    pub classes: Vec<String>,
}

/// Entitlements at warning or exceeded, most urgent first.
pub fn entitlement_actions(df: &DataFrame) -> ActionTable {
    let id = ints(df, "organization_id");
    let name = strs(df, "organization_name");
    let metric = strs(df, "metric");
    let unit = strs(df, "unit");
    let used = floats(df, "used");
    let limit = floats(df, "limit");
    let pct = floats(df, "pct_used");
    let remaining = floats(df, "remaining");
    let status = strs(df, "status");
    let exhaustion = strs(df, "projected_exhaustion");
    let mut rows: Vec<usize> = (0..df.height())
        .filter(|&r| matches!(status[r], Some("warning" | "exceeded")))
        .collect();
    rows.sort_by(|&a, &b| {
        status_rank(status[a].unwrap_or(""))
            .cmp(&status_rank(status[b].unwrap_or("")))
            .then(pct[b].unwrap_or(0.0).total_cmp(&pct[a].unwrap_or(0.0)))
    });
    let mut table = ActionTable {
        headers: vec![
            "Organization",
            "Metric",
            "Used",
            "Limit",
            "Used %",
            "Remaining",
            "Status",
            "Runs out",
        ],
        ..ActionTable::default()
    };
    for r in rows {
        let u = unit[r].unwrap_or("");
        table.rows.push(vec![
            format!("{} (#{})", name[r].unwrap_or("?"), opt_int(id[r])),
            metric_label(metric[r].unwrap_or("?")).to_string(),
            human(used[r], u),
            human(limit[r], u),
            pct[r].map_or_else(String::new, |p| format!("{p:.1} %")),
            human(remaining[r], u),
            status[r].unwrap_or("").to_string(),
            exhaustion[r].unwrap_or("").to_string(),
        ]);
        table.classes.push(status[r].unwrap_or("").to_string());
    }
    table
}

/// Trials expiring or expired: expired first (by deletion date), then expiring.
pub fn trial_actions(df: &DataFrame, today: i64) -> ActionTable {
    let all = trial_rows(df, today);
    let mut table = ActionTable {
        headers: vec![
            "Trial",
            "User",
            "Organization",
            "Status",
            "Expires",
            "Days left",
            "Deletion due",
        ],
        ..ActionTable::default()
    };
    for b in all {
        table.rows.push(vec![
            format!("#{}", opt_int(b.trial_id)),
            b.user.clone(),
            b.org.clone(),
            b.status.clone(),
            b.expiration_date
                .as_deref()
                .map(|d| d.get(..10).unwrap_or(d).to_string())
                .unwrap_or_default(),
            b.days_left.map(|d| d.to_string()).unwrap_or_default(),
            b.deletion_due.clone().unwrap_or_default(),
        ]);
        table.classes.push(b.status.clone());
    }
    table
}

/// Projects at or over the flag threshold of their compute budget.
pub fn project_actions(df: &DataFrame) -> ActionTable {
    let id = ints(df, "project_id");
    let name = strs(df, "project_name");
    let org = strs(df, "organization_name");
    let used = floats(df, "time_used_ms");
    let left = floats(df, "time_left_ms");
    let pct = floats(df, "pct_used");
    let flagged = bools(df, "flagged");
    let end = strs(df, "period_end");
    let mut rows: Vec<usize> = (0..df.height())
        .filter(|&r| flagged[r] == Some(true))
        .collect();
    rows.sort_by(|&a, &b| pct[b].unwrap_or(0.0).total_cmp(&pct[a].unwrap_or(0.0)));
    let mut table = ActionTable {
        headers: vec![
            "Project",
            "Organization",
            "Used",
            "Left",
            "Used %",
            "Period ends",
        ],
        ..ActionTable::default()
    };
    for r in rows {
        table.rows.push(vec![
            format!("{} (#{})", name[r].unwrap_or("?"), opt_int(id[r])),
            org[r].unwrap_or("").to_string(),
            human(used[r], "ms"),
            human(left[r], "ms"),
            pct[r].map_or_else(String::new, |p| format!("{p:.1} %")),
            end[r]
                .map(|d| d.get(..10).unwrap_or(d).to_string())
                .unwrap_or_default(),
        ]);
        table.classes.push(if pct[r].unwrap_or(0.0) >= 100.0 {
            "exceeded".to_string()
        } else {
            "warning".to_string()
        });
    }
    table
}

/// A value in the unit a person reads: bytes as GB, seconds and milliseconds as
/// hours, counts as whole numbers; empty when unknown.
pub fn human(value: Option<f64>, unit: &str) -> String {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return String::new();
    };
    match unit {
        "bytes" => format!("{} GB", decimals(v / 1e9)),
        "seconds" => format!("{} h", decimals(v / 3600.0)),
        "ms" => format!("{} h", decimals(v / 3.6e6)),
        _ => format!("{v:.0}"),
    }
}

/// Two significant decimals for small numbers, one for the rest.
fn decimals(v: f64) -> String {
    if v != 0.0 && v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// The day text of a day number (for axis labels).
pub fn day_label(day: i64) -> String {
    day_text(day).unwrap_or_default()
}

fn opt_int(v: Option<i64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_default()
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_a_person_reads() {
        assert_eq!(human(Some(2.5e9), "bytes"), "2.50 GB");
        assert_eq!(human(Some(7200.0), "seconds"), "2.00 h");
        assert_eq!(human(Some(36_000_000.0), "ms"), "10.0 h");
        assert_eq!(human(Some(12.0), "count"), "12");
        assert_eq!(human(None, "bytes"), "");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
