//! The rows that need a person's action, found once per run from the finished
//! report frames: limits at `warning`, `at_limit` or `exceeded`, trials `expiring`
//! or `expired`, `flagged` projects. The terminal summary, the HTML page's cards
//! and its action tables all read this one list, so they agree with each other and
//! with the rows of the CSV files that carry those statuses.

use crate::calendar::{day_of, parse_day};
use crate::report::declaration::Describe;
use crate::report::entitlements::{self, Entitlements};
use crate::report::project_compute::ProjectCompute;
use crate::report::status::Status;
use crate::report::tables::Table;
use crate::report::trials::{self, Trials};
use crate::report::{KeptTables, ReportError};
use chrono::NaiveDate;
use polars::prelude::DataFrame;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A projected exhaustion further out than this many years is shown as "not within
/// 10 years" (a date centuries away reads like a fact; it is a tiny rate).
pub const EXHAUSTION_HORIZON_YEARS: u32 = 10;

/// The action tables of the HTML page and the workbook's "Needs action" sheet: each
/// one's title and columns, one list for both.
pub const LIMIT_TABLE: (&str, [&str; 8]) = (
    "Limits at warning, at the limit or exceeded",
    [
        "Organization",
        "Metric",
        "Used",
        "Limit",
        "Used %",
        "Remaining",
        "Status",
        "Runs out",
    ],
);
pub const TRIAL_TABLE: (&str, [&str; 7]) = (
    "Trials expiring or expired",
    [
        "Trial",
        "User",
        "Organization",
        "Status",
        "Expires",
        "Days left",
        "Deletion due",
    ],
);
pub const PROJECT_TABLE: (&str, [&str; 6]) = (
    "Projects over the compute budget flag",
    [
        "Project",
        "Organization",
        "Used",
        "Left",
        "Used %",
        "Period ends",
    ],
);

/// A named row's first cell in the action tables: `Name (#id)`.
pub fn named(name: &str, id: Option<i64>) -> String {
    let id = id.map(|n| n.to_string()).unwrap_or_default();
    format!("{name} (#{id})")
}

/// An entitlement row (in [`Attention`]: one at warning, at its limit or over it).
#[derive(Debug, Clone)]
pub struct Limit {
    pub org_id: Option<i64>,
    pub org_name: String,
    pub metric: String,
    pub unit: String,
    pub used: Option<f64>,
    pub limit: Option<f64>,
    pub used_human: String,
    pub limit_human: String,
    pub pct: Option<f64>,
    pub remaining: Option<f64>,
    pub status: Status,
    pub projected_exhaustion: Option<String>,
}

/// A trial expiring within the threshold or expired (and due for deletion).
#[derive(Debug, Clone)]
pub struct Trial {
    pub trial_id: Option<i64>,
    pub user: String,
    pub org_id: Option<i64>,
    pub org: String,
    /// `expiring` or `expired`.
    pub status: String,
    pub expiration_date: Option<String>,
    pub deletion_due: Option<String>,
    pub days_left: Option<i64>,
    /// Day numbers a timeline bar runs between: T → expiration (expiring), expiry →
    /// deletion due (expired); None when a date is missing.
    pub span: Option<(i64, i64)>,
}

impl Trial {
    pub fn expired(&self) -> bool {
        self.status == "expired"
    }
}

/// A project at or over the flag threshold of its compute budget.
#[derive(Debug, Clone)]
pub struct Project {
    pub project_id: Option<i64>,
    pub project_name: String,
    pub org_id: Option<i64>,
    pub org_name: String,
    pub used_ms: Option<f64>,
    pub left_ms: Option<f64>,
    pub pct: Option<f64>,
    pub period_end: Option<String>,
}

impl Project {
    /// The row's class (and colour): `exceeded` from 100 % of the budget, else
    /// `warning`.
    pub fn class(&self) -> &'static str {
        if self.pct.unwrap_or(0.0) >= 100.0 {
            "exceeded"
        } else {
            "warning"
        }
    }
}

/// A row whose figures lack an input (`complete` false): its report, what it is
/// about and what it lacks. The rows of one entity in one report (e.g. an
/// organization's trend periods) are one entry with their count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    pub report: String,
    /// e.g. `organization 902 (Name) compute_seconds` or `project 31 (Name)`.
    pub what: String,
    pub missing: String,
    /// Rows of the report this entry stands for.
    pub rows: usize,
}

