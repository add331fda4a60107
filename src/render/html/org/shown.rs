//! The charts an organization's page draws from report tables besides its limits'
//! history: each names a report the run keeps, the organization's rows of one
//! period kind, and the column it draws. A report reaches the pages by a line in
//! [`REPORT_CHARTS`].

use crate::calendar::parse_day;
use crate::report::tables::Table;
use crate::report::{KeptTable, KeptTables, ReportError, ReportName};
use std::collections::HashMap;

/// A chart of an organization's rows of a report.
pub struct ReportChart {
    /// The report.
    pub report: ReportName,
    /// What the chart shows, as its title and caption say it.
    pub label: &'static str,
    /// The column holding the organization's id, and the one (with its value) that
    /// says a row is an organization's; None when every row is.
    pub key: &'static str,
    pub of_organizations: Option<(&'static str, &'static str)>,
    /// The rows drawn: those whose `period` column holds this.
    pub period: &'static str,
    /// The column of the period's first day (the x axis) and the value drawn, in
    /// `unit` (`bytes`, `seconds`, `count`).
    pub day: &'static str,
    pub value: &'static str,
    pub unit: &'static str,
}

/// The report charts of every organization's page, in the order drawn.
pub const REPORT_CHARTS: &[ReportChart] = &[ReportChart {
    report: crate::report::storage_trends::NAME,
    label: "storage",
    key: "entity_id",
    of_organizations: Some(("entity_type", "organization")),
    period: "day",
    day: "period_start",
    value: "storage_bytes",
    unit: "bytes",
}];

/// One chart's points, by organization: (day number, value), oldest first.
pub type Points = HashMap<i64, Vec<(i64, f64)>>;

/// The points of each of `charts` whose report the run kept, for the
/// organizations `orgs` (a range of them: a table on disk is read a range at a
/// time).
pub fn points<'c>(
    charts: &'c [ReportChart],
    tables: &KeptTables,
    orgs: &[i64],
) -> Result<Vec<(&'c ReportChart, Points)>, ReportError> {
    let mut out = Vec::new();
    for chart in charts {
        if let Some(table) = tables.get(chart.report) {
            out.push((chart, of(chart, table, orgs)?));
        }
    }
    Ok(out)
}

fn of(chart: &ReportChart, table: &KeptTable, orgs: &[i64]) -> Result<Points, ReportError> {
    let df = table.rows_of(chart.key, orgs)?;
    let t = Table::new(table.report(), &df);
    let (ids, period) = (t.int(chart.key)?, t.text("period")?);
    let (days, values) = (t.text(chart.day)?, t.float(chart.value)?);
    let kinds = match chart.of_organizations {
        Some((column, _)) => t.text(column)?,
        None => vec![None; t.height()],
    };
    let mut out = Points::new();
    for r in 0..t.height() {
        let organization = chart
            .of_organizations
            .is_none_or(|(_, kind)| kinds[r] == Some(kind));
        if !organization || period[r] != Some(chart.period) {
            continue;
        }
        if let (Some(id), Some(day), Some(value)) = (ids[r], days[r].and_then(parse_day), values[r])
        {
            out.entry(id).or_default().push((day, value));
        }
    }
    for points in out.values_mut() {
        points.sort_by_key(|(day, _)| *day);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::{Column, DataFrame};

    #[test]
    fn a_chart_takes_the_organizations_rows_of_its_period_only_oldest_first() {
        let df = DataFrame::new_infer_height(vec![
            Column::new(
                "entity_type".into(),
                [
                    "organization",
                    "organization",
                    "whitelabel",
                    "organization",
                    "organization",
                ],
            ),
            Column::new("entity_id".into(), [7i64, 7, 7, 8, 7]),
            Column::new("period".into(), ["day", "day", "day", "day", "week"]),
            Column::new(
                "period_start".into(),
                [
                    "2026-11-02",
                    "2026-11-01",
                    "2026-11-01",
                    "2026-11-01",
                    "2026-10-26",
                ],
            ),
            Column::new("level".into(), [2.0, 1.0, 50.0, 9.0, 3.0]),
        ])
        .expect("a table");
        let mut table = KeptTable::new("test", usize::MAX);
        table.add(df).expect("kept");
        let chart = ReportChart {
            report: ReportName::new("test"),
            label: "level",
            key: "entity_id",
            of_organizations: Some(("entity_type", "organization")),
            period: "day",
            day: "period_start",
            value: "level",
            unit: "bytes",
        };
        let points = of(&chart, &table, &[7]).expect("points");
        let day = |text| parse_day(text).expect("day");
        assert_eq!(points.len(), 1, "only the organizations asked for");
        assert_eq!(
            points[&7],
            [(day("2026-11-01"), 1.0), (day("2026-11-02"), 2.0)]
        );
    }
}
