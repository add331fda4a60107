//! Versioned migrations. Each released step is fixed SQL text in `migrations/`
//! (`NNNN.sql`), never derived from the table specs: a column added to a spec
//! later must not change what an earlier step creates, or a fresh mirror and an
//! upgraded one would end with different schemas. The tests hold a checksum of
//! every released step, and check that running every step from an empty file gives
//! exactly the schema [`crate::mirror::spec`] describes (every table gets a
//! `_history` twin with the same columns plus `valid_to`). A mirror created by an
//! older version is upgraded in place, in one transaction per migration, when it is
//! opened; one written by a newer build is refused (`crate::mirror::path`).

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
    sql: &'static str,
    /// Rows the step derives from what the mirror holds, written after `sql` in the
    /// same transaction.
    fill: Option<fn(&Connection) -> rusqlite::Result<()>>,
}

const MIGRATIONS: &[Migration] = &[
    // The mirrored tables as the specs stood then (each WITHOUT ROWID: its primary
    // key is the only B-tree, so an insert updates one tree instead of a rowid table
    // plus a key index), their `_history` twins, and an index on each scope that is
    // not a prefix of the key.
    Migration {
        version: 1,
        what: "mirrored tables, their history, sync bookkeeping, raw documents",
        sql: include_str!("migrations/0001.sql"),
        fill: None,
    },
    // `<table>_history_key`: the index as-of reads of a table's history go through.
    Migration {
        version: 2,
        what: "indexes for as-of reads of history; retry count on sync errors",
        sql: include_str!("migrations/0002.sql"),
        fill: None,
    },
    // SQLite cannot change a column's type in place: the tables that hold
    // entitlement limits are rebuilt with NUMERIC limit columns, so whole numbers are
    // stored as integers (REAL rounds anything above 2^53). Copying applies the new
    // affinity: a stored `100.0` becomes the integer 100.
    Migration {
        version: 3,
        what: "entitlement limits stored without loss (NUMERIC: whole numbers as integers)",
        sql: include_str!("migrations/0003.sql"),
        fill: None,
    },
    // The alerts' bookkeeping (`crate::alerts`): one row per condition that has ever
    // held, one per evaluation, and the events waiting for (or done with) delivery.
    Migration {
        version: 4,
        what: "alert state, alert runs and the alert outbox",
        sql: include_str!("migrations/0004.sql"),
        fill: None,
    },
    // A mirror written before this version has no record of which organization
    // listed a project; the next sync fills the table from the get-organization
    // answers it fetches.
    Migration {
        version: 5,
        what: "organization_projects: the projects each get-organization answer lists",
        sql: include_str!("migrations/0005.sql"),
        fill: None,
    },
    // A body of tens of megabytes (the organization list of a large white label) is
    // inserted as `zeroblob(n)` and written into its row piece by piece. SQLite keeps
    // a zeroblob unexpanded only when nothing but empty values follows it in the
    // record; with `run_id` and `fetched_at` after it, it built the whole body twice
    // in memory (the expanded zeroblob and the record: 51 MB for a 26 MB body), and
    // the C allocator kept that memory. Copying the table once moves `body` to the end.
    Migration {
        version: 6,
        what: "raw_documents: the body is the last column",
        sql: include_str!("migrations/0006.sql"),
        fill: None,
    },
    // `compute_trends` and `usage_summary` read a user's days from one packed row
    // instead of a row per day (`crate::mirror::daily_series`). A NULL series sends
    // readers to `daily_metrics`. `daily_series_kept` holds the last sync run that
    // kept them.
    Migration {
        version: 7,
        what: "daily_series: each user's daily compute and storage figures packed in one row",
        sql: include_str!("migrations/0007.sql"),
        fill: Some(crate::mirror::daily_series::fill),
    },
    // When the mirror was last checked and backed up (`crate::mirror::maintenance`).
    Migration {
        version: 8,
        what: "maintenance_runs: when the mirror was last checked and backed up",
        sql: include_str!("migrations/0008.sql"),
        fill: None,
    },
    // The writer keeps the packed series in the transaction that writes the rows
    // (`crate::mirror::spec::Derived`), and no released build writes `daily_metrics`
    // without them, so there is no earlier build's sync to notice: the run that last
    // kept them is not recorded any more. Series that were waiting for the rebuild
    // that record used to trigger get it here.
    Migration {
        version: 9,
        what: "daily_series_kept dropped: the series are kept with the rows",
        sql: include_str!("migrations/0009.sql"),
        fill: Some(crate::mirror::daily_series::rebuild),
    },
    // Several webhooks, each in its own format: an event is delivered to each one
    // on its own, so a receiver that is down is retried without the others getting
    // the event twice. The state of the one webhook before is its `default` row.
    Migration {
        version: 10,
        what: "alert_deliveries: each event's delivery per webhook",
        sql: include_str!("migrations/0010.sql"),
        fill: None,
    },
    // A version that differs from the next one only in usage figures and last-seen
    // times is archived narrow (`crate::mirror::moves`): a day of usage no longer
    // copies whole rows. History archived before is split the same way.
    Migration {
        version: 11,
        what: "<table>_moves: versions that changed only in moving columns, archived narrow",
        sql: include_str!("migrations/0011.sql"),
        fill: Some(crate::mirror::moves::split_history),
    },
    // The key of the reports' pseudonyms (`crate::mirror::privacy`), made here once
    // from SQLite's randomness, and the record of erasures (`orgledger forget`):
    // when and whose, never what.
    Migration {
        version: 12,
        what: "privacy_key: the pseudonyms' key; erasures: who was forgotten and when",
        sql: include_str!("migrations/0012.sql"),
        fill: None,
    },
    // The report subscriptions' record (`crate::email`): each recipient's message of
    // each as-of date, so a report goes out once per date across restarts and runs.
    Migration {
        version: 13,
        what: "email_sends: the report messages sent, per subscription, date and recipient",
        sql: include_str!("migrations/0013.sql"),
        fill: None,
    },
];

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
        tx.execute_batch(step.sql)?;
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
    use crate::mirror::spec::{TABLES, TableSpec};
    use sha2::{Digest, Sha256};

    /// SHA-256 of each released step's text, in version order. A released step is
    /// what existing mirrors were built with: it never changes, and a change of
    /// schema is a new step.
    const RELEASED: &[&str] = &[
        "0764959424cd87da0f7159f2c13468d280e8327fd10b939134a5c49d53f9537e",
        "f2d3d2f821ee6e07f934f05b52dec45fd3bb6d56e4b691d0a706bf979c57cd24",
        "e280a5b42db2d70a27ddad332bb96c94101530b4c2034ed6f535eedbde6573f4",
        "8fc0707928618d4b1d7504fd6f25f746f064a1c23e41be3dc311168dfcb263f5",
        "52e01373f03ff16533dab6a303c7902116f203c5b60f326a6909e5e9816aafe7",
        "d1144af935a39d129339283e530954c4cb8278c1b539207122d32ccb24631449",
        "59823e33206bb67ac8070328fb44c882af1cbe5bf2e83d7325704770aecb1911",
        "ec4d320bcc54a9b89a6f2ba463552a97df683fb43d8e9309a882fea1ffc43bf4",
        "6c9adb79cab2be2ebed2a326fc858a3928223e6d22f672e7b4c7a2ad9c547975",
        "89aba690c247a00fe76429795466343af8db08468c6cea83b46d4def6e2d755c",
        "ea67787f3453385f9a00c4a31652682ea02dce3af404ee25a48f8bd733788a16",
        "079beed6eb3cb3eb6475b5f1ce1f32927b5d4baf1373388d4e3ca19b6e6c9ee4",
        "8562ce01f0a7438f902668fb30c860d1abcb2390be468c84db7473dd27bbc449",
    ];

    #[test]
    fn released_steps_are_never_edited() {
        for (i, step) in MIGRATIONS.iter().enumerate() {
            assert_eq!(step.version, i as i64 + 1, "versions count up from 1");
            let sum: String = Sha256::digest(step.sql.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            match RELEASED.get(i) {
                Some(released) => assert!(
                    sum == *released,
                    "migration {} ({}) differs from its released text: a released step never \
                     changes, mirrors were built with it; restore it and add a new migration instead",
                    step.version,
                    step.what
                ),
                None => panic!(
                    "migration {} has no checksum: once released, add \"{sum}\" to RELEASED",
                    step.version
                ),
            }
        }
    }

    /// The DDL the current specs describe for a table: the table WITHOUT ROWID
    /// keyed by its key, its `_history` twin, the index of a scope that is not a
    /// prefix of the key, and the history's key index.
    fn spec_ddl(spec: &TableSpec) -> String {
        let cols: Vec<String> = spec
            .all_columns()
            .map(|col| format!("\"{}\" {}", col.name, col.ty.sql()))
            .collect();
        let key: Vec<&str> = spec.key.iter().map(|col| col.name).collect();
        let (name, cols, key) = (spec.name, cols.join(", "), key.join(", "));
        let mut ddl = format!(
            "CREATE TABLE {name} ({cols}, {BOOKKEEPING}, PRIMARY KEY ({key})) WITHOUT ROWID;\n\
             CREATE TABLE {name}_history (history_id INTEGER PRIMARY KEY, {cols}, {BOOKKEEPING}, \
             valid_to TEXT NOT NULL);\n\
             CREATE INDEX {name}_history_key ON {name}_history ({key}, valid_from);\n"
        );
        if !spec.moving.is_empty() {
            let narrow: Vec<String> = spec
                .all_columns()
                .filter(|col| {
                    spec.key.iter().any(|k| k.name == col.name) || spec.moving.contains(&col.name)
                })
                .map(|col| format!("\"{}\" {}", col.name, col.ty.sql()))
                .collect();
            ddl.push_str(&format!(
                "CREATE TABLE {name}_moves (moves_id INTEGER PRIMARY KEY, {}, valid_from TEXT NOT NULL, \
                 valid_to TEXT NOT NULL, run_id INTEGER NOT NULL, wide_id INTEGER);\n\
                 CREATE INDEX {name}_moves_key ON {name}_moves ({key}, wide_id);\n",
                narrow.join(", ")
            ));
        }
        let scope_is_key_prefix = spec
            .scope
            .iter()
            .zip(spec.key.iter())
            .all(|(scope, key)| *scope == key.name);
        if !spec.scope.is_empty() && !scope_is_key_prefix {
            ddl.push_str(&format!(
                "CREATE INDEX {name}_scope ON {name} ({});\n",
                spec.scope.join(", ")
            ));
        }
        ddl
    }

    /// A table's shape as SQLite reports it: WITHOUT ROWID or not, every column
    /// (name, declared type, NOT NULL, default, place in the primary key) and every
    /// index (name, unique, origin, partial, columns). The primary key's own index is
    /// named by SQLite after the table's first name, so it is named by its origin.
    fn shape(conn: &Connection, table: &str) -> Vec<String> {
        let lines = |sql: &str, arg: &str| -> Vec<String> {
            conn.prepare(sql)
                .expect(sql)
                .query_map([arg], |row| row.get::<_, String>(0))
                .expect(sql)
                .collect::<Result<_, _>>()
                .expect(sql)
        };
        let mut out = lines(
            "SELECT 'without rowid ' || wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            table,
        );
        out.extend(lines(
            "SELECT printf('column %s %s notnull=%d default=%s pk=%d', name, type, \"notnull\", \
             quote(dflt_value), pk) FROM pragma_table_xinfo(?1) ORDER BY cid",
            table,
        ));
        let mut indexes = lines(
            "SELECT printf('index %s unique=%d origin=%s partial=%d on (%s)', \
               CASE origin WHEN 'pk' THEN '(primary key)' ELSE l.name END, \"unique\", origin, partial, \
               (SELECT group_concat(name, ', ') FROM (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno))) \
             FROM pragma_index_list(?1) AS l",
            table,
        );
        indexes.sort();
        out.extend(indexes);
        out
    }

    #[test]
    fn every_step_from_an_empty_file_gives_the_schema_the_specs_describe() {
        let mut migrated = Connection::open_in_memory().expect("in-memory db");
        migrate_to(&mut migrated, CURRENT_VERSION).expect("every step");
        let expected = Connection::open_in_memory().expect("in-memory db");
        for spec in TABLES {
            expected.execute_batch(&spec_ddl(spec)).expect(spec.name);
        }
        for spec in TABLES {
            for table in [
                spec.name.to_string(),
                format!("{}_history", spec.name),
                format!("{}_moves", spec.name),
            ] {
                assert_eq!(
                    shape(&migrated, &table),
                    shape(&expected, &table),
                    "{table}: the migrations and src/mirror/spec.rs disagree; a spec change \
                     needs a new migration that makes the same change"
                );
            }
        }
        let spec_tables: i64 = migrated
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_history' ESCAPE '\\'",
                [],
                |row| row.get(0),
            )
            .expect("history tables");
        assert_eq!(
            spec_tables,
            TABLES.len() as i64,
            "every history table has a spec"
        );
    }

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
             INSERT INTO organizations (id, limit_total_storage, limit_number_of_users, \
               content_hash, valid_from, run_id) VALUES (1, 100.0, 1.5, x'00', 't', 1);",
            spec_ddl(&ORGANIZATIONS).replace("NUMERIC", "REAL")
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
