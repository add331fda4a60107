//! Test mirrors (tests only): real SQLite files in a temporary folder, written through the
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
}

/// The mirror's tables with one personal column more, `users.phone` (text; the
/// user object's `phone` in the service's JSON), declared like any other: with
/// [`crate::mirror::spec::with_tables`], a test sees a new declaration erased and
/// redacted with no other change. The mirror itself gets the column from the test
/// (`ALTER TABLE`), as a migration would add it.
pub fn tables_with_a_phone() -> &'static [&'static TableSpec] {
    use crate::mirror::spec::{Column, Identifies, Person, PersonalField, TABLES, Ty, USERS};
    static TABLES_WITH_A_PHONE: std::sync::OnceLock<Vec<&'static TableSpec>> =
        std::sync::OnceLock::new();
    TABLES_WITH_A_PHONE.get_or_init(|| {
        let phone = PersonalField {
            column: "phone",
            json: &["phone"],
            identifies: Identifies::Other,
        };
        let persons: Vec<Person> = USERS
            .personal
            .iter()
            .map(|person| Person {
                fields: Vec::leak(person.fields.iter().copied().chain([phone]).collect()),
                ..*person
            })
            .collect();
        let columns = USERS.columns.iter().copied().chain([Column {
            name: "phone",
            ty: Ty::Text,
        }]);
        let users: &'static TableSpec = Box::leak(Box::new(TableSpec {
            columns: Vec::leak(columns.collect()),
            personal: Vec::leak(persons),
            ..USERS
        }));
        TABLES
            .iter()
            .map(|t| if t.name == USERS.name { users } else { *t })
            .collect()
    })
}
