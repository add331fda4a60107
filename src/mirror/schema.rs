//! Versioned migrations. The DDL of the mirrored tables is generated from
//! [`crate::mirror::spec`]; every table gets a `_history` twin with the same columns
//! plus `valid_to`. A mirror created by an older version is upgraded in place, in one
//! transaction per migration, when it is opened.

use crate::mirror::spec::{TABLES, TableSpec};
use rusqlite::Connection;

/// Columns every versioned table carries besides its own.
///
/// `content_hash` lets a sync skip unchanged rows; `valid_from` is the server time of
/// the run that wrote this version; `removed_at`/`removed_run` mark an entity that a
/// complete sync no longer saw (rows are never deleted).
pub const BOOKKEEPING: &str = "content_hash BLOB NOT NULL, valid_from TEXT NOT NULL, \
     run_id INTEGER NOT NULL, removed_at TEXT, removed_run INTEGER";

/// The schema version this build writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// One step of the schema's history. Never edit a released step: add a new one.
struct Migration {
    version: i64,
    what: &'static str,
    sql: fn() -> String,
    /// Rows the step derives from what the mirror holds, written after `sql` in the
    /// same transaction.
    fill: Option<fn(&Connection) -> rusqlite::Result<()>>,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "mirrored tables, their history, sync bookkeeping, raw documents",
        sql: v1,
        fill: None,
    },
    Migration {
        version: 2,
        what: "indexes for as-of reads of history; retry count on sync errors",
        sql: v2,
        fill: None,
    },
    Migration {
        version: 3,
        what: "entitlement limits stored without loss (NUMERIC: whole numbers as integers)",
        sql: v3,
        fill: None,
    },
    Migration {
        version: 4,
        what: "alert state, alert runs and the alert outbox",
        sql: v4,
        fill: None,
    },
    Migration {
        version: 5,
        what: "organization_projects: the projects each get-organization answer lists",
        sql: v5,
        fill: None,
    },
    Migration {
        version: 6,
        what: "raw_documents: the body is the last column",
        sql: v6,
        fill: None,
    },
    Migration {
        version: 7,
        what: "daily_series: each user's daily compute and storage figures packed in one row",
        sql: v7,
        fill: Some(crate::mirror::daily_series::fill),
    },
];

/// Tables that a migration after the first one created: version 1 creates every
/// other table of [`TABLES`], as it stood when that step was released.
const ADDED_LATER: &[&str] = &["organization_projects"];

/// The tables version 1 creates (and version 2 indexes).
fn first_tables() -> impl Iterator<Item = &'static &'static TableSpec> {
    TABLES.iter().filter(|t| !ADDED_LATER.contains(&t.name))
}

/// The current table is WITHOUT ROWID: its primary key is the only B-tree, so an
/// insert updates one tree instead of a rowid table plus a key index (the daily
/// metrics alone are hundreds of thousands of rows on a large mirror).
fn table_ddl(spec: &TableSpec) -> String {
    let cols: Vec<String> = spec
        .all_columns()
        .map(|col| format!("\"{}\" {}", col.name, col.ty.sql()))
        .collect();
    let key: Vec<&str> = spec.key.iter().map(|col| col.name).collect();
    let mut ddl = format!(
        "CREATE TABLE {name} ({cols}, {BOOKKEEPING}, PRIMARY KEY ({key})) WITHOUT ROWID;\n\
         CREATE TABLE {name}_history (history_id INTEGER PRIMARY KEY, {cols}, {BOOKKEEPING}, \
         valid_to TEXT NOT NULL);\n",
        name = spec.name,
        cols = cols.join(", "),
        key = key.join(", "),
    );
    let scope_is_key_prefix = spec
        .scope
        .iter()
        .zip(spec.key.iter())
        .all(|(scope, key)| *scope == key.name);
    if !spec.scope.is_empty() && !scope_is_key_prefix {
        ddl.push_str(&format!(
            "CREATE INDEX {name}_scope ON {name} ({scope});\n",
            name = spec.name,
            scope = spec.scope.join(", ")
        ));
    }
    ddl
}

