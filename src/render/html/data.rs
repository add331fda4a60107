//! What the page shows, read from the finished (already redacted) report frames:
//! the numbers of each chart and the rows of the action tables. Charts and their
//! data tables are both drawn from these structs, so what a chart plots is exactly
//! what its table (and the CSV) says.

use crate::calendar::day_text;
use crate::report::ReportError;
use crate::report::attention::{
    Attention, LIMIT_TABLE, Limit, PROJECT_TABLE, TRIAL_TABLE, Trial, entitlement_rows,
    exhaustion_text, named,
};
pub use crate::report::compute_trends::{Trend, TrendSeries};
use crate::report::units::{human, metric_label};
use chrono::NaiveDate;
use polars::prelude::DataFrame;

/// At most this many bars (entitlements, trials) in one chart; the rest are in the
/// tables and the CSV.
pub const MAX_BARS: usize = 30;

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

/// One bar of the entitlement chart: an entitlement row with a percentage.
#[derive(Debug, Clone)]
pub struct UsageBar {
    pub row: Limit,
    pub pct: f64,
}

/// At most this many characters of a bar's label (a usage bar's, a trial's): the
/// names of the demo world and of most real ones whole, the label area of the
/// chart no wider than two fifths of it.
pub const LABEL: usize = 64;
/// A label with every name whole (the tooltip of a cut one).
pub const WHOLE: usize = usize::MAX;

impl UsageBar {
    /// The label, within `max` characters: the organization's name cut to fit,
    /// the metric whole.
    pub fn label(&self, max: usize) -> String {
        let metric = metric_label(&self.row.metric);
        let room = max.saturating_sub(metric.chars().count() + 3);
        format!("{} · {metric}", shorten(&self.row.org_name, room))
    }

    pub fn source(&self) -> Source {
        Source {
            key: vec![
                ("organization_id", opt_int(self.row.org_id)),
                ("metric", self.row.metric.clone()),
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

/// Entitlement rows with a percentage, most urgent first (status, then percentage).
pub fn usage(df: &DataFrame) -> Result<Usage, ReportError> {
    let mut bars: Vec<UsageBar> = entitlement_rows(df)?
        .into_iter()
        .filter_map(|row| {
            let pct = row.pct.filter(|p| p.is_finite())?;
            Some(UsageBar { row, pct })
        })
        .collect();
    let total = bars.len();
    bars.truncate(MAX_BARS);
    Ok(Usage { bars, total })
}

/// Where each point of a trend series comes from.
pub fn trend_sources<'a>(
    series: &'a TrendSeries,
    trend: &'a Trend,
) -> impl Iterator<Item = Source> + 'a {
    series.points.iter().map(move |(i, v)| Source {
        key: vec![
            ("entity_type", series.entity_type.clone()),
            ("entity_id", opt_int(series.entity_id)),
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

/// A trial's bar on the timeline, `#id user (organization)`, cut to `max`
/// characters.
pub fn trial_label(t: &Trial, max: usize) -> String {
    let whole = format!("#{} {} ({})", opt_int(t.trial_id), t.user, t.org);
    shorten(&whole, max)
}

/// The date a trial's bar ends on, as the CSV has it.
pub fn trial_source(t: &Trial) -> Option<Source> {
    let (column, value) = if t.expired() {
        ("deletion_due", t.deletion_due.as_ref()?)
    } else {
        ("expiration_date", t.expiration_date.as_ref()?)
    };
    Some(Source {
        key: vec![("trial_id", opt_int(t.trial_id))],
        column,
        value: value.clone(),
    })
}

/// The trials timeline: the trials that need action and have both dates of their
/// bar, in the action order; `total` counts them before the cap.
#[derive(Debug, Clone, Default)]
pub struct Trials {
    pub bars: Vec<Trial>,
    pub total: usize,
}

pub fn trials(all: &[Trial]) -> Trials {
    let mut bars: Vec<Trial> = all.iter().filter(|t| t.span.is_some()).cloned().collect();
    let total = bars.len();
    bars.truncate(MAX_BARS);
    Trials { bars, total }
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

/// The action tables of the page, from the run's one list of rows that need action.
pub struct Actions {
    pub limits: Option<ActionTable>,
    pub trials: Option<ActionTable>,
    pub projects: Option<ActionTable>,
    /// Whether a report that carries `complete` was built (its card is shown).
    pub incomplete: bool,
}

pub fn actions(attention: &Attention, as_of: NaiveDate) -> Actions {
    Actions {
        limits: attention.limits.as_ref().map(|l| limit_actions(l, as_of)),
        trials: attention.trials.as_deref().map(trial_actions),
        projects: attention.projects.as_ref().map(|p| project_actions(p)),
        incomplete: attention.incomplete.is_some(),
    }
}

fn pct_text(pct: Option<f64>) -> String {
    pct.map_or_else(String::new, |p| format!("{p:.2} %"))
}

/// Limits at warning, at the limit or over it, most urgent first.
fn limit_actions(limits: &[Limit], as_of: NaiveDate) -> ActionTable {
    let mut table = ActionTable {
        headers: LIMIT_TABLE.1.to_vec(),
        ..ActionTable::default()
    };
    for l in limits {
        table.rows.push(vec![
            named(&l.org_name, l.org_id),
            metric_label(&l.metric).to_string(),
            l.used_human.clone(),
            l.limit_human.clone(),
            pct_text(l.pct),
            human(l.remaining, &l.unit),
            l.status.as_str().to_string(),
            l.projected_exhaustion
                .as_deref()
                .map(|d| exhaustion_text(d, as_of))
                .unwrap_or_default(),
        ]);
        table.classes.push(l.status.as_str().to_string());
    }
    table
}

/// Trials expiring or expired: expired first (by deletion date), then expiring.
fn trial_actions(trials: &[Trial]) -> ActionTable {
    let mut table = ActionTable {
        headers: TRIAL_TABLE.1.to_vec(),
        ..ActionTable::default()
    };
    for t in trials {
        table.rows.push(vec![
            format!("#{}", opt_int(t.trial_id)),
            t.user.clone(),
            t.org.clone(),
            t.status.clone(),
            t.expiration_date
                .as_deref()
                .map(|d| d.get(..10).unwrap_or(d).to_string())
                .unwrap_or_default(),
            t.days_left.map(|d| d.to_string()).unwrap_or_default(),
            t.deletion_due.clone().unwrap_or_default(),
        ]);
        table.classes.push(t.status.clone());
    }
    table
}

/// Projects at or over the flag threshold of their compute budget.
fn project_actions(projects: &[crate::report::attention::Project]) -> ActionTable {
    let mut table = ActionTable {
        headers: PROJECT_TABLE.1.to_vec(),
        ..ActionTable::default()
    };
    for p in projects {
        table.rows.push(vec![
            named(&p.project_name, p.project_id),
            p.org_name.clone(),
            human(p.used_ms, "ms"),
            human(p.left_ms, "ms"),
            pct_text(p.pct),
            p.period_end
                .as_deref()
                .map(|d| d.get(..10).unwrap_or(d).to_string())
                .unwrap_or_default(),
        ]);
        table.classes.push(p.class().to_string());
    }
    table
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
    fn shortened_names_keep_their_start() {
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
