//! The statements that write rows (insert, update), driven through SQLite's C API.
//!
//! rusqlite binds every text and blob with `SQLITE_TRANSIENT`: SQLite frees the
//! parameter's previous buffer, allocates a new one and copies the value, for each
//! of the three texts and the digest of each of the million daily-metrics rows of a
//! large sync. Those copies and rusqlite's per-value dispatch are 8 % of a large
//! sync's CPU on loopback (`perf`, docs/performance.md). rusqlite has no binding
//! without the copy (rusqlite/rusqlite#164, open since 2016; a `BorrowingStatement`
//! is proposed in rusqlite/rusqlite#1836): when it has one, this file goes. Here
//! values are bound with `SQLITE_STATIC`, in place: the rows outlive the one execution that
//! reads them, and every binding is cleared before [`RowStatement::run`] returns, so
//! the statement never holds a pointer into a row that is gone.
//!
//! This is the crate's only `unsafe` code.
#![allow(unsafe_code)]

use crate::mirror::table::Row;
use rusqlite::types::Value;
use rusqlite::{Connection, ffi};
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A prepared statement whose parameters are rows (values then digest, row after
/// row) followed by the run's id and time, which stay bound across executions.
pub struct RowStatement<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    /// Parameter number of the run id; the run time follows it.
    stamp_param: c_int,
    run_id: i64,
    observed_at: String,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> RowStatement<'c> {
    /// Prepares `sql` on `conn`; `stamp_param` is where the run id and time go.
    pub fn prepare(
        conn: &'c Connection,
        sql: &str,
        stamp_param: usize,
        run_id: i64,
        observed_at: &str,
    ) -> rusqlite::Result<Self> {
        let too_long = || rusqlite::Error::InvalidParameterCount(stamp_param, c_int::MAX as usize);
        let stamp_param = c_int::try_from(stamp_param).map_err(|_| too_long())?;
        let len = c_int::try_from(sql.len()).map_err(|_| too_long())?;
        // SAFETY: the handle is valid for 'c (the connection is borrowed for 'c), and
        // this thread is the connection's only user while it is borrowed.
        let db = unsafe { conn.handle() };
        let mut raw = std::ptr::null_mut();
        // SAFETY: `sql` is valid for `len` bytes; SQLite copies what it needs.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT,
                &mut raw,
                std::ptr::null_mut(),
            )
        };
        check(db, rc)?;
        let stmt = NonNull::new(raw).ok_or_else(|| {
            rusqlite::Error::SqliteFailure(
                ffi::Error::new(ffi::SQLITE_MISUSE),
                Some("empty statement".into()),
            )
        })?;
        let this = RowStatement {
            stmt,
            db,
            stamp_param,
            run_id,
            observed_at: observed_at.to_owned(),
            _conn: PhantomData,
        };
        this.bind_stamp()?;
        Ok(this)
    }

    /// Binds `rows` in place, executes the statement once, and clears the bindings.
    pub fn run(&mut self, rows: &[Row]) -> rusqlite::Result<()> {
        let outcome = self.bind_rows(rows).and_then(|()| self.step());
        // SAFETY: the statement is valid; reset and clear_bindings take any state.
        // `clear_bindings` drops every pointer into `rows` before they can go away.
        unsafe {
            ffi::sqlite3_reset(self.stmt.as_ptr());
            ffi::sqlite3_clear_bindings(self.stmt.as_ptr());
        }
        self.bind_stamp()?;
        outcome
    }

    fn bind_rows(&self, rows: &[Row]) -> rusqlite::Result<()> {
        let mut param: c_int = 1;
        for row in rows {
            for value in &row.values {
                self.bind(param, value)?;
                param += 1;
            }
            self.bind_blob(param, &row.hash)?;
            param += 1;
        }
        Ok(())
    }

    fn step(&mut self) -> rusqlite::Result<()> {
        // SAFETY: the statement is valid and every parameter it reads is bound to
        // memory that lives until `run` clears the bindings.
        let rc = unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) };
        match rc {
            ffi::SQLITE_DONE => Ok(()),
            // A writing statement returns no rows; anything else is an error (with
            // its extended code: rusqlite turns those on for every connection).
            _ => check(self.db, rc),
        }
    }

    fn bind_stamp(&self) -> rusqlite::Result<()> {
        self.bind(self.stamp_param, &Value::Integer(self.run_id))?;
        // Bound in place too: the text is owned by `self`, never changed, and
        // freed only after `drop` finalized the statement.
        self.bind_text(self.stamp_param + 1, &self.observed_at)
    }

    fn bind(&self, param: c_int, value: &Value) -> rusqlite::Result<()> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: the statement is valid; the scalar binds copy their argument.
        let rc = match value {
            Value::Null => unsafe { ffi::sqlite3_bind_null(stmt, param) },
            Value::Integer(n) => unsafe { ffi::sqlite3_bind_int64(stmt, param, *n) },
            Value::Real(f) => unsafe { ffi::sqlite3_bind_double(stmt, param, *f) },
            Value::Text(s) => return self.bind_text(param, s),
            Value::Blob(b) => return self.bind_blob(param, b),
        };
        check(self.db, rc)
    }

    /// Binds text in place (see the module documentation for how long it stays).
    fn bind_text(&self, param: c_int, text: &str) -> rusqlite::Result<()> {
        // SAFETY: `text` is valid UTF-8 for its length and stays bound only until
        // `run` clears the bindings; the caller's rows outlive that.
        let rc = unsafe {
            ffi::sqlite3_bind_text64(
                self.stmt.as_ptr(),
                param,
                text.as_ptr().cast(),
                text.len() as u64,
                ffi::SQLITE_STATIC(),
                ffi::SQLITE_UTF8 as u8,
            )
        };
        check(self.db, rc)
    }

    /// Binds a blob in place, like [`Self::bind_text`].
    fn bind_blob(&self, param: c_int, bytes: &[u8]) -> rusqlite::Result<()> {
        // SAFETY: as for `bind_text`.
        let rc = unsafe {
            ffi::sqlite3_bind_blob64(
                self.stmt.as_ptr(),
                param,
                bytes.as_ptr().cast(),
                bytes.len() as u64,
                ffi::SQLITE_STATIC(),
            )
        };
        check(self.db, rc)
    }
}

