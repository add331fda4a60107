//! Each organization's `entitlements` figures (used, limit, status) on every day
//! of a window before T, for the organization pages' charts: from the changes the
//! mirror's history holds, read once over the whole history (the `history` section
//! of the report's SQL, storage_trends' `dataset_events` and compute_trends'
//! `org_events`), not from a read of the mirror as of each day. Over `large` with a
//! sync a day, one read of the report's extract as of a past day took 0.2-0.4 s, so
//! 90 of them would have made the organization pages ten times slower.
//!
//! A day's figures are the extract's as of that day, decided as the report decides
//! them ([`crate::report::status::judge`] on figures rounded as the report rounds
//! them): `entitlements::tests::the_figures_history_is_the_report_as_of_each_day_before_t`
//! holds the two side by side.

use crate::calendar::day_of;
use crate::report::cols::round_scaled;
use crate::report::dated::{latest, running_sum};
use crate::report::entitlements::{self, FIGURE_DECIMALS};
use crate::report::error::ReportError;
use crate::report::frame::{self, Kind};
use crate::report::status::{Status, judge};
use crate::report::tables::Table;
use crate::report::{Ctx, Reading, ReportOptions, compute_trends, storage_trends};
use chrono::NaiveDate;
use polars::prelude::DataFrame;
use rusqlite::types::Value;
use std::collections::{BTreeMap, HashMap};

/// A metric of an organization on a day, as the entitlements report had it as of
/// that day.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub used: Option<f64>,
    pub limit: Option<f64>,
    pub status: Status,
}

/// The metrics, in the report's order; [`Inputs`] index their figures by it.
const METRICS: usize = entitlements::METRIC_COUNT;

/// One organization's inputs over the mirror's history, as changes by day number.
#[derive(Default)]
struct Inputs {
    /// Changes of each metric's regular figure (a sum or a count).
    deltas: [BTreeMap<i64, f64>; METRICS],
    /// Each metric's own limit from each version of the organization on.
    limits: [BTreeMap<i64, Option<f64>>; METRICS],
    /// Each metric's limit in users' summaries: (first day, day it stops, limit).
    summary_limits: [Vec<Span>; METRICS],
    /// The summaries' counts of a metric (users: their user counts).
    summary_counts: [Vec<Span>; METRICS],
    /// A developer profile's daily metrics, by day.
    daily: BTreeMap<i64, [Option<f64>; METRICS]>,
}

impl Inputs {
    /// Adds a change of metric `m`'s regular figure on `day`.
    fn add(&mut self, m: usize, day: i64, delta: f64) {
        *self.deltas[m].entry(day).or_default() += delta;
    }
}

/// A value holding from a day to the day before another (None: still holding).
type Span = (i64, Option<i64>, Option<f64>);

/// An (organization, metric)'s figures on each day (None: not listed that day).
pub(crate) type Series = ((i64, String), Vec<Option<Figures>>);

/// The series of each organization and metric of `today` (the report's table as of
/// T) on each day from `from` to the day before T, oldest first: None on a day the
/// organization was not listed. Returns the days (day numbers) and the series.
pub(crate) fn read(
    opts: &ReportOptions,
    from: NaiveDate,
    today: &DataFrame,
) -> Result<(Vec<i64>, Vec<Series>), ReportError> {
    let days: Vec<i64> = (day_of(from)..day_of(opts.as_of)).collect();
    if days.is_empty() {
        return Ok((days, Vec::new()));
    }
    let extract = crate::report::builtin_extract(entitlements::NAME.as_str())?;
    let reading = Reading::new(opts, &extract, opts.as_of);
    let inputs = reading.run(|ctx| inputs(ctx, from))?;
    let t = Table::new(entitlements::NAME.as_str(), today);
    let (orgs, metrics) = (t.int("organization_id")?, t.text("metric")?);
    let names: Vec<(&str, bool)> = entitlements::metric_names().collect();
    let mut out = Vec::with_capacity(t.height());
    for r in 0..t.height() {
        let (Some(org), Some(metric)) = (orgs[r], metrics[r]) else {
            continue;
        };
        let Some(m) = names.iter().position(|(n, _)| *n == metric) else {
            continue;
        };
        let series = match inputs.get(&org) {
            Some(inputs) => series(inputs, (m, names[m].1), &days, &opts.thresholds),
            None => vec![None; days.len()],
        };
        out.push(((org, metric.to_string()), series));
    }
    Ok((days, out))
}

/// Metric `m`'s figures on each of `days`: the extract's `COALESCE`s of an
/// organization's own figures and its summaries', and a developer profile's daily
/// metrics once it has any; `regular`: whether other organizations have a figure.
fn series(
    inputs: &Inputs,
    (m, regular_source): (usize, bool),
    days: &[i64],
    thresholds: &crate::report::Thresholds,
) -> Vec<Option<Figures>> {
    let own = latest(days, &inputs.limits[m]);
    let summary_limit = largest(days, &inputs.summary_limits[m]);
    let summary_count = largest(days, &inputs.summary_counts[m]);
    let daily = latest(days, &inputs.daily);
    let regular = running_sum(days, &inputs.deltas[m]);
    let scale = 10f64.powi(FIGURE_DECIMALS);
    let round = |v: Option<f64>| v.map(|x| round_scaled(x, scale));
    (0..days.len())
        .map(|k| {
            // Listed through get-organization, else through the summaries alone.
            let (limit, count) = match (own[k], summary_limit[k]) {
                (Some(own), summary) => (own.or(summary.flatten()), None),
                (None, Some(summary)) => (summary, summary_count[k].flatten()),
                (None, None) => return None,
            };
            let used = match daily[k] {
                Some(figures) => figures[m],
                None if !regular_source => None,
                None => Some(count.unwrap_or(regular[k])),
            };
            let (used, limit) = (round(used), round(limit));
            let status = judge(used, limit, thresholds).status;
            Some(Figures {
                used,
                limit,
                status,
            })
        })
        .collect()
}

