//! The report tables as an organization's page shows them: each table's chosen
//! columns as text, read once for every page, with each organization's rows.

use crate::report::entitlements::Entitlements;
use crate::report::frame::fmt_f64;
use crate::report::tables;
use crate::report::units::metric_label;
use crate::report::{KeptTable, ReportError};
use polars::prelude::DataFrame;
use std::borrow::Cow;
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
];

/// The projects table: `project_compute`.
pub const PROJECTS: &[Col] = &[
    col("project", "project_name", Show::Text),
    col("id", "project_id", Show::Number),
    col("compute used", "time_used_human", Show::Text),
    col("compute left", "time_left_human", Show::Text),
    col("% of budget", "pct_used", Show::Pct),
    col("flagged", "flagged", Show::Bool),
    col("last accessed", "last_accessed", Show::Text),
    col("deleted", "deleted_date", Show::Text),
];

/// What `entitlements`, `project_compute` and `trials` carry besides the columns shown.
pub const LIMITS_CARRY: Carries = Carries {
    status: true,
    completeness: true,
    key: Some("metric"),
};
pub const PROJECTS_CARRY: Carries = Carries {
    status: false,
    completeness: true,
    key: None,
};
pub const TRIALS_CARRY: Carries = Carries {
    status: true,
    completeness: false,
    key: None,
};

/// The trials table: `trials`.
pub const TRIALS: &[Col] = &[
    col("user", "user_name", Show::Text),
    col("status", "status", Show::Text),
    col("expires", "expiration_date", Show::Text),
    col("days left", "days_left", Show::Number),
    col("deletion due", "deletion_due", Show::Text),
];

/// Which of the columns a page reads besides its table's own the report carries:
/// `status` (a row's colour), the completeness columns (`complete`, `missing`),
/// and the column naming what a row is about within its organization (the limits'
/// `metric`), by which the page adds what it knows of the row besides the table.
#[derive(Clone, Copy)]
pub struct Carries {
    pub status: bool,
    pub completeness: bool,
    pub key: Option<&'static str>,
}

/// One report table's cells for the pages.
pub struct Table {
    pub cols: &'static [Col],
    /// Cell text, column by column.
    pub cells: Vec<Texts>,
    /// Each row's status (a CSS class of the page), when the table has one.
    pub status: Vec<Option<String>>,
    /// Each row's completeness: None when complete or not said, else what is missing.
    pub missing: Vec<Option<String>>,
    /// Each row's key ([`Carries::key`]), when the table has one.
    pub keys: Vec<Option<String>>,
    /// Each organization's rows.
    pub rows: HashMap<i64, Vec<usize>>,
}

impl Table {
    /// The table of `report`'s frame `df` (none without one).
    pub fn of(
        report: &str,
        df: Option<&DataFrame>,
        cols: &'static [Col],
        carries: Carries,
    ) -> Result<Table, ReportError> {
        let Some(df) = df else {
            return Ok(Table {
                cols,
                cells: cols.iter().map(|_| Texts::default()).collect(),
                status: Vec::new(),
                missing: Vec::new(),
                keys: Vec::new(),
                rows: HashMap::new(),
            });
        };
        let t = tables::Table::new(report, df);
        let rows = rows_by_org(&t)?;
        let none = vec![None; t.height()];
        let owned = |column: &str| -> Result<Vec<Option<String>>, ReportError> {
            let values = t.text(column)?.into_iter();
            Ok(values.map(|s| s.map(str::to_string)).collect())
        };
        let status = match carries.status {
            true => owned("status")?,
            false => none.clone(),
        };
        let keys = match carries.key {
            Some(column) => owned(column)?,
            None => none.clone(),
        };
        let missing = match carries.completeness {
            true => t
                .flag("complete")?
                .into_iter()
                .zip(t.text("missing")?)
                .map(|(c, m)| (c == Some(false)).then(|| m.unwrap_or("").to_string()))
                .collect(),
            false => none,
        };
        Ok(Table {
            cols,
            cells: cols
                .iter()
                .map(|c| texts(&t, c))
                .collect::<Result<_, _>>()?,
            status,
            missing,
            keys,
            rows,
        })
    }

    /// The rows of organization `org`.
    pub fn of_org(&self, org: i64) -> &[usize] {
        self.rows.get(&org).map_or(&[], Vec::as_slice)
    }
}