fn v1() -> String {
    let mut sql = String::from(
        "CREATE TABLE sync_runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            observed_at TEXT,
            finished_at TEXT,
            status TEXT NOT NULL CHECK (status IN ('running','succeeded','partial','failed','aborted')),
            base_url TEXT,
            requests INTEGER NOT NULL DEFAULT 0,
            bytes INTEGER NOT NULL DEFAULT 0,
            rows_inserted INTEGER NOT NULL DEFAULT 0,
            rows_updated INTEGER NOT NULL DEFAULT 0,
            rows_unchanged INTEGER NOT NULL DEFAULT 0,
            rows_removed INTEGER NOT NULL DEFAULT 0,
            errors INTEGER NOT NULL DEFAULT 0,
            message TEXT
        );
        CREATE TABLE sync_errors (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES sync_runs(id),
            at TEXT NOT NULL,
            operation TEXT NOT NULL,
            entity TEXT,
            http_status INTEGER,
            message TEXT NOT NULL
        );
        CREATE TABLE raw_documents (
            operation TEXT NOT NULL,
            entity TEXT NOT NULL,
            content_hash BLOB NOT NULL,
            encoding TEXT NOT NULL,
            body BLOB NOT NULL,
            run_id INTEGER NOT NULL,
            fetched_at TEXT NOT NULL,
            PRIMARY KEY (operation, entity)
        );
        ",
    );
    for spec in first_tables() {
        sql.push_str(&table_ddl(spec));
    }
    sql
}

fn v2() -> String {
    let mut sql = String::from(
        "ALTER TABLE sync_errors ADD COLUMN attempts INTEGER;\n\
         CREATE INDEX sync_errors_run ON sync_errors (run_id);\n",
    );
    for spec in first_tables() {
        sql.push_str(&history_key_index(spec));
    }
    sql
}

/// The index as-of reads of a table's history go through.
fn history_key_index(spec: &TableSpec) -> String {
    let key: Vec<&str> = spec.key.iter().map(|col| col.name).collect();
    format!(
        "CREATE INDEX {name}_history_key ON {name}_history ({key}, valid_from);\n",
        name = spec.name,
        key = key.join(", ")
    )
}

/// SQLite cannot change a column's type in place: the tables that hold entitlement
/// limits are rebuilt with NUMERIC limit columns, so whole numbers are stored as
/// integers (REAL rounds anything above 2^53). Copying applies the new affinity:
/// a stored `100.0` becomes the integer 100.
fn v3() -> String {
    use crate::mirror::spec::{ORGANIZATIONS, USER_ORGANIZATIONS};
    let mut sql = String::new();
    for spec in [&ORGANIZATIONS, &USER_ORGANIZATIONS] {
        let name = spec.name;
        sql.push_str(&format!(
            "ALTER TABLE {name} RENAME TO {name}_v2;\n\
             ALTER TABLE {name}_history RENAME TO {name}_history_v2;\n\
             DROP INDEX IF EXISTS {name}_scope;\n\
             DROP INDEX IF EXISTS {name}_history_key;\n"
        ));
        sql.push_str(&table_ddl(spec));
        sql.push_str(&format!(
            "INSERT INTO {name} SELECT * FROM {name}_v2;\n\
             INSERT INTO {name}_history SELECT * FROM {name}_history_v2;\n\
             DROP TABLE {name}_v2;\n\
             DROP TABLE {name}_history_v2;\n"
        ));
        sql.push_str(&history_key_index(spec));
    }
    sql
}

/// A mirror written before this version has no record of which organization listed a
/// project; the next sync fills the table from the get-organization answers it fetches.
fn v5() -> String {
    use crate::mirror::spec::ORGANIZATION_PROJECTS;
    table_ddl(&ORGANIZATION_PROJECTS) + &history_key_index(&ORGANIZATION_PROJECTS)
}

