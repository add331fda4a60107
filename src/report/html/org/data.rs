//! The report tables as an organization's page shows them: each table's chosen
//! columns as text, read once for every page, with each organization's rows.

use crate::frame_values::{bools, floats, ints, strs};
use crate::report::frame::fmt_f64;
use crate::report::units::metric_label;
use polars::prelude::DataFrame;
use std::collections::HashMap;

/// How a column's cells are written.
#[derive(Clone, Copy)]
pub enum Show {
    Text,
    /// A percentage, one decimal.
    Pct,
    Number,
    /// `yes` / `no`.
    Bool,
    /// A metric's name in words.
    Metric,
    /// The day of a timestamp (`YYYY-MM-DD`).
    Day,
}

/// A column a page table shows.
pub struct Col {
    pub header: &'static str,
    pub column: &'static str,
    pub show: Show,
}

const fn col(header: &'static str, column: &'static str, show: Show) -> Col {
    Col {
        header,
        column,
        show,
    }
}

/// The limits table: `entitlements`.
pub const LIMITS: &[Col] = &[
    col("metric", "metric", Show::Metric),
    col("used", "used_human", Show::Text),
    col("limit", "limit_human", Show::Text),
    col("% used", "pct_used", Show::Pct),
    col("status", "status", Show::Text),
    col("limit reached on", "projected_exhaustion", Show::Text),
];

/// The projects table: `project_compute`.
pub const PROJECTS: &[Col] = &[
    col("project", "project_name", Show::Text),
    col("id", "project_id", Show::Number),
    col("compute used", "time_used_human", Show::Text),
    col("compute left", "time_left_human", Show::Text),
    col("% of budget", "pct_used", Show::Pct),
    col("flagged", "flagged", Show::Bool),
    col("last accessed", "last_accessed", Show::Day),
    col("deleted", "deleted_date", Show::Day),
];

/// The trials table: `trials`.
pub const TRIALS: &[Col] = &[
    col("user", "user_name", Show::Text),
    col("status", "status", Show::Text),
    col("expires", "expiration_date", Show::Day),
    col("days left", "days_left", Show::Number),
    col("deletion due", "deletion_due", Show::Day),
];

/// One report table's cells for the pages.
pub struct Table {
    pub cols: &'static [Col],
    /// Cell text, column by column.
    pub cells: Vec<Vec<String>>,
    /// Each row's status (a CSS class of the page), when the table has one.
    pub status: Vec<Option<String>>,
    /// Each row's completeness: None when complete or not said, else what is missing.
    pub missing: Vec<Option<String>>,
    /// Each organization's rows.
    pub rows: HashMap<i64, Vec<usize>>,
}

impl Table {
    /// The table of `df` (none without one).
    pub fn of(df: Option<&DataFrame>, cols: &'static [Col]) -> Table {
        let Some(df) = df else {
            return Table {
                cols,
                cells: cols.iter().map(|_| Vec::new()).collect(),
                status: Vec::new(),
                missing: Vec::new(),
                rows: HashMap::new(),
            };
        };
        let mut rows: HashMap<i64, Vec<usize>> = HashMap::new();
        for (r, org) in ints(df, "organization_id").into_iter().enumerate() {
            if let Some(org) = org {
                rows.entry(org).or_default().push(r);
            }
        }
        let complete = bools(df, "complete");
        let missing = strs(df, "missing");
        Table {
            cols,
            cells: cols.iter().map(|c| texts(df, c)).collect(),
            status: strs(df, "status")
                .into_iter()
                .map(|s| s.map(str::to_string))
                .collect(),
            missing: complete
                .iter()
                .zip(missing)
                .map(|(c, m)| (*c == Some(false)).then(|| m.unwrap_or("").to_string()))
                .collect(),
            rows,
        }
    }

    /// The rows of organization `org`.
    pub fn of_org(&self, org: i64) -> &[usize] {
        self.rows.get(&org).map_or(&[], Vec::as_slice)
    }
}

/// A column's cells as the page writes them ("" for unknown).
fn texts(df: &DataFrame, col: &Col) -> Vec<String> {
    let text = |v: Option<String>| v.unwrap_or_default();
    match col.show {
        Show::Text => strs(df, col.column)
            .into_iter()
            .map(|v| text(v.map(str::to_string)))
            .collect(),
        Show::Day => strs(df, col.column)
            .into_iter()
            .map(|v| text(v.map(|t| t.get(..10).unwrap_or(t).to_string())))
            .collect(),
        Show::Metric => strs(df, col.column)
            .into_iter()
            .map(|v| text(v.map(|m| metric_label(m).to_string())))
            .collect(),
        Show::Pct => floats(df, col.column)
            .into_iter()
            .map(|v| text(v.map(|p| format!("{p:.1} %"))))
            .collect(),
        Show::Number => floats(df, col.column)
            .into_iter()
            .map(|v| text(v.map(fmt_f64)))
            .collect(),
        Show::Bool => bools(df, col.column)
            .into_iter()
            .map(|v| text(v.map(|b| if b { "yes" } else { "no" }.to_string())))
            .collect(),
    }
}

/// The organizations the pages are for (those of `entitlements`: every one not
/// deleted at the as-of date), by name, each with its metrics' limits and
/// projected exhaustion.
pub struct Org {
    pub id: i64,
    pub name: String,
}

pub fn organizations(entitlements: &DataFrame) -> Vec<Org> {
    let mut seen: HashMap<i64, String> = HashMap::new();
    for (id, name) in ints(entitlements, "organization_id")
        .into_iter()
        .zip(strs(entitlements, "organization_name"))
    {
        if let Some(id) = id {
            seen.entry(id)
                .or_insert_with(|| name.unwrap_or("").to_string());
        }
    }
    let mut orgs: Vec<Org> = seen
        .into_iter()
        .map(|(id, name)| Org { id, name })
        .collect();
    orgs.sort_by(|a, b| {
        a.name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then(a.id.cmp(&b.id))
    });
    orgs
}

/// A metric's limit, unit and projected exhaustion day, for its chart.
pub struct MetricFacts {
    pub metric: String,
    pub unit: String,
    pub limit: Option<f64>,
    pub exhaustion: Option<String>,
}

/// Each organization's metrics, in the order of its `entitlements` rows.
pub fn metric_facts(entitlements: &DataFrame) -> HashMap<i64, Vec<MetricFacts>> {
    let org = ints(entitlements, "organization_id");
    let metric = strs(entitlements, "metric");
    let unit = strs(entitlements, "unit");
    let limit = floats(entitlements, "limit");
    let exhaustion = strs(entitlements, "projected_exhaustion");
    let mut out: HashMap<i64, Vec<MetricFacts>> = HashMap::new();
    for r in 0..entitlements.height() {
        let (Some(o), Some(m)) = (org[r], metric[r]) else {
            continue;
        };
        out.entry(o).or_default().push(MetricFacts {
            metric: m.to_string(),
            unit: unit[r].unwrap_or("").to_string(),
            limit: limit[r],
            exhaustion: exhaustion[r].map(str::to_string),
        });
    }
    out
}
