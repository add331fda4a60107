//! The columns a table exports, derived from its spec (`mirror::spec`), and the
//! statement that reads them from the as-of views (`mirror::asof`).

use crate::mirror::spec::{Column, TableSpec, Ty};
use polars::prelude::{DataType, Field, Schema, TimeUnit, TimeZone};

/// Bookkeeping columns of the current state (the as-of view `<table>`).
const CURRENT: &[Column] = &[
    Column {
        name: "valid_from",
        ty: Ty::Time,
    },
    Column {
        name: "run_id",
        ty: Ty::Int,
    },
];

/// Bookkeeping columns of every version (the view `<table>_versions`).
const VERSIONS: &[Column] = &[
    Column {
        name: "valid_from",
        ty: Ty::Time,
    },
    Column {
        name: "valid_to",
        ty: Ty::Time,
    },
    Column {
        name: "removed_at",
        ty: Ty::Time,
    },
];

/// Bookkeeping columns of a change of the incremental history (`--since`), after
/// the version's validity as of the export ([`VERSIONS`]): the sync run of the
/// change, whether the change made the version or removed it, and when.
const CHANGES: &[Column] = &[
    Column {
        name: "run_id",
        ty: Ty::Int,
    },
    Column {
        name: "change",
        ty: Ty::Text,
    },
    Column {
        name: "changed_at",
        ty: Ty::Time,
    },
];

/// The partition key of the incremental history: the UTC day of `changed_at`.
pub const CHANGED_ON: &str = "changed_on";

/// What rows a plan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rows {
    /// The state as of the date (the view `<table>`).
    Current,
    /// Every version (the view `<table>_versions`).
    History,
    /// The versions made and removed by the sync runs observed in `(after, upto]`
    /// (timestamps of `sync_runs.observed_at`), read from `<table>_versions`.
    Changes {
        /// Exclusive lower bound ("" for the beginning).
        after: String,
        /// Inclusive upper bound.
        upto: String,
    },
}

/// Tables written as Hive-style partitions: the table, the text column whose first
/// seven characters (`YYYY-MM`) name the partition, and the partition key.
const PARTITIONED: &[(&str, &str, &str)] = &[("daily_metrics", "day", "month")];

/// How one table is exported.
pub struct TablePlan {
    /// The table's spec.
    pub spec: &'static TableSpec,
    /// Its columns in file order: key, data, then bookkeeping.
    pub columns: Vec<Column>,
    /// Partitioning: (index of the column read, partition key name, characters of
    /// the value that name the partition: 7 for `YYYY-MM`, 10 for `YYYY-MM-DD`).
    pub partition: Option<(usize, &'static str, usize)>,
    /// The rows read.
    pub rows: Rows,
}

impl TablePlan {
    /// The plan of `spec` for the current state or for every version.
    pub fn new(spec: &'static TableSpec, history: bool) -> Self {
        let extra = if history { VERSIONS } else { CURRENT };
        let columns: Vec<Column> = spec.all_columns().chain(extra).copied().collect();
        let partition = PARTITIONED
            .iter()
            .find(|(table, _, _)| *table == spec.name)
            .and_then(|(_, column, key)| {
                columns
                    .iter()
                    .position(|c| c.name == *column)
                    .map(|i| (i, *key, 7))
            });
        TablePlan {
            spec,
            columns,
            partition,
            rows: if history {
                Rows::History
            } else {
                Rows::Current
            },
        }
    }

    /// The plan of the incremental history: the changes of the runs in `rows`
    /// (a [`Rows::Changes`]), partitioned by the day of the change.
    pub fn changes(spec: &'static TableSpec, rows: Rows) -> Self {
        let columns: Vec<Column> = spec
            .all_columns()
            .chain(VERSIONS)
            .chain(CHANGES)
            .copied()
            .collect();
        TablePlan {
            spec,
            partition: Some((columns.len() - 1, CHANGED_ON, 10)),
            columns,
            rows,
        }
    }

    /// The SELECT over the as-of view (installed on the connection).
    pub fn sql(&self) -> String {
        let quoted = |c: &Column| format!("\"{}\"", c.name);
        let name = self.spec.name;
        match &self.rows {
            Rows::Current | Rows::History => {
                let cols: Vec<String> = self.columns.iter().map(quoted).collect();
                let view = if self.rows == Rows::History {
                    "_versions"
                } else {
                    ""
                };
                format!("SELECT {} FROM temp.{name}{view}", cols.join(", "))
            }
            Rows::Changes { after, upto } => {
                let (after, upto) = (literal(after), literal(upto));
                let data: Vec<String> = self.spec.all_columns().map(quoted).collect();
                let data = data.join(", ");
                // Validity as the runs up to `upto` left it: a later (unfinished)
                // run's end of a version is not part of this increment.
                let validity = format!(
                    "valid_from, \
                     CASE WHEN valid_to <= {upto} THEN valid_to END AS valid_to, \
                     CASE WHEN removed_at <= {upto} THEN removed_at END AS removed_at"
                );
                // The views carry no run: every validity timestamp is the
                // `observed_at` of the run that wrote it.
                format!(
                    "SELECT {data}, valid_from, valid_to, removed_at, \
                       (SELECT max(r.id) FROM main.sync_runs r WHERE r.observed_at = c.changed_at) AS run_id, \
                       change, changed_at \
                     FROM ( \
                       SELECT {data}, {validity}, 'version' AS change, valid_from AS changed_at \
                         FROM temp.{name}_versions WHERE valid_from > {after} AND valid_from <= {upto} \
                       UNION ALL \
                       SELECT {data}, {validity}, 'removed' AS change, removed_at AS changed_at \
                         FROM temp.{name}_versions WHERE removed_at > {after} AND removed_at <= {upto} \
                     ) AS c"
                )
            }
        }
    }

    /// The polars schema of the files.
    pub fn schema(&self) -> Schema {
        self.columns
            .iter()
            .map(|c| Field::new(c.name.into(), dtype(c.ty)))
            .collect()
    }
}

/// A SQL text literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The Parquet-side type of a mirror column: integers Int64, booleans Boolean,
/// timestamps UTC instants in milliseconds; JSON stays text. NUMERIC limits
/// (whole or fractional in one column) are Float64: one Parquet type per column,
/// exact up to 2^53; the mirror and the reports keep larger whole limits exact.
pub fn dtype(ty: Ty) -> DataType {
    match ty {
        Ty::Int => DataType::Int64,
        Ty::Real | Ty::Number => DataType::Float64,
        Ty::Bool => DataType::Boolean,
        Ty::Text | Ty::Json => DataType::String,
        Ty::Time => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::{DAILY_METRICS, ORGANIZATIONS};

    #[test]
    fn daily_metrics_are_partitioned_by_the_month_of_their_day() {
        let plan = TablePlan::new(&DAILY_METRICS, false);
        let (index, key, _) = plan.partition.expect("partitioned");
        assert_eq!(plan.columns[index].name, "day");
        assert_eq!(key, "month");
        assert!(TablePlan::new(&ORGANIZATIONS, false).partition.is_none());
    }

    #[test]
    fn history_adds_validity_columns_and_reads_the_versions_view() {
        let plan = TablePlan::new(&ORGANIZATIONS, true);
        let names: Vec<&str> = plan.columns.iter().map(|c| c.name).collect();
        assert_eq!(names[..1], ["id"]);
        assert!(names.ends_with(&["valid_from", "valid_to", "removed_at"]));
        assert!(plan.sql().ends_with("FROM temp.organizations_versions"));
        assert_eq!(plan.schema().len(), ORGANIZATIONS.width() + 3);
    }
}