/// Everything that needs action; a list is None when its report was not built.
#[derive(Debug, Clone, Default)]
pub struct Attention {
    /// Most urgent first: by status (exceeded, at_limit, warning), then percentage.
    pub limits: Option<Vec<Limit>>,
    /// Expired first (by deletion date), then expiring (by expiration).
    pub trials: Option<Vec<Trial>>,
    /// Highest percentage first.
    pub projects: Option<Vec<Project>>,
    /// Rows with incomplete figures, in report order (None when no report that
    /// carries `complete` was built).
    pub incomplete: Option<Vec<Incomplete>>,
}

/// The counts a person sees first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub limits: usize,
    /// Organizations with at least one such limit.
    pub limit_orgs: usize,
    /// Limits per status.
    pub exceeded: usize,
    pub at_limit: usize,
    pub warning: usize,
    pub trials: usize,
    pub trials_expired: usize,
    pub trials_expiring: usize,
    pub projects: usize,
    /// Rows whose figures are incomplete, over every report.
    pub incomplete: usize,
}

impl Attention {
    /// Reads a run as of `as_of`: the tables it keeps, and the incomplete rows
    /// gathered from every report that carries `complete` as its rows went out
    /// ([`IncompleteRows`], by report).
    pub fn of_run(
        tables: &KeptTables,
        incomplete: &BTreeMap<String, Vec<Incomplete>>,
        as_of: NaiveDate,
    ) -> Result<Attention, ReportError> {
        let whole = |report| tables.get(report).map(|t| t.whole()).transpose();
        Ok(Attention {
            limits: whole(entitlements::NAME)?
                .as_ref()
                .map(limits)
                .transpose()?,
            trials: whole(trials::NAME)?
                .map(|df| expiring_trials(&df, day_of(as_of)))
                .transpose()?,
            projects: projects(tables)?,
            incomplete: in_report_order(incomplete),
        })
    }

    pub fn counts(&self) -> Counts {
        let limits = self.limits.as_deref().unwrap_or_default();
        let trials = self.trials.as_deref().unwrap_or_default();
        let per = |s: Status| limits.iter().filter(|l| l.status == s).count();
        let orgs: BTreeSet<(Option<i64>, &str)> = limits
            .iter()
            .map(|l| (l.org_id, l.org_name.as_str()))
            .collect();
        let expired = trials.iter().filter(|t| t.expired()).count();
        Counts {
            limits: limits.len(),
            limit_orgs: orgs.len(),
            exceeded: per(Status::Exceeded),
            at_limit: per(Status::AtLimit),
            warning: per(Status::Warning),
            trials: trials.len(),
            trials_expired: expired,
            trials_expiring: trials.len() - expired,
            projects: self.projects.as_ref().map_or(0, Vec::len),
            incomplete: self
                .incomplete
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|i| i.rows)
                .sum(),
        }
    }
}

/// A projected exhaustion date as a person reads it: the one rule the page, the
/// organization pages, the workbook's display cells, the summary, the alerts and
/// the e-mails take their words from. A date further out than
/// [`EXHAUSTION_HORIZON_YEARS`] from T is a tiny rate, not a date anyone plans by;
/// the files keep the exact date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOut<'a> {
    /// Within the horizon: the date.
    On(&'a str),
    /// Further out.
    NotWithinHorizon,
}

