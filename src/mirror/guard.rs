//! A read-only guard for connections that run a user's SQL (`query`).
//!
//! Opening the file read-only is not enough: `VACUUM INTO` writes a copy anywhere,
//! `ATTACH` creates files, and a PRAGMA can change the journal mode. SQLite itself
//! enforces the guard, not a keyword filter: an authorizer refuses every action but
//! reading while the statement is prepared, and a prepared statement that would
//! still change a database file (`VACUUM`, which has no authorizer action) is
//! refused by [`rusqlite::Statement::readonly`] before it runs.

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, Statement};
use std::sync::{Arc, Mutex, PoisonError};

/// PRAGMAs that only report: their argument, when there is one, names what to
/// report on (a table, an index, a row limit).
const REPORTING_PRAGMAS: &[&str] = &[
    "collation_list",
    "compile_options",
    "database_list",
    "foreign_key_check",
    "foreign_key_list",
    "function_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "module_list",
    "pragma_list",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// PRAGMAs that read a setting without a value and change it with one: allowed
/// only without a value.
const SETTING_PRAGMAS: &[&str] = &[
    "application_id",
    "auto_vacuum",
    "cache_size",
    "data_version",
    "encoding",
    "foreign_keys",
    "freelist_count",
    "journal_mode",
    "page_count",
    "page_size",
    "schema_version",
    "synchronous",
    "user_version",
];

/// The names of SQLite's schema table.
const SCHEMA_TABLES: &[&str] = &[
    "sqlite_master",
    "sqlite_schema",
    "sqlite_temp_master",
    "sqlite_temp_schema",
];

/// What the guard refused.
#[derive(Debug, thiserror::Error)]
#[error("`query` is read-only: {0} refused")]
pub struct Refused(pub String);

/// The guard on one connection; remembers what the authorizer last refused so the
/// error can say it (SQLite's own text is a bare "not authorized").
#[derive(Debug, Clone)]
pub struct ReadOnlyGuard {
    refused: Arc<Mutex<Option<String>>>,
}

impl ReadOnlyGuard {
    /// Installs the authorizer on `conn`. Set up temp views and functions first:
    /// creating them is refused from now on.
    pub fn install(conn: &mut Connection) -> rusqlite::Result<ReadOnlyGuard> {
        let guard = ReadOnlyGuard {
            refused: Arc::new(Mutex::new(None)),
        };
        let refused = guard.refused.clone();
        conn.authorizer(Some(move |ctx: AuthContext<'_>| match refusal(&ctx) {
            None => Authorization::Allow,
            Some(what) => {
                let mut last = refused.lock().unwrap_or_else(PoisonError::into_inner);
                last.get_or_insert(what);
                Authorization::Deny
            }
        }))?;
        Ok(guard)
    }

    /// Prepares `sql`, refusing it (with what was refused) if it would write or
    /// reach outside the mirror.
    pub fn prepare<'c>(
        &self,
        conn: &'c Connection,
        sql: &str,
    ) -> Result<Statement<'c>, GuardError> {
        self.take();
        let stmt = match conn.prepare(sql) {
            Ok(stmt) => stmt,
            Err(e) => {
                return Err(match self.take() {
                    Some(what) => GuardError::Refused(Refused(what)),
                    None => GuardError::Sql(e),
                });
            }
        };
        if !stmt.readonly() {
            return Err(GuardError::Refused(Refused(format!(
                "a statement that changes the database file ({})",
                excerpt(sql)
            ))));
        }
        Ok(stmt)
    }

    fn take(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Why a statement did not run.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The guard refused it.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// SQLite could not prepare it (a syntax error, an unknown table).
    #[error("{0}")]
    Sql(rusqlite::Error),
}

/// The action in words when it is not a plain read, None when it is allowed.
fn refusal(ctx: &AuthContext<'_>) -> Option<String> {
    match ctx.action {
        AuthAction::Read { table_name, .. }
            if crate::mirror::privacy::UNREADABLE.contains(&table_name) =>
        {
            Some(format!(
                "reading {table_name} (the key of the reports' pseudonyms, which would undo them)"
            ))
        }
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => None,
        AuthAction::Function { function_name }
            if function_name.eq_ignore_ascii_case("load_extension") =>
        {
            Some("load_extension()".into())
        }
        AuthAction::Function { .. } => None,
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let reports = REPORTING_PRAGMAS.contains(&name.as_str());
            let reads = SETTING_PRAGMAS.contains(&name.as_str()) && pragma_value.is_none();
            if reports || reads {
                None
            } else {
                Some(match pragma_value {
                    Some(value) => format!("PRAGMA {pragma_name} = {value}"),
                    None => format!("PRAGMA {pragma_name}"),
                })
            }
        }
        // CREATE, DROP and ALTER first ask to write the schema table.
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
            if SCHEMA_TABLES.contains(&table_name) =>
        {
            Some("a change to the schema".into())
        }
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Some("transaction control (each query runs on its own)".into())
        }
        AuthAction::Attach { filename } => Some(format!("ATTACH of {filename:?}")),
        AuthAction::Detach { database_name } => Some(format!("DETACH of {database_name}")),
        AuthAction::Insert { table_name } => Some(format!("INSERT into {table_name}")),
        AuthAction::Update { table_name, .. } => Some(format!("UPDATE of {table_name}")),
        AuthAction::Delete { table_name } => Some(format!("DELETE from {table_name}")),
        other => Some(describe(&other)),
    }
}

/// Other actions (creating, dropping, transactions...) named by their kind.
fn describe(action: &AuthAction<'_>) -> String {
    let debug = format!("{action:?}");
    let kind = debug.split([' ', '{', '(']).next().unwrap_or("a change");
    format!("{kind} (a change to the database)")
}

fn excerpt(sql: &str) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_and_everything_else_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.db");
        let mut conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1); CREATE TABLE privacy_key (key BLOB)",
        )
            .expect("setup");
        let guard = ReadOnlyGuard::install(&mut conn).expect("guard");
        assert!(guard.prepare(&conn, "SELECT a FROM t").is_ok());
        assert!(guard.prepare(&conn, "PRAGMA table_info(t)").is_ok());
        assert!(guard.prepare(&conn, "PRAGMA user_version").is_ok());
        for (sql, named) in [
            ("DELETE FROM t", "DELETE from t"),
            ("PRAGMA user_version = 3", "PRAGMA user_version = 3"),
            ("ATTACH 'x.db' AS x", "ATTACH"),
            ("VACUUM", "changes the database file"),
            ("CREATE TABLE u (b)", "a change to the schema"),
            ("BEGIN", "transaction control"),
            ("SELECT load_extension('x')", "load_extension()"),
        ] {
            let err = guard.prepare(&conn, sql).err().map(|e| e.to_string());
            let err = err.unwrap_or_else(|| panic!("{sql} was allowed"));
            assert!(err.starts_with("`query` is read-only: "), "{sql}: {err}");
            assert!(err.contains(named), "{sql}: {err}");
        }
        let err = guard.prepare(&conn, "SELECT hex(key) FROM privacy_key");
        let err = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("reading privacy_key"), "{err}");
        let syntax = guard.prepare(&conn, "SELEC 1").err().map(|e| e.to_string());
        assert!(!syntax.unwrap_or_default().contains("read-only"));
    }
}