/// A body of tens of megabytes (the organization list of a large white label) is
/// inserted as `zeroblob(n)` and written into its row piece by piece. SQLite keeps a
/// zeroblob unexpanded only when nothing but empty values follows it in the record;
/// with `run_id` and `fetched_at` after it, it built the whole body twice in memory
/// (the expanded zeroblob and the record: 51 MB for a 26 MB body), and the C
/// allocator kept that memory. Copying the table once moves `body` to the end.
fn v6() -> String {
    "CREATE TABLE raw_documents_v6 (
        operation TEXT NOT NULL,
        entity TEXT NOT NULL,
        content_hash BLOB NOT NULL,
        encoding TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        fetched_at TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (operation, entity)
    );
    INSERT INTO raw_documents_v6 (operation, entity, content_hash, encoding, run_id, fetched_at, body)
        SELECT operation, entity, content_hash, encoding, run_id, fetched_at, body FROM raw_documents;
    DROP TABLE raw_documents;
    ALTER TABLE raw_documents_v6 RENAME TO raw_documents;
    "
    .to_string()
}

/// `compute_trends` and `usage_summary` read a user's days from one packed row instead
/// of a row per day (`crate::mirror::daily_series`). A NULL series sends readers to
/// `daily_metrics`. `daily_series_kept` holds the last sync run that kept them.
fn v7() -> String {
    "CREATE TABLE daily_series (user_id INTEGER PRIMARY KEY, series BLOB);
    CREATE TABLE daily_series_kept (run_id INTEGER NOT NULL);
    INSERT INTO daily_series_kept SELECT COALESCE(MAX(id), 0) FROM sync_runs;"
        .to_string()
}

/// The alerts' bookkeeping (`crate::alerts`): one row per condition that has ever
/// held, one per evaluation, and the events waiting for (or done with) delivery.
fn v4() -> String {
    "CREATE TABLE alert_state (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        active INTEGER NOT NULL,
        crossings INTEGER NOT NULL,
        event_id TEXT,
        since TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE alert_runs (
        id INTEGER PRIMARY KEY,
        as_of TEXT NOT NULL,
        at TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('advanced','read_only')),
        events INTEGER NOT NULL
    );
    CREATE TABLE alert_outbox (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt_at TEXT,
        http_status INTEGER,
        error TEXT,
        delivered_at TEXT
    );
    CREATE INDEX alert_outbox_status ON alert_outbox (status, created_at);
    "
    .to_string()
}

/// The schema version recorded in the mirror (0 for a new file), creating the
/// migrations table if needed.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, what TEXT NOT NULL)",
    )?;
    version_ro(conn)
}

/// The schema version recorded in the mirror, without writing anything.
pub fn version_ro(conn: &Connection) -> rusqlite::Result<i64> {
    let has_table: i64 = conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'",
        [],
        |row| row.get(0),
    )?;
    if has_table == 0 {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )
}