/// On each of `days`: None when no span holds then, else the largest value of
/// those that do (None when none of them has one), as SQL's `MAX` reads them.
fn largest(days: &[i64], spans: &[Span]) -> Vec<Option<Option<f64>>> {
    days.iter()
        .map(|&day| {
            let holding = spans
                .iter()
                .filter(|(from, until, _)| *from <= day && until.is_none_or(|u| day < u));
            holding.fold(None, |max: Option<Option<f64>>, (_, _, v)| {
                Some(match (max.flatten(), *v) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                })
            })
        })
        .collect()
}

/// Every organization's inputs, from the three sections.
fn inputs(ctx: &Ctx<'_>, from: NaiveDate) -> Result<HashMap<i64, Inputs>, ReportError> {
    let mut out: HashMap<i64, Inputs> = HashMap::new();
    // The changes before the window count as one.
    let before = day_of(from) - 1;
    let names: Vec<(&str, bool)> = entitlements::metric_names().collect();
    let index = |name: &str| names.iter().position(|(n, _)| *n == name);
    let mut params = Ctx::params(ctx.as_of).to_vec();
    params.push((":from", Value::Text(from.format("%Y-%m-%d").to_string())));
    let needs = [
        ("organization_id", Kind::Int),
        ("metric", Kind::Text),
        ("day", Kind::Day),
        ("kind", Kind::Text),
        ("value", Kind::Real),
        ("until", Kind::Day),
    ];
    let section = ("history", ctx.extract.part("history")?);
    batches(ctx, ctx.extract, section, &params, &needs, &mut |t| {
        let (orgs, metrics, days) = (t.int("organization_id")?, t.text("metric")?, t.int("day")?);
        let (kinds, values, until) = (t.text("kind")?, t.float("value")?, t.int("until")?);
        for r in 0..t.height() {
            let (Some(org), Some(m), Some(day)) = (orgs[r], metrics[r].and_then(index), days[r])
            else {
                continue;
            };
            let inputs = out.entry(org).or_default();
            let (value, until) = (values[r], until[r]);
            match kinds[r] {
                Some("delta") => inputs.add(m, day.max(before), value.unwrap_or(0.0)),
                Some("limit") => _ = inputs.limits[m].insert(day, value),
                Some("summary_limit") => inputs.summary_limits[m].push((day, until, value)),
                Some("summary_count") => inputs.summary_counts[m].push((day, until, value)),
                Some("daily") => inputs.daily.entry(day).or_default()[m] = value,
                _ => {}
            }
        }
        Ok(())
    })?;
    for (report, part, metric) in [
        (storage_trends::NAME, "dataset_events", "storage_bytes"),
        (compute_trends::NAME, "org_events", "compute_seconds"),
    ] {
        if let Some(m) = index(metric) {
            add_deltas(ctx, (report.as_str(), part), (m, before), &mut out)?;
        }
    }
    Ok(out)
}

/// Adds the changes of another report's section (organization, day, delta) to
/// metric `m`'s, those before the window as one on the day `before` it.
fn add_deltas(
    ctx: &Ctx<'_>,
    (report, part): (&str, &str),
    (m, before): (usize, i64),
    out: &mut HashMap<i64, Inputs>,
) -> Result<(), ReportError> {
    let extract = crate::report::builtin_extract(report)?;
    let needs = [
        ("organization_id", Kind::Int),
        ("day", Kind::Day),
        ("delta", Kind::Real),
    ];
    let params = Ctx::params(ctx.as_of);
    let section = (part, extract.part(part)?);
    batches(ctx, &extract, section, &params, &needs, &mut |t| {
        let (orgs, days, deltas) = (t.int("organization_id")?, t.int("day")?, t.float("delta")?);
        for r in 0..t.height() {
            if let (Some(org), Some(day), Some(delta)) = (orgs[r], days[r], deltas[r]) {
                out.entry(org).or_default().add(m, day.max(before), delta);
            }
        }
        Ok(())
    })
}

/// Reads a section a batch of rows at a time: the changes of the whole history
/// (a change a day of each project's compute) are never all held at once.
fn batches(
    ctx: &Ctx<'_>,
    extract: &crate::report::sql::Extract,
    section: (&str, &str),
    params: &frame::Params,
    needs: &[(&str, Kind)],
    each: &mut dyn FnMut(&Table<'_>) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let report = extract.report.clone();
    frame::read_sql_batches(
        ctx.conn,
        extract,
        section,
        params,
        needs,
        frame::BATCH_ROWS,
        &mut |df| each(&Table::new(&report, &df)),
    )
}
