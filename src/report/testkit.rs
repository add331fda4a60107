//! Reports over test mirrors ([`crate::mirror::testkit`]), and reading their frames'
//! cells.

pub use crate::mirror::testkit::*;
use polars::prelude::{AnyValue, DataFrame};

/// Reports built over a [`TestMirror`].
pub trait Reports {
    /// Builds reports as of `as_of` (closing the writer first).
    fn report(&mut self, as_of: &str, names: &[&str]) -> crate::report::ReportOutcome;
    /// Report options writing into this mirror's folder.
    fn options(&self, as_of: &str, names: &[&str]) -> crate::report::ReportOptions;
}

impl Reports for TestMirror {
    /// Builds reports as of `as_of` (closing the writer first).
    fn report(&mut self, as_of: &str, names: &[&str]) -> crate::report::ReportOutcome {
        self.close();
        crate::report::run(&self.options(as_of, names)).expect("report run")
    }

    /// Report options writing into this mirror's folder.
    fn options(&self, as_of: &str, names: &[&str]) -> crate::report::ReportOptions {
        let date = chrono::NaiveDate::parse_from_str(as_of, "%Y-%m-%d").expect("date");
        let mut opts = crate::report::ReportOptions::new(&self.path, date);
        opts.names = names.iter().map(|s| s.to_string()).collect();
        opts.out_root = self.dir.path().join("out");
        opts.queries_dir = Some(self.dir.path().join("queries"));
        opts
    }
}

/// A cell as text ("" for null), for matching rows.
pub fn text_of(df: &DataFrame, row: usize, column: &str) -> String {
    match df
        .column(column)
        .unwrap_or_else(|_| panic!("no column {column}"))
        .get(row)
        .expect("row")
    {
        AnyValue::Null => String::new(),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Int64(n) => n.to_string(),
        AnyValue::Int32(n) => n.to_string(),
        AnyValue::UInt32(n) => n.to_string(),
        AnyValue::Float64(f) => f.to_string(),
        AnyValue::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// The index of the only row whose cells (as text) equal the given values.
pub fn find(df: &DataFrame, conds: &[(&str, &str)]) -> usize {
    let hits: Vec<usize> = (0..df.height())
        .filter(|&r| conds.iter().all(|(c, v)| text_of(df, r, c) == *v))
        .collect();
    assert_eq!(hits.len(), 1, "rows matching {conds:?}: {hits:?}");
    hits[0]
}

/// A numeric cell.
pub fn num(df: &DataFrame, row: usize, column: &str) -> Option<f64> {
    match df
        .column(column)
        .unwrap_or_else(|_| panic!("no column {column}"))
        .get(row)
        .expect("row")
    {
        AnyValue::Null => None,
        AnyValue::Int64(n) => Some(n as f64),
        AnyValue::Int32(n) => Some(f64::from(n)),
        AnyValue::UInt32(n) => Some(f64::from(n)),
        AnyValue::Float64(f) => Some(f),
        other => panic!("{column} is not numeric: {other:?}"),
    }
}

/// A text cell.
pub fn txt(df: &DataFrame, row: usize, column: &str) -> Option<String> {
    let t = text_of(df, row, column);
    (!t.is_empty()).then_some(t)
}

/// Asserts a numeric cell equals `want` (None = empty) within 1e-9.
#[track_caller]
pub fn assert_num(df: &DataFrame, row: usize, column: &str, want: Option<f64>) {
    let got = num(df, row, column);
    match (got, want) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{column}: got {g}, want {w}"),
        (g, w) => assert_eq!(g, w, "{column}"),
    }
}