/// A report table as the pages take it: the rows of a range of organizations at a
/// time ([`ByOrg::table`]), so that they never hold the cells of every
/// organization's rows at once.
pub struct ByOrg<'a> {
    table: Option<&'a KeptTable>,
    cols: &'static [Col],
    carries: Carries,
}

impl<'a> ByOrg<'a> {
    /// A kept table of the run (none when the run did not build it), shown as
    /// `cols`.
    pub fn of(table: Option<&'a KeptTable>, cols: &'static [Col], carries: Carries) -> Self {
        ByOrg {
            table,
            cols,
            carries,
        }
    }

    /// The table of the rows of the organizations `orgs`.
    pub fn table(&self, orgs: &[i64]) -> Result<Table, ReportError> {
        let Some(kept) = self.table else {
            return Table::of("", None, self.cols, self.carries);
        };
        let rows = kept.of_orgs(orgs)?;
        Table::of(kept.report(), Some(&rows), self.cols, self.carries)
    }
}

/// Each organization's rows of a table, in table order.
fn rows_by_org(t: &tables::Table<'_>) -> Result<HashMap<i64, Vec<usize>>, ReportError> {
    let mut rows: HashMap<i64, Vec<usize>> = HashMap::new();
    for (r, org) in t.int("organization_id")?.into_iter().enumerate() {
        if let Some(org) = org {
            rows.entry(org).or_default().push(r);
        }
    }
    Ok(rows)
}

/// A column's cells as the page writes them ("" for unknown).
fn texts(t: &tables::Table<'_>, col: &Col) -> Result<Texts, ReportError> {
    let mut out = Texts::default();
    match col.show {
        Show::Text => out.extend(t.text(col.column)?, |v| v.into()),
        Show::Metric => out.extend(t.text(col.column)?, |m| metric_label(m).into()),
        Show::Pct => out.extend(t.float(col.column)?, |p| format!("{p:.1} %").into()),
        Show::Number => out.extend(t.float(col.column)?, |v| fmt_f64(v).into()),
        Show::Bool => out.extend(t.flag(col.column)?, |b| if b { "yes" } else { "no" }.into()),
    }
    Ok(out)
}

/// A column's cell texts in one buffer. A table holds every project of the world
/// for the pages; a string of its own per cell costs an allocation and 24 bytes
/// besides a text of about ten, so the cells would take several times their text.
#[derive(Default)]
pub struct Texts {
    text: String,
    /// Where each cell's text ends in `text`.
    ends: Vec<usize>,
}

impl Texts {
    /// Adds a cell per value, `show`ing the known ones ("" for unknown).
    fn extend<'v, T>(&mut self, values: Vec<Option<T>>, show: impl Fn(T) -> Cow<'v, str>) {
        self.ends.reserve(values.len());
        for value in values {
            if let Some(value) = value {
                self.text.push_str(&show(value));
            }
            self.ends.push(self.text.len());
        }
    }

    /// Cell `r`'s text.
    pub fn get(&self, r: usize) -> &str {
        let start = match r {
            0 => 0,
            _ => self.ends.get(r - 1).copied().unwrap_or(0),
        };
        let end = self.ends.get(r).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or("")
    }
}

/// The organizations the pages are for (those of `entitlements`: every one not
/// deleted at the as-of date), by name, each with its metrics' limits and
/// projected exhaustion.
pub struct Org {
    pub id: i64,
    pub name: String,
}

