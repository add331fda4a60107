//! Report tables `index.html` shows as they are, besides its own sections: the
//! first rows of every custom report, and of the built-in reports listed in
//! [`LISTED`] (the rows a person looks at first), each with how many rows it has
//! and a link to its CSV. A built-in report reaches the page by a line in
//! [`LISTED`].

use crate::report::frame::fmt_f64;
use crate::report::{KeptTable, KeptTables, ReportError, ReportName, registry};
use polars::prelude::{AnyValue, DataFrame};

/// A built-in report the page shows as a table.
pub struct Listed {
    /// The report.
    pub report: ReportName,
    /// The table's heading and the sentence under it.
    pub title: &'static str,
    pub about: &'static str,
    /// The rows shown: those whose columns hold these values.
    pub rows_where: &'static [(&'static str, &'static str)],
    /// The columns shown, in order.
    pub columns: &'static [&'static str],
}

/// The built-in reports the page shows as tables, in the order shown.
pub const LISTED: &[Listed] = &[Listed {
    report: crate::report::storage_trends::NAME,
    title: "Storage per white label, by month",
    about: "Each white label's storage at the end of each of the last 12 months, its \
            growth in the month and the change against the month's start.",
    rows_where: &[("entity_type", "whitelabel"), ("period", "month")],
    columns: &[
        "entity_name",
        "period_start",
        "storage_bytes",
        "growth_bytes",
        "change_pct",
    ],
}];

/// Rows a table shows (its CSV has them all).
pub const MAX_ROWS: usize = 20;

/// One table as the page shows it.
pub struct Shown {
    pub report: String,
    pub title: String,
    pub about: String,
    pub headers: Vec<String>,
    /// The first [`MAX_ROWS`] rows, cells as text ("" for unknown).
    pub rows: Vec<Vec<String>>,
    /// Every row the table's rows (the listed ones: its matching rows) number.
    pub total: usize,
}

/// The tables the page shows of the run's `tables`: the listed built-in ones the
/// run kept, then every custom report, by name.
pub fn shown(tables: &KeptTables) -> Result<Vec<Shown>, ReportError> {
    let mut out = Vec::new();
    for listed in LISTED {
        if let Some(table) = tables.get(listed.report) {
            let (title, about) = (listed.title.to_string(), listed.about.to_string());
            out.push(first_rows(
                table,
                title,
                about,
                listed.rows_where,
                listed.columns,
            )?);
        }
    }
    for name in tables.names().filter(|n| registry::find(n).is_none()) {
        if let Some(table) = tables.get(name) {
            let about = format!("The custom report {name}: its query's rows, as it returns them.");
            out.push(first_rows(table, name.to_string(), about, &[], &[])?);
        }
    }
    Ok(out)
}

/// The first rows of `table` that match `rows_where`, their `columns` (every one
/// when none is named), and how many match.
fn first_rows(
    table: &KeptTable,
    title: String,
    about: String,
    rows_where: &[(&str, &str)],
    columns: &[&str],
) -> Result<Shown, ReportError> {
    let mut shown = Shown {
        report: table.report().to_string(),
        title,
        about,
        headers: columns.iter().map(|c| c.to_string()).collect(),
        rows: Vec::new(),
        total: 0,
    };
    table.for_each_batch(|df| {
        if shown.headers.is_empty() {
            shown.headers = df
                .get_column_names()
                .iter()
                .map(|c| c.to_string())
                .collect();
        }
        for r in 0..df.height() {
            if !matches(df, r, rows_where) {
                continue;
            }
            shown.total += 1;
            if shown.rows.len() < MAX_ROWS {
                let cells = shown.headers.iter().map(|c| cell(df, r, c)).collect();
                shown.rows.push(cells);
            }
        }
        Ok(())
    })?;
    Ok(shown)
}

fn matches(df: &DataFrame, r: usize, rows_where: &[(&str, &str)]) -> bool {
    rows_where
        .iter()
        .all(|(column, value)| cell(df, r, column) == *value)
}

/// A cell as the page writes it: numbers as the CSV writes them, "" for unknown.
fn cell(df: &DataFrame, r: usize, column: &str) -> String {
    let Ok(value) = df.column(column).and_then(|c| c.get(r)) else {
        return String::new();
    };
    match value {
        AnyValue::Null => String::new(),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Boolean(b) => b.to_string(),
        AnyValue::Float64(f) => fmt_f64(f),
        AnyValue::Float32(f) => fmt_f64(f.into()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::Column;

    fn kept(name: &str, df: DataFrame) -> KeptTables {
        let mut table = KeptTable::new(name, usize::MAX);
        table.add(df).expect("kept");
        let mut tables = KeptTables::default();
        tables.extend([table]);
        tables
    }

    #[test]
    fn a_custom_report_shows_its_first_rows_every_column_and_its_count() {
        let n = MAX_ROWS + 5;
        let df = DataFrame::new_infer_height(vec![
            Column::new("id".into(), (0..n as i64).collect::<Vec<_>>()),
            Column::new("share".into(), vec![Some(0.5); n]),
            Column::new("note".into(), vec![None::<&str>; n]),
        ])
        .expect("a table");
        let shown = shown(&kept("my_query", df)).expect("shown");
        assert_eq!(shown.len(), 1);
        let t = &shown[0];
        assert_eq!((t.title.as_str(), t.total), ("my_query", n));
        assert_eq!(t.headers, ["id", "share", "note"]);
        assert_eq!(t.rows.len(), MAX_ROWS, "the first rows only");
        assert_eq!(t.rows[3], ["3", "0.5", ""]);
    }

    #[test]
    fn a_listed_report_shows_its_matching_rows_and_columns_only() {
        let df = DataFrame::new_infer_height(vec![
            Column::new("kind".into(), ["a", "b", "a"]),
            Column::new("value".into(), [1i64, 2, 3]),
        ])
        .expect("a table");
        let table = kept("entitlements", df);
        let shown = first_rows(
            table.get("entitlements").expect("kept"),
            "t".into(),
            "about".into(),
            &[("kind", "a")],
            &["value"],
        )
        .expect("shown");
        assert_eq!(shown.total, 2);
        assert_eq!(shown.rows, [["1"], ["3"]]);
    }
}