impl<'a> RunsOut<'a> {
    /// The projection `date` (`YYYY-MM-DD`) as of T.
    pub fn of(date: &'a str, as_of: NaiveDate) -> RunsOut<'a> {
        match exhaustion_within_horizon(date, as_of) {
            Some(date) => RunsOut::On(date),
            None => RunsOut::NotWithinHorizon,
        }
    }

    /// A table cell: the date, or "not within 10 years".
    pub fn text(&self) -> String {
        match self {
            RunsOut::On(date) => date.to_string(),
            RunsOut::NotWithinHorizon => beyond_horizon(),
        }
    }

    /// Under a "limit reached" heading: "around 2027-03-01", or "not within 10
    /// years".
    pub fn when(&self) -> String {
        match self {
            RunsOut::On(date) => format!("around {date}"),
            RunsOut::NotWithinHorizon => beyond_horizon(),
        }
    }

    /// A clause after a limit's figures: "limit reached around 2027-03-01 at the
    /// recent rate", or "limit not reached within 10 years at the recent rate".
    pub fn clause(&self) -> String {
        match self {
            RunsOut::On(_) => format!("limit reached {} at the recent rate", self.when()),
            RunsOut::NotWithinHorizon => format!(
                "limit not reached within {EXHAUSTION_HORIZON_YEARS} years at the recent rate"
            ),
        }
    }
}

fn beyond_horizon() -> String {
    format!("not within {EXHAUSTION_HORIZON_YEARS} years")
}

/// A projected exhaustion date as a person reads it ([`RunsOut::text`]).
pub fn exhaustion_text(date: &str, as_of: NaiveDate) -> String {
    RunsOut::of(date, as_of).text()
}

/// The date, when it falls within [`EXHAUSTION_HORIZON_YEARS`] of T.
pub fn exhaustion_within_horizon(date: &str, as_of: NaiveDate) -> Option<&str> {
    let horizon = as_of
        .checked_add_months(chrono::Months::new(12 * EXHAUSTION_HORIZON_YEARS))
        .unwrap_or(NaiveDate::MAX)
        .format("%Y-%m-%d")
        .to_string();
    // Dates are `YYYY-MM-DD`: text order is time order.
    (date <= horizon.as_str()).then_some(date)
}

/// Every entitlement row, most urgent first: by status (exceeded, at_limit, warning,
/// ok, no_limit, no_data), then percentage.
pub fn entitlement_rows(df: &DataFrame) -> Result<Vec<Limit>, ReportError> {
    let t = Entitlements::read(df)?;
    let mut out: Vec<Limit> = (0..t.height())
        .map(|r| Limit {
            org_id: t.organization_id[r],
            org_name: t.organization_name[r].unwrap_or("?").to_string(),
            metric: t.metric[r].unwrap_or("?").to_string(),
            unit: t.unit[r].unwrap_or("").to_string(),
            used: t.used[r],
            limit: t.limit[r],
            used_human: t.used_human[r].unwrap_or("").to_string(),
            limit_human: t.limit_human[r].unwrap_or("").to_string(),
            pct: t.pct_used[r],
            remaining: t.remaining[r],
            status: t.status[r]
                .and_then(Status::parse)
                .unwrap_or(Status::NoData),
            projected_exhaustion: t.projected_exhaustion[r].map(str::to_string),
        })
        .collect();
    out.sort_by(|a, b| {
        a.status
            .cmp(&b.status)
            .then(b.pct.unwrap_or(0.0).total_cmp(&a.pct.unwrap_or(0.0)))
            .then(a.org_id.cmp(&b.org_id))
    });
    Ok(out)
}

fn limits(df: &DataFrame) -> Result<Vec<Limit>, ReportError> {
    let mut rows = entitlement_rows(df)?;
    rows.retain(|l| l.status.needs_action());
    Ok(rows)
}

fn expiring_trials(df: &DataFrame, today: i64) -> Result<Vec<Trial>, ReportError> {
    let t = Trials::read(df)?;
    let mut out: Vec<Trial> = (0..t.height())
        .filter_map(|r| {
            let s = t.status[r].filter(|s| matches!(*s, "expiring" | "expired"))?;
            let span = if s == "expiring" {
                t.expiration_date[r]
                    .and_then(parse_day)
                    .map(|to| (today, to))
            } else {
                t.expired_date[r]
                    .or(t.expiration_date[r])
                    .and_then(parse_day)
                    .zip(t.deletion_due[r].and_then(parse_day))
            };
            Some(Trial {
                trial_id: t.trial_id[r],
                user: t.user_name[r].unwrap_or("?").to_string(),
                org_id: t.organization_id[r],
                org: t.organization_name[r].unwrap_or("?").to_string(),
                status: s.to_string(),
                expiration_date: t.expiration_date[r].map(str::to_string),
                deletion_due: t.deletion_due[r].map(str::to_string),
                days_left: t.days_left[r],
                span,
            })
        })
        .collect();
    out.sort_by_key(|t| (!t.expired(), t.span.map(|(_, to)| to), t.trial_id));
    Ok(out)
}

/// The flagged projects, most used first; None without `project_compute`. Read a
/// batch at a time: the table is kept on disk (`crate::report::spill`).
fn projects(tables: &KeptTables) -> Result<Option<Vec<Project>>, ReportError> {
    let Some(table) = tables.get(ProjectCompute::REPORT) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    table.for_each_batch(|df| {
        out.extend(flagged(df)?);
        Ok(())
    })?;
    out.sort_by(|a, b| {
        b.pct
            .unwrap_or(0.0)
            .total_cmp(&a.pct.unwrap_or(0.0))
            .then(a.project_id.cmp(&b.project_id))
    });
    Ok(Some(out))
}

fn flagged(df: &DataFrame) -> Result<Vec<Project>, ReportError> {
    let t = ProjectCompute::read(df)?;
    Ok((0..t.height())
        .filter(|&r| t.flagged[r] == Some(true))
        .map(|r| Project {
            project_id: t.project_id[r],
            project_name: t.project_name[r].unwrap_or("?").to_string(),
            org_id: t.organization_id[r],
            org_name: t.organization_name[r].unwrap_or("").to_string(),
            used_ms: t.time_used_ms[r],
            left_ms: t.time_left_ms[r],
            pct: t.pct_used[r],
            period_end: t.period_end[r].map(str::to_string),
        })
        .collect())
}

/// The incomplete rows of every report that carries `complete`, in report order
/// (None when none of them was built).
fn in_report_order(by_report: &BTreeMap<String, Vec<Incomplete>>) -> Option<Vec<Incomplete>> {
    let carried = crate::report::registry::BUILTIN
        .iter()
        .filter(|b| b.complete.is_some());
    let mut any = false;
    let mut out = Vec::new();
    for list in carried.filter_map(|b| by_report.get(b.name.as_str())) {
        any = true;
        out.extend(list.iter().cloned());
    }
    any.then_some(out)
}

/// The rows with `complete` false of one report, gathered batch by batch as they
/// go out: the rows of one entity that lack the same input are one entry with
/// their count, in the order first seen.
pub struct IncompleteRows {
    report: String,
    describe: Describe,
    entries: Vec<Incomplete>,
    seen: HashMap<(String, String), usize>,
}

impl IncompleteRows {
    /// The incomplete rows of `report`, each named as its declaration's
    /// `describe` says.
    pub(crate) fn new(report: &str, describe: Describe) -> IncompleteRows {
        IncompleteRows {
            report: report.to_string(),
            describe,
            entries: Vec::new(),
            seen: HashMap::new(),
        }
    }

