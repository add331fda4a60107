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

/// Tables written as Hive-style partitions: the table, the text column whose first
/// seven characters (`YYYY-MM`) name the partition, and the partition key.
const PARTITIONED: &[(&str, &str, &str)] = &[("daily_metrics", "day", "month")];

/// How one table is exported.
pub struct TablePlan {
    /// The table's spec.
    pub spec: &'static TableSpec,
    /// Its columns in file order: key, data, then bookkeeping.
    pub columns: Vec<Column>,
    /// Partitioning: (index of the column read, partition key name).
    pub partition: Option<(usize, &'static str)>,
    /// Every version (`--history`) rather than the state as of the date.
    pub history: bool,
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
                    .map(|i| (i, *key))
            });
        TablePlan {
            spec,
            columns,
            partition,
            history,
        }
    }

    /// The SELECT over the as-of view (installed on the connection).
    pub fn sql(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let view = if self.history { "_versions" } else { "" };
        format!(
            "SELECT {} FROM temp.{}{view}",
            cols.join(", "),
            self.spec.name
        )
    }

    /// The polars schema of the files.
    pub fn schema(&self) -> Schema {
        self.columns
            .iter()
            .map(|c| Field::new(c.name.into(), dtype(c.ty)))
            .collect()
    }
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
        let (index, key) = plan.partition.expect("partitioned");
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
