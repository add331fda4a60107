//! `orgs/<id>.html`: a page per organization not deleted at the as-of date, for the
//! account manager asked "how is Acme doing?": its limits with their use over the
//! last 90 days, its trials, projects, members, changes and alerts on one screen.
//! Self-contained like `index.html` (inline styles and SVG, no scripts), linked from
//! it, and built from the run's report tables (already pseudonymized with
//! `--redact-pii`), plus what the engine reads for them (`report::org_facts`) and
//! the alert conditions that held (`alerts::held`).

mod chart;
mod data;
mod page;
pub(crate) mod shown;

use super::PageInfo;
use super::data::day_label;
use crate::alerts::held::{self, Held};
use crate::calendar::day_of;
use crate::render::WrittenFile;
use crate::render::files::write_bytes;
use crate::report::attention::RunsOut;
use crate::report::error::SqlSite;
use crate::report::org_facts;
use crate::report::org_facts::Since;
use crate::report::units::metric_label;
use crate::report::{
    Format, KeptTables, ReportError, ReportOptions, entitlements, project_compute, trials,
};
use chrono::NaiveDate;
use data::{
    ByOrg, LIMITS, LIMITS_CARRY, MetricFacts, Org, PROJECTS, PROJECTS_CARRY, TRIALS, TRIALS_CARRY,
    Table,
};
use polars::prelude::DataFrame;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::Path;

/// The pages' folder, next to `index.html`.
pub const DIR: &str = "orgs";

/// An organization's page, relative to `index.html`.
pub fn href(id: i64) -> String {
    format!("{DIR}/{id}.html")
}

/// The organizations that get a page, by name: `(id, name)`, those of the
/// `entitlements` table (none without it).
pub fn listed(entitlements: Option<&DataFrame>) -> Result<Vec<(i64, String)>, ReportError> {
    let Some(df) = entitlements else {
        return Ok(Vec::new());
    };
    Ok(data::organizations(df)?
        .into_iter()
        .map(|o| (o.id, o.name))
        .collect())
}

/// Organizations whose pages are made together: their rows of the report tables
/// (as cells) and their members are taken for these pages only, then dropped.
/// Over `xxlarge` (9,001 pages), every organization's at once took 60-90 MB more
/// at the run's peak; 1,024 at a time keeps two cores busy on the pages.
const ORGS_AT_A_TIME: usize = 1024;

/// What the pages of a range of organizations are made from.
struct Inputs<'a> {
    info: &'a PageInfo<'a>,
    limits: Table,
    projects: Table,
    trials: Table,
    members: HashMap<i64, Vec<org_facts::Member>>,
    /// The points of the report charts ([`shown::REPORT_CHARTS`]).
    report_charts: Vec<(&'static shown::ReportChart, shown::Points)>,
    shared: &'a Shared,
}

/// What every page reads, read once.
struct Shared {
    facts: HashMap<i64, Vec<MetricFacts>>,
    extra: org_facts::Extra,
    alerts: HashMap<i64, Vec<Held>>,
}

/// Writes every organization's page into `<dir>/orgs/`, a range of organizations
/// at a time; without the `entitlements` report (the list of organizations) there
/// are none.
pub fn write_all(
    opts: &ReportOptions,
    info: &PageInfo<'_>,
    tables: &KeptTables,
    dir: &Path,
) -> Result<Vec<WrittenFile>, ReportError> {
    let Some(entitlements) = tables.get(entitlements::NAME) else {
        return Ok(Vec::new());
    };
    let entitlements = entitlements.whole()?;
    let extra = org_facts::read(opts, tables)?;
    let shared = Shared {
        alerts: held(opts, &extra)?,
        facts: data::metric_facts(&entitlements)?,
        extra,
    };
    let limits = ByOrg::of(tables.get(entitlements::NAME), LIMITS, LIMITS_CARRY);
    let projects = ByOrg::of(tables.get(project_compute::NAME), PROJECTS, PROJECTS_CARRY);
    let trials = ByOrg::of(tables.get(trials::NAME), TRIALS, TRIALS_CARRY);
    let folder = dir.join(DIR);
    opts.file_mode
        .create_dir_all(&folder)
        .map_err(|cause| ReportError::Io {
            path: folder.clone(),
            cause,
        })?;
    let members = org_facts::Members::open(opts)?;
    let orgs = data::organizations(&entitlements)?;
    let mut written = Vec::with_capacity(orgs.len());
    for range in orgs.chunks(ORGS_AT_A_TIME) {
        let ids: Vec<i64> = range.iter().map(|org| org.id).collect();
        let inputs = Inputs {
            info,
            limits: limits.table(&ids)?,
            projects: projects.table(&ids)?,
            trials: trials.table(&ids)?,
            members: members.of(&ids)?,
            report_charts: shown::points(shown::REPORT_CHARTS, tables, &ids)?,
            shared: &shared,
        };
        let pages: Vec<WrittenFile> = range
            .par_iter()
            .map(|org| write_one(&inputs, org, &folder, opts))
            .collect::<Result<_, _>>()?;
        written.extend(pages);
    }
    Ok(written)
}