impl Drop for RowStatement<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared on a connection that outlives it ('c).
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

/// `rc` as a rusqlite error with SQLite's message, like rusqlite's own calls give.
fn check(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Result<()> {
    if rc == ffi::SQLITE_OK {
        return Ok(());
    }
    // SAFETY: `db` is a valid connection handle; the message is a NUL-terminated
    // string owned by SQLite, copied before the next call on the connection.
    let message = unsafe {
        let text = ffi::sqlite3_errmsg(db);
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    };
    Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().expect("in-memory db");
        conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT, f REAL, n, h BLOB, run INTEGER, at TEXT)")
            .expect("table");
        conn
    }

    fn row(k: i64, s: &str) -> Row {
        Row::new(vec![
            Value::Integer(k),
            Value::Text(s.into()),
            Value::Real(0.5),
            Value::Null,
        ])
    }

    #[test]
    fn rows_are_stored_with_their_types_and_the_stamp() {
        let conn = table();
        let sql =
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?11, ?12), (?6, ?7, ?8, ?9, ?10, ?11, ?12)";
        let mut stmt =
            RowStatement::prepare(&conn, sql, 11, 7, "2026-01-01T00:00:00.000Z").expect("prepare");
        stmt.run(&[row(1, "Zoë"), row(2, "")]).expect("first run");
        // The stamp stays bound after the row bindings are cleared.
        stmt.run(&[row(3, "c"), row(4, "d")]).expect("second run");
        let stored: Vec<(String, String, String, String, String, i64, String)> = conn
            .prepare(
                "SELECT s, typeof(s), typeof(f), typeof(n), typeof(h), run, at FROM t ORDER BY k",
            )
            .expect("select")
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(stored.len(), 4);
        assert_eq!(stored[0].0, "Zoë");
        assert_eq!(stored[1].0, "");
        for r in &stored {
            assert_eq!(
                (r.1.as_str(), r.2.as_str(), r.3.as_str(), r.4.as_str()),
                ("text", "real", "null", "blob")
            );
            assert_eq!((r.5, r.6.as_str()), (7, "2026-01-01T00:00:00.000Z"));
        }
        let hash: Vec<u8> = conn
            .query_row("SELECT h FROM t WHERE k = 1", [], |r| r.get(0))
            .expect("hash");
        assert_eq!(hash, row(1, "Zoë").hash);
    }

    #[test]
    fn a_failing_run_reports_sqlites_error_and_the_statement_still_works() {
        let conn = table();
        let sql = "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
        let mut stmt = RowStatement::prepare(&conn, sql, 6, 1, "now").expect("prepare");
        stmt.run(&[row(1, "a")]).expect("insert");
        let error = stmt.run(&[row(1, "again")]).expect_err("duplicate key");
        assert_eq!(
            error.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation)
        );
        assert!(
            error.to_string().contains("UNIQUE constraint failed: t.k"),
            "{error}"
        );
        stmt.run(&[row(2, "b")]).expect("works after an error");
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 2);
        let bad = RowStatement::prepare(&conn, "INSERT INTO nowhere VALUES (?1)", 2, 1, "now");
        assert!(
            bad.err()
                .is_some_and(|e| e.to_string().contains("no such table: nowhere"))
        );
    }
}