/// Applies every migration above the mirror's version, up to `target`
/// (tests pass an older target to build an old mirror). Returns the versions applied.
pub fn migrate_to(conn: &mut Connection, target: i64) -> rusqlite::Result<Vec<i64>> {
    let from = version(conn)?;
    let mut applied = Vec::new();
    for step in MIGRATIONS
        .iter()
        .filter(|m| m.version > from && m.version <= target)
    {
        let tx = conn.transaction()?;
        tx.execute_batch(&(step.sql)())?;
        if let Some(fill) = step.fill {
            fill(&tx)?;
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at, what) VALUES (?1, ?2, ?3)",
            rusqlite::params![step.version, crate::mirror::now_text(), step.what],
        )?;
        tx.commit()?;
        applied.push(step.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_applies_and_is_recorded() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        assert_eq!(migrate_to(&mut conn, 1).expect("v1"), vec![1]);
        assert_eq!(version(&conn).expect("version"), 1);
        assert_eq!(
            migrate_to(&mut conn, CURRENT_VERSION).expect("rest"),
            (2..=CURRENT_VERSION).collect::<Vec<_>>()
        );
        assert!(
            migrate_to(&mut conn, CURRENT_VERSION)
                .expect("again")
                .is_empty()
        );
        for spec in TABLES {
            let count: i64 = conn
                .query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE name IN (?1, ?1 || '_history')",
                    [spec.name],
                    |row| row.get(0),
                )
                .expect("query");
            assert_eq!(count, 2, "{} and its history exist", spec.name);
        }
    }

    #[test]
    fn raw_documents_keep_their_rows_with_the_body_last() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        migrate_to(&mut conn, 5).expect("v5");
        conn.execute(
            "INSERT INTO raw_documents (operation, entity, content_hash, encoding, body, run_id, fetched_at) \
             VALUES ('get-organization', '7', x'01', 'lz4', x'0a0b', 3, 't')",
            [],
        )
        .expect("a body stored before version 6");
        assert_eq!(migrate_to(&mut conn, 6).expect("v6"), vec![6]);
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('raw_documents') ORDER BY cid")
            .expect("columns")
            .query_map([], |row| row.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("names");
        assert_eq!(columns.last().map(String::as_str), Some("body"));
        let row: (String, Vec<u8>, String, Vec<u8>, i64, String) = conn
            .query_row(
                "SELECT entity, content_hash, encoding, body, run_id, fetched_at \
                 FROM raw_documents WHERE operation = 'get-organization'",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .expect("the row survives");
        assert_eq!(
            row,
            (
                "7".into(),
                vec![1],
                "lz4".into(),
                vec![10, 11],
                3,
                "t".into()
            )
        );
        // The key still holds: the same document replaces its row.
        conn.execute(
            "INSERT OR REPLACE INTO raw_documents (operation, entity, content_hash, encoding, body, run_id, fetched_at) \
             VALUES ('get-organization', '7', x'02', 'lz4', x'0c', 4, 'u')",
            [],
        )
        .expect("replace");
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM raw_documents", [], |r| r.get(0))
            .expect("count");
        assert_eq!(count, 1);
    }

    #[test]
    fn limits_stored_as_real_become_exact_integers_and_fractions_stay() {
        use crate::mirror::spec::ORGANIZATIONS;
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        migrate_to(&mut conn, 2).expect("v2");
        // A mirror written before version 3: REAL limit columns.
        conn.execute_batch(&format!(
            "DROP TABLE organizations; DROP TABLE organizations_history;\n{}\
             CREATE INDEX organizations_history_key ON organizations_history (id, valid_from);\n\
             INSERT INTO organizations (id, limit_total_storage, limit_number_of_users, \
               content_hash, valid_from, run_id) VALUES (1, 100.0, 1.5, x'00', 't', 1);",
            table_ddl(&ORGANIZATIONS).replace("NUMERIC", "REAL")
        ))
        .expect("an old organizations table");
        assert_eq!(migrate_to(&mut conn, 3).expect("v3"), vec![3]);
        let (storage, users): (String, String) = conn
            .query_row(
                "SELECT typeof(limit_total_storage) || ' ' || limit_total_storage, \
                 typeof(limit_number_of_users) || ' ' || limit_number_of_users \
                 FROM organizations WHERE id = 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("the row survives");
        assert_eq!(
            (storage.as_str(), users.as_str()),
            ("integer 100", "real 1.5")
        );
        // 2^60 + 1 is not a double: stored as an integer, it stays exact.
        conn.execute(
            "UPDATE organizations SET limit_compute_time_per_year = ?1 WHERE id = 1",
            [(1_i64 << 60) + 1],
        )
        .expect("update");
        let back: i64 = conn
            .query_row(
                "SELECT limit_compute_time_per_year FROM organizations WHERE id = 1",
                [],
                |row| row.get(0),
            )
            .expect("read");
        assert_eq!(back, 1_152_921_504_606_846_977);
    }
}