fn write_one(
    inputs: &Inputs<'_>,
    org: &Org,
    folder: &Path,
    opts: &ReportOptions,
) -> Result<WrittenFile, ReportError> {
    let extra = &inputs.shared.extra;
    let reached = of_org(&inputs.shared.facts, org.id)
        .iter()
        .filter_map(|facts| Some((facts.metric.clone(), reached(inputs, org.id, facts)?.cell())))
        .collect();
    let text = page::render(&page::OrgPage {
        info: inputs.info,
        org,
        limits: &inputs.limits,
        reached: &reached,
        projects: &inputs.projects,
        trials: &inputs.trials,
        charts: charts(inputs, org)?,
        history_note: extra.history_starts.map(|first| {
            format!("The mirror holds data from {first} on (the day of its first sync).")
        }),
        members: of_org(&inputs.members, org.id),
        changes: of_org(&extra.changes, org.id),
        alerts: of_org(&inputs.shared.alerts, org.id),
    });
    let path = folder.join(format!("{}.html", org.id));
    let (sha256, bytes) = write_bytes(&path, text.as_bytes(), opts.file_mode)?;
    Ok(WrittenFile {
        report: href(org.id),
        format: Format::Html,
        path,
        rows: inputs.limits.of_org(org.id).len(),
        holds: crate::render::Holds::Rows(inputs.limits.of_org(org.id).len()),
        bytes,
        sha256,
    })
}

/// The alert conditions that held up to the as-of day, by organization.
fn held(
    opts: &ReportOptions,
    extra: &org_facts::Extra,
) -> Result<HashMap<i64, Vec<Held>>, ReportError> {
    let conn = crate::mirror::open_ro(&opts.db)?;
    held::by_organization(&conn, opts.as_of, &extra.trial_orgs).map_err(|cause| {
        ReportError::Query {
            site: SqlSite::boxed("organization pages", "the mirror", "alert conditions"),
            cause,
        }
    })
}

fn of_org<T>(by_org: &HashMap<i64, Vec<T>>, org: i64) -> &[T] {
    by_org.get(&org).map_or(&[], Vec::as_slice)
}

/// A chart for each of the organization's metrics with a history, in the limits
/// table's order, then the report charts.
fn charts(inputs: &Inputs<'_>, org: &Org) -> Result<Vec<(String, String)>, ReportError> {
    let history = &inputs.shared.extra.history;
    let mut out = Vec::new();
    for (k, facts) in of_org(&inputs.shared.facts, org.id).iter().enumerate() {
        let daily = history.daily(org.id, &facts.metric);
        let points: Vec<(i64, f64)> = daily
            .iter()
            .filter_map(|(d, f)| Some((*d, f.used?)))
            .collect();
        if points.is_empty() {
            continue;
        }
        let limits: Vec<(i64, f64)> = daily
            .iter()
            .filter_map(|(d, f)| Some((*d, f.limit?)))
            .collect();
        let reached = reached(inputs, org.id, facts).map(|r| r.clause());
        let chart = chart::History {
            label: metric_label(&facts.metric),
            over: "the last 90 days",
            unit: &facts.unit,
            points: &points,
            limits: &limits,
            reached: reached.as_deref(),
        };
        let svg = chart::history(&chart, &format!("chart-metric-{k}"))?;
        out.push((chart::caption(&chart), svg));
    }
    for (k, (report, points)) in inputs.report_charts.iter().enumerate() {
        let Some(points) = points.get(&org.id) else {
            continue;
        };
        let chart = chart::History {
            label: report.label,
            over: &format!("the last {} {}s", points.len(), report.period),
            unit: report.unit,
            points,
            limits: &[],
            reached: None,
        };
        let svg = chart::history(&chart, &format!("chart-report-{k}"))?;
        let caption = format!(
            "{} at the end of each {} (from {})",
            report.label, report.period, report.report
        );
        out.push((caption, svg));
    }
    Ok(out)
}

/// When a metric's limit was reached (one at or over it: since when its history
/// saw it there) or will be (the entitlements report's projection).
fn reached<'f>(inputs: &Inputs<'_>, org: i64, facts: &'f MetricFacts) -> Option<Reached<'f>> {
    let extra = &inputs.shared.extra;
    if let Some(since) = extra.history.since(org, &facts.metric) {
        return Some(Reached::Since(since, extra.history_starts));
    }
    let date = facts.exhaustion.as_deref()?;
    Some(Reached::Projected(RunsOut::of(date, inputs.info.as_of)))
}

/// When a limit was or will be reached, in the page's words.
enum Reached<'a> {
    /// Since when the history saw the metric at or over it, with the mirror's
    /// first day when the window holds it.
    Since(Since, Option<NaiveDate>),
    /// The entitlements report's projection.
    Projected(RunsOut<'a>),
}

impl Reached<'_> {
    /// Under the limits table's "limit reached" heading.
    fn cell(&self) -> String {
        match self {
            Reached::Since(Since::On(day), _) => format!("on {}", day_label(*day)),
            Reached::Since(Since::Before(day), first) => {
                let first_sync = first.is_some_and(|f| day_of(f) == *day);
                let note = if first_sync { " (the first sync)" } else { "" };
                format!("before {}{note}", day_label(*day))
            }
            Reached::Projected(runs_out) => runs_out.when(),
        }
    }

    /// After a chart's limit in its caption.
    fn clause(&self) -> String {
        match self {
            Reached::Since(..) => format!("limit reached {}", self.cell()),
            Reached::Projected(runs_out) => runs_out.clause(),
        }
    }
}
