//! Test mirrors: real SQLite files in a temporary folder, written through the
//! mirror's own versioned upsert (`TableSql`), with hand-chosen values.

use crate::mirror::runs::{self, RunStatus, RunTotals};
use crate::mirror::spec::TableSpec;
use crate::mirror::table::{Row, RunStamp, TableSql};
use rusqlite::Connection;
use rusqlite::types::Value;
use std::path::PathBuf;

pub fn i(n: i64) -> Value {
    Value::Integer(n)
}

pub fn r(f: f64) -> Value {
    Value::Real(f)
}

pub fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// A full row of `spec` from `(column, value)` pairs; other columns are NULL.
pub fn row(spec: &TableSpec, values: &[(&str, Value)]) -> Vec<Value> {
    let mut out = vec![Value::Null; spec.width()];
    for (name, value) in values {
        let idx = spec
            .index_of(name)
            .unwrap_or_else(|| panic!("{}.{name} is not a column", spec.name));
        out[idx] = value.clone();
    }
    out
}

pub struct TestMirror {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    conn: Option<Connection>,
}

/// The writes of one sync run.
pub struct Run<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    stamp: RunStamp,
}

impl Run<'_> {
    /// Upserts one row of a root table.
    pub fn put(&self, spec: &'static TableSpec, values: &[(&str, Value)]) {
        TableSql::new(spec)
            .upsert(self.tx, &self.stamp, Row::new(row(spec, values)))
            .expect("upsert");
    }

    /// Replaces the rows of one scope (the children of one parent document).
    pub fn scope(&self, spec: &'static TableSpec, scope: &[Value], rows: &[&[(&str, Value)]]) {
        let rows = rows.iter().map(|v| Row::new(row(spec, v))).collect();
        TableSql::new(spec)
            .replace_scope(self.tx, &self.stamp, scope, rows)
            .expect("replace_scope");
    }

    /// [`Run::scope`] for rows built as vectors.
    pub fn scope_rows(
        &self,
        spec: &'static TableSpec,
        scope: &[Value],
        rows: &[Vec<(&str, Value)>],
    ) {
        let rows: Vec<&[(&str, Value)]> = rows.iter().map(Vec::as_slice).collect();
        self.scope(spec, scope, &rows);
    }

    /// Marks every live row of a root table not in `keep` removed.
    pub fn remove_unseen(&self, spec: &'static TableSpec, keep: &[&[Value]]) {
        let seen = keep
            .iter()
            .map(|k| crate::mirror::table::key_text(k))
            .collect();
        TableSql::new(spec)
            .remove_unseen(self.tx, &self.stamp, &seen)
            .expect("remove_unseen");
    }
}

impl TestMirror {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mirror.db");
        let conn = crate::mirror::open_rw(&path).expect("open_rw");
        TestMirror {
            dir,
            path,
            conn: Some(conn),
        }
    }

    /// The writing connection, reopened when a report closed it (a later sync run).
    fn conn(&mut self) -> &mut Connection {
        let path = &self.path;
        self.conn
            .get_or_insert_with(|| crate::mirror::open_rw(path).expect("reopen the mirror"))
    }

    /// Closes the writing connection (as a finished sync does) before reports read.
    pub fn close(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.close().expect("close");
        }
    }

    /// Builds reports as of `as_of` (closing the writer first).
    pub fn report(&mut self, as_of: &str, names: &[&str]) -> crate::report::ReportOutcome {
        self.close();
        crate::report::run(&self.options(as_of, names)).expect("report run")
    }

    /// One succeeded sync run observed at `observed_at`; `f` writes its rows.
    pub fn run(&mut self, observed_at: &str, f: impl FnOnce(&Run<'_>)) -> i64 {
        let conn = self.conn();
        let run_id = runs::begin(conn, "test").expect("begin");
        runs::set_observed(conn, run_id, observed_at).expect("observed");
        {
            let tx = conn.transaction().expect("tx");
            let run = Run {
                tx: &tx,
                stamp: RunStamp {
                    run_id,
                    observed_at: observed_at.to_string(),
                },
            };
            f(&run);
            tx.commit().expect("commit");
        }
        runs::finish(
            conn,
            run_id,
            RunStatus::Succeeded,
            &RunTotals::default(),
            None,
        )
        .expect("finish");
        run_id
    }

    /// Report options writing into this mirror's folder.
    pub fn options(&self, as_of: &str, names: &[&str]) -> crate::report::ReportOptions {
        let date = chrono::NaiveDate::parse_from_str(as_of, "%Y-%m-%d").expect("date");
        let mut opts = crate::report::ReportOptions::new(&self.path, date);
        opts.names = names.iter().map(|s| s.to_string()).collect();
        opts.out_root = self.dir.path().join("out");
        opts.queries_dir = Some(self.dir.path().join("queries"));
        opts
    }
}

use polars::prelude::{AnyValue, DataFrame};

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