pub fn organizations(entitlements: &DataFrame) -> Result<Vec<Org>, ReportError> {
    let t = Entitlements::read(entitlements)?;
    let mut seen: HashMap<i64, String> = HashMap::new();
    for (id, name) in t.organization_id.into_iter().zip(t.organization_name) {
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
    Ok(orgs)
}

/// A metric's unit and projected exhaustion day, for its chart and its row.
pub struct MetricFacts {
    pub metric: String,
    pub unit: String,
    pub exhaustion: Option<String>,
}

/// Each organization's metrics, in the order of its `entitlements` rows.
pub fn metric_facts(
    entitlements: &DataFrame,
) -> Result<HashMap<i64, Vec<MetricFacts>>, ReportError> {
    let t = Entitlements::read(entitlements)?;
    let (org, metric, unit) = (&t.organization_id, &t.metric, &t.unit);
    let exhaustion = &t.projected_exhaustion;
    let mut out: HashMap<i64, Vec<MetricFacts>> = HashMap::new();
    for r in 0..t.height() {
        let (Some(o), Some(m)) = (org[r], metric[r]) else {
            continue;
        };
        out.entry(o).or_default().push(MetricFacts {
            metric: m.to_string(),
            unit: unit[r].unwrap_or("").to_string(),
            exhaustion: exhaustion[r].map(str::to_string),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testkit::all_frames;
    use crate::report::{entitlements, project_compute, trials};

    #[test]
    fn cells_read_back_as_written_unknown_ones_empty() {
        let mut cells = Texts::default();
        cells.extend(
            vec![Some("alpha"), None, Some(""), Some("déjà vu")],
            Cow::from,
        );
        cells.extend(vec![Some(12.345), None], |p| format!("{p:.1} %").into());
        let read: Vec<&str> = (0..6).map(|r| cells.get(r)).collect();
        assert_eq!(read, ["alpha", "", "", "déjà vu", "12.3 %", ""]);
        assert_eq!(cells.get(6), "", "past the end is empty, not a panic");
    }

    #[test]
    fn a_range_of_organizations_gets_exactly_their_rows_as_the_whole_table_shows_them() {
        let frames = all_frames();
        let df = frames
            .get(entitlements::NAME.as_str())
            .expect("entitlements");
        let name = entitlements::NAME.as_str();
        let whole = Table::of(name, Some(df), LIMITS, LIMITS_CARRY).expect("table");
        let mut orgs: Vec<i64> = whole.rows.keys().copied().collect();
        orgs.sort_unstable();
        assert_eq!(orgs.len(), 2, "the test world has two organizations");
        let (org, other) = (orgs[1], orgs[0]);
        // The same table kept in memory and on disk, the latter in slices of two
        // rows, so that an organization's rows span slices.
        let mut memory = KeptTable::new(name, usize::MAX);
        let mut disk = KeptTable::on_disk_in_slices(name, 2);
        for kept in [&mut memory, &mut disk] {
            kept.add(df.clone()).expect("kept");
            kept.finish().expect("finished");
        }
        assert!(!memory.on_disk() && disk.on_disk());
        for kept in [&memory, &disk] {
            let by_org = ByOrg::of(Some(kept), LIMITS, LIMITS_CARRY);
            same_rows(&by_org, &whole, org, other);
        }
    }

    fn same_rows(by_org: &ByOrg<'_>, whole: &Table, org: i64, other: i64) {
        let range = by_org.table(&[org]).expect("one organization's rows");
        assert!(
            range.of_org(other).is_empty(),
            "no row of another organization"
        );
        type Row = (Vec<String>, Option<String>, Option<String>);
        let rows = |t: &Table| -> Vec<Row> {
            t.of_org(org)
                .iter()
                .map(|&r| {
                    let cells = t.cells.iter().map(|c| c.get(r).to_string()).collect();
                    (cells, t.status[r].clone(), t.missing[r].clone())
                })
                .collect()
        };
        assert!(!whole.of_org(org).is_empty());
        assert_eq!(rows(&range), rows(whole));
        let both = by_org.table(&[org, other]).expect("both");
        assert_eq!(rows(&both), rows(whole));
    }

    #[test]
    fn every_column_a_page_table_shows_is_one_its_report_builds() {
        let frames = all_frames();
        for (report, cols, carries) in [
            (entitlements::NAME.as_str(), LIMITS, LIMITS_CARRY),
            (project_compute::NAME.as_str(), PROJECTS, PROJECTS_CARRY),
            (trials::NAME.as_str(), TRIALS, TRIALS_CARRY),
        ] {
            let table = Table::of(report, frames.get(report), cols, carries)
                .unwrap_or_else(|e| panic!("{report}: {e}"));
            assert_eq!(table.cells.len(), cols.len(), "{report}");
        }
        let name = entitlements::NAME.as_str();
        let missing = Table::of(
            name,
            frames.get(name),
            &[Col {
                header: "gone",
                column: "no_such_column",
                show: Show::Text,
            }],
            LIMITS_CARRY,
        );
        assert!(missing.is_err(), "a column the report lacks is an error");
    }
}