    /// Takes in one batch of the report's rows.
    pub fn add(&mut self, df: &DataFrame) -> Result<(), ReportError> {
        let table = Table::new(&self.report, df);
        let [complete, missing, _] = crate::report::completeness::COLUMNS;
        let incomplete: Vec<usize> = (table.flag(complete)?.into_iter().enumerate())
            .filter_map(|(r, complete)| (complete == Some(false)).then_some(r))
            .collect();
        // Most batches have none: their rows are not read further.
        if incomplete.is_empty() {
            return Ok(());
        }
        let (missing, what) = (table.text(missing)?, (self.describe)(df)?);
        for r in incomplete {
            let key = (what(r), missing[r].unwrap_or("").to_string());
            match self.seen.get(&key) {
                Some(&k) => self.entries[k].rows += 1,
                None => {
                    self.seen.insert(key.clone(), self.entries.len());
                    self.entries.push(Incomplete {
                        report: self.report.clone(),
                        what: key.0,
                        missing: key.1,
                        rows: 1,
                    });
                }
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Vec<Incomplete> {
        self.entries
    }
}

/// What a row is about as a person reads it: `<kind> <id> (<name>)`, or without
/// the name when it is unknown.
pub(crate) fn entity(kind: &str, id: Option<i64>, name: Option<&str>) -> String {
    let id = id.map_or_else(|| "?".to_string(), |n| n.to_string());
    match name {
        Some(name) => format!("{kind} {id} ({name})"),
        None => format!("{kind} {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_beyond_ten_years_is_not_a_date() {
        let t = NaiveDate::from_ymd_opt(2026, 3, 20).expect("date");
        assert_eq!(exhaustion_text("2030-01-01", t), "2030-01-01");
        assert_eq!(exhaustion_text("2036-03-20", t), "2036-03-20");
        assert_eq!(exhaustion_text("2036-03-21", t), "not within 10 years");
        assert_eq!(exhaustion_text("2381-03-20", t), "not within 10 years");
        assert_eq!(
            RunsOut::of("2030-01-01", t).clause(),
            "limit reached around 2030-01-01 at the recent rate"
        );
        assert_eq!(
            RunsOut::of("3254-06-22", t).clause(),
            "limit not reached within 10 years at the recent rate"
        );
    }
}
