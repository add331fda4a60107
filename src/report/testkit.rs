//! Reports over test mirrors ([`crate::mirror::testkit`]), and reading their frames'
//! cells.

use crate::mirror::spec::*;
pub use crate::mirror::testkit::*;
use polars::prelude::{AnyValue, DataFrame};
use std::collections::BTreeMap;

/// Report tables built over a [`TestMirror`], by report name.
pub struct Tables {
    pub frames: BTreeMap<String, DataFrame>,
}

/// Reports built over a [`TestMirror`].
pub trait Reports {
    /// Builds report tables as of `as_of` (closing the writer first).
    fn report(&mut self, as_of: &str, names: &[&str]) -> Tables;
    /// Report options writing into this mirror's folder.
    fn options(&self, as_of: &str, names: &[&str]) -> crate::report::ReportOptions;
}

impl Reports for TestMirror {
    /// Builds report tables as of `as_of` (closing the writer first).
    fn report(&mut self, as_of: &str, names: &[&str]) -> Tables {
        self.close();
        Tables {
            frames: whole_tables(&self.options(as_of, names)),
        }
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

/// A small world touching every report: two organizations, users with e-mails and
/// names (also inside free text), a trial, daily metrics, projects with budgets.
pub fn small_world(m: &mut TestMirror) -> i64 {
    m.run("2025-03-31T06:00:00.000Z", |w| {
        w.put(
            &ORGANIZATIONS,
            &[
                ("id", i(1)),
                ("name", t("Org Ten")),
                ("whitelabel_id", i(9)),
                ("whitelabel_name", t("Nine")),
                ("limit_number_of_users", r(1.0)),
            ],
        );
        w.put(&ORGANIZATIONS, &[("id", i(2)), ("name", t("Org Two"))]);
        for (id, name, email) in [
            (1, "Ada Lovelace", "ada@example.com"),
            (2, "Björk Guðmundsdóttir", "bjork@example.is"),
        ] {
            w.put(
                &USERS,
                &[
                    ("id", i(id)),
                    ("name", t(name)),
                    ("email", t(email)),
                    ("username", t(email)),
                    ("whitelabel_organization_id", i(1)),
                ],
            );
            w.scope(
                &DAILY_METRICS,
                &[i(id)],
                &[&[
                    ("user_id", i(id)),
                    ("day", t("2025-03-30")),
                    ("cpu_compute_time_seconds", i(100 * id)),
                    ("gpu_compute_time_seconds", i(0)),
                    ("compute_time_seconds", i(100 * id)),
                ]],
            );
        }
        w.scope(
            &ORGANIZATION_MEMBERS,
            &[i(1)],
            &[
                &[
                    ("organization_id", i(1)),
                    ("user_id", i(1)),
                    ("name", t("Ada Lovelace")),
                    ("email", t("ada@example.com")),
                ],
                &[
                    ("organization_id", i(1)),
                    ("user_id", i(2)),
                    ("name", t("Björk Guðmundsdóttir")),
                    ("email", t("bjork@example.is")),
                ],
            ],
        );
        w.scope(
            &TRIALS,
            &[i(1)],
            &[&[
                ("id", i(5)),
                ("user_id", i(1)),
                ("organization_id", i(1)),
                ("expiration_date", t("2025-04-05T00:00:00.000Z")),
                ("notes", t("call ada@example.com before it ends")),
            ]],
        );
        w.put(
            &PROJECTS,
            &[
                ("id", i(3)),
                ("name", t("Sensor fusion")),
                ("owner_organization_id", i(1)),
                ("owner", t("Ada Lovelace")),
            ],
        );
        w.put(
            &PROJECT_INFO,
            &[
                ("project_id", i(3)),
                ("compute_time_used_ms", i(9_000)),
                ("compute_time_left_ms", i(1_000)),
            ],
        );
    })
}

/// Every built-in report's table over [`small_world`] as of 2025-03-31, built as a
/// run builds them (completeness columns included), without files.
pub fn all_frames() -> BTreeMap<String, DataFrame> {
    let mut m = TestMirror::new();
    small_world(&mut m);
    m.close();
    whole_tables(&m.options("2025-03-31", &[]))
}

/// Every table of the run `opts` asks for, whole, by report name.
fn whole_tables(opts: &crate::report::ReportOptions) -> BTreeMap<String, DataFrame> {
    let tables = crate::report::tables(opts).expect("report tables");
    tables
        .names()
        .map(|name| {
            let table = tables.get(name).expect("kept").whole();
            (name.to_string(), table.expect("read back"))
        })
        .collect()
}
