//! Every released schema version upgrades. `tests/fixtures/mirrors/vN.db` is a small
//! mirror of schema version N, built by [`build_fixture`] from the frozen migration
//! steps up to N plus a few rows of every table (history rows and removed rows
//! included). Each one, copied and opened by this build through the binary, upgrades
//! in place, stays intact, keeps every row (count and digest of its columns, table by
//! table), and gives the reports a mirror written by this build from the same rows
//! gives. A mirror newer than the build is refused and left byte for byte as it was.
//!
//! The committed files are the evidence: the generator writes only the fixture of a
//! newly released version, with
//! `cargo test --release --locked --test it -- --ignored upgrades::regenerate_fixture_mirrors`.

use crate::common;
use orgledger::mirror::schema;
use orgledger::mirror::spec::{TABLES, TableSpec, Ty};
use orgledger::mirror::table::content_hash;
use rusqlite::types::Value;
use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The fixture's two sync runs: their ids and observed times.
const RUNS: [(i64, &str); 2] = [
    (1, "2026-05-01T06:00:00.000Z"),
    (2, "2026-05-02T06:00:00.000Z"),
];

/// The days the reports are compared as of: the first reads history, the second
/// the current rows.
const AS_OF: [&str; 2] = ["2026-05-01", "2026-05-02"];

fn fixture(version: i64) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/mirrors/v{version}.db"))
}

/// A mirror of schema `version` at `path`: the frozen steps up to it, then the
/// fixture's rows in every table it has.
fn build_fixture(path: &Path, version: i64) {
    let mut conn = Connection::open(path).expect("fixture file");
    // Small pages keep the committed files small.
    conn.pragma_update(None, "page_size", 1024)
        .expect("page size");
    schema::migrate_to(&mut conn, version).expect("frozen steps");
    let present = tables(&conn);
    fill(&conn, &present);
    // From version 9 on, a fixture holds its derived tables as the writer keeps
    // them (those of 7 and 8 were left empty; migration 9 rebuilds them).
    if version >= 9 {
        orgledger::mirror::rebuild_derived(&conn).expect("derived tables");
    }
}

/// The tables of a database.
fn tables(conn: &Connection) -> BTreeSet<String> {
    conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("names")
}

/// Writes the fixture's rows into the tables of `present`.
fn fill(conn: &Connection, present: &BTreeSet<String>) {
    conn.execute_batch("BEGIN").expect("begin");
    bookkeeping(conn, present);
    for spec in TABLES.iter().filter(|s| present.contains(s.name)) {
        versioned_rows(conn, spec);
    }
    conn.execute_batch("COMMIT").expect("commit");
}

fn bookkeeping(conn: &Connection, present: &BTreeSet<String>) {
    for (id, at) in RUNS {
        conn.execute(
            "INSERT INTO sync_runs (id, started_at, observed_at, finished_at, status, base_url, \
             requests, rows_inserted) VALUES (?1, ?2, ?2, ?2, 'succeeded', 'http://fixture.invalid', 40, 12)",
            params![id, at],
        )
        .expect("sync run");
    }
    conn.execute(
        "INSERT INTO sync_errors (run_id, at, operation, entity, http_status, message) \
         VALUES (2, ?1, 'get-project-info', 'project 3', 404, 'HTTP 404')",
        [RUNS[1].1],
    )
    .expect("sync error");
    conn.execute(
        "INSERT INTO raw_documents (operation, entity, content_hash, encoding, body, run_id, fetched_at) \
         VALUES ('get-organization', '1', x'00112233', 'lz4', x'0a0b0c', 2, ?1)",
        [RUNS[1].1],
    )
    .expect("raw document");
    if present.contains("alert_state") {
        conn.execute_batch(
            "INSERT INTO alert_state (key, kind, active, crossings, event_id, since) \
               VALUES ('entitlement.threshold:1:storage:80', 'entitlement.threshold', 1, 1, 'evt_1', '2026-05-02');
             INSERT INTO alert_runs (as_of, at, mode, events) \
               VALUES ('2026-05-02', '2026-05-02T07:00:00.000Z', 'advanced', 1);
",
        )
        .expect("alert rows");
        outbox_rows(conn);
    }
    if present.contains("email_sends") {
        conn.execute(
            "INSERT INTO email_sends (subscription, as_of, recipient, status, attempts, \
             last_attempt_at, smtp_code, sent_at) VALUES ('weekly', '2026-05-02', \
             'finance@example.com', 'delivered', 1, ?1, 250, ?1)",
            [RUNS[1].1],
        )
        .expect("e-mail record");
    }
    if present.contains("maintenance_runs") {
        conn.execute(
            "INSERT INTO maintenance_runs (kind, at, outcome) VALUES ('check', ?1, 'sound')",
            [RUNS[1].1],
        )
        .expect("maintenance row");
    }
}

/// An event waiting for the webhook, as the outbox of the mirror's version holds
/// it: from version 10 on, its delivery state is a row per webhook.
fn outbox_rows(conn: &Connection) {
    let per_webhook = tables(conn).contains("alert_deliveries");
    let sql = if per_webhook {
        "INSERT INTO alert_outbox (id, type, created_at, body) \
           VALUES ('evt_1', 'entitlement.threshold', '2026-05-02T07:00:00.000Z', '{}');
         INSERT INTO alert_deliveries (event_id, webhook, format, body, status) \
           VALUES ('evt_1', 'default', 'standard', '{}', 'pending');"
    } else {
        "INSERT INTO alert_outbox (id, type, created_at, body, status) \
           VALUES ('evt_1', 'entitlement.threshold', '2026-05-02T07:00:00.000Z', '{}', 'pending');"
    };
    conn.execute_batch(sql).expect("outbox rows");
}

/// Key 1 changed in run 2 (a history row and a current row), key 2 unchanged since
/// run 1, key 3 removed by run 2 (where the table marks removals).
fn versioned_rows(conn: &Connection, spec: &TableSpec) {
    let (first, second) = (RUNS[0], RUNS[1]);
    insert_version(conn, spec, &row(spec, 1, 1), first, Some(second.1));
    insert_version(conn, spec, &row(spec, 1, 2), second, None);
    insert_version(conn, spec, &row(spec, 2, 1), first, None);
    insert_version(conn, spec, &row(spec, 3, 1), first, None);
    if spec.removable {
        let key: Vec<String> = spec
            .key
            .iter()
            .map(|c| format!("\"{}\" = ?", c.name))
            .collect();
        let mut values = row(spec, 3, 1);
        values.truncate(spec.key.len());
        values.insert(0, Value::Integer(second.0));
        values.insert(0, Value::Text(second.1.into()));
        conn.execute(
            &format!(
                "UPDATE {} SET removed_at = ?, removed_run = ? WHERE {}",
                spec.name,
                key.join(" AND ")
            ),
            rusqlite::params_from_iter(values),
        )
        .expect("removal");
    }
}

/// One version of a row: into `<table>_history` when `valid_to` is given.
fn insert_version(
    conn: &Connection,
    spec: &TableSpec,
    values: &[Value],
    (run_id, valid_from): (i64, &str),
    valid_to: Option<&str>,
) {
    let cols: Vec<String> = spec
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let (table, extra) = match valid_to {
        Some(_) => (format!("{}_history", spec.name), ", valid_to"),
        None => (spec.name.to_string(), ""),
    };
    let mut all = values.to_vec();
    all.push(Value::Blob(content_hash(values).to_vec()));
    all.push(Value::Text(valid_from.into()));
    all.push(Value::Integer(run_id));
    all.extend(valid_to.map(|to| Value::Text(to.into())));
    let marks = vec!["?"; all.len()].join(", ");
    conn.execute(
        &format!(
            "INSERT INTO {table} ({}, content_hash, valid_from, run_id{extra}) VALUES ({marks})",
            cols.join(", ")
        ),
        rusqlite::params_from_iter(all),
    )
    .unwrap_or_else(|e| panic!("{table}: {e}"));
}

/// Deterministic values of row `k`, version `generation`, of a table: identifiers
/// stay (so rows refer to each other), other values change with the generation.
fn row(spec: &TableSpec, k: i64, generation: i64) -> Vec<Value> {
    let key = spec.key.iter().map(|c| key_value(c.name, c.ty, k));
    let data = spec.columns.iter().map(|c| {
        if c.ty == Ty::Int && (c.name == "id" || c.name.ends_with("_id")) {
            return Value::Integer(k);
        }
        // Nothing deleted, so every report has rows to show.
        if c.ty == Ty::Time && c.name.contains("delet") {
            return Value::Null;
        }
        match c.ty {
            Ty::Int => Value::Integer(10 * k + generation),
            Ty::Real => Value::Real(k as f64 + generation as f64 / 4.0),
            Ty::Number => Value::Integer(1000 * k + generation),
            Ty::Bool => Value::Integer((k + generation) % 2),
            Ty::Json => Value::Text("[]".into()),
            Ty::Time => Value::Text(format!("2026-04-{:02}T08:00:00.000Z", 3 * k + generation)),
            Ty::Text => Value::Text(format!("{} {k}.{generation}", c.name)),
        }
    });
    key.chain(data).collect()
}

fn key_value(name: &str, ty: Ty, k: i64) -> Value {
    match (ty, name) {
        (Ty::Int, _) => Value::Integer(k),
        (_, "day") => Value::Text(format!("2026-04-{k:02}")),
        (_, "job") => Value::Text("train".into()),
        (_, "scope_kind") => Value::Text("organization".into()),
        _ => Value::Text(format!("{name}-{k}")),
    }
}

/// Per table: row count and a digest of the given columns, rows in column order.
/// `schema_migrations` counts up to `version`: the rows the upgrade adds are not
/// the fixture's.
fn digests(
    db: &Path,
    columns: &BTreeMap<String, Vec<String>>,
    version: i64,
) -> BTreeMap<String, (i64, String)> {
    let conn = common::open(db);
    columns
        .iter()
        .map(|(table, cols)| {
            let list: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
            let order: Vec<String> = (1..=cols.len()).map(|i| i.to_string()).collect();
            let only_old = if table == "schema_migrations" {
                format!(" WHERE version <= {version}")
            } else {
                String::new()
            };
            let sql = format!(
                "SELECT {} FROM \"{table}\"{only_old} ORDER BY {}",
                list.join(", "),
                order.join(", ")
            );
            let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let mut rows = stmt.query([]).expect("rows");
            let (mut n, mut hasher) = (0, Sha256::new());
            while let Some(r) = rows.next().expect("row") {
                let values: Vec<Value> = (0..cols.len())
                    .map(|i| r.get(i))
                    .collect::<Result<_, _>>()
                    .expect("values");
                hasher.update(content_hash(&values));
                n += 1;
            }
            let digest: String = hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            (table.clone(), (n, digest))
        })
        .collect()
}

/// Every table's columns.
fn columns(db: &Path) -> BTreeMap<String, Vec<String>> {
    let conn = common::open(db);
    tables(&conn)
        .into_iter()
        .map(|table| {
            let cols: Vec<String> = conn
                .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
                .expect("columns")
                .query_map([&table], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("names");
            (table, cols)
        })
        .collect()
}

fn copy_private(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

fn integrity(db: &Path) -> String {
    common::open(db)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

/// Runs a command of the binary on the upgraded fixture of `version`; it must exit 0.
fn succeeds(db: &Path, command: &str, version: i64) {
    let out = common::orgledger(db).arg(command).output().expect("runs");
    assert!(
        out.status.success(),
        "v{version}: {command}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_schema_version_has_a_committed_fixture() {
    for version in 1..=schema::CURRENT_VERSION {
        assert!(
            fixture(version).is_file(),
            "no fixture mirror for schema version {version}: run \
             cargo test --release --locked --test it -- --ignored upgrades::regenerate_fixture_mirrors"
        );
    }
}

/// Tables whose rows an upgrade may change: not data the service sent. Migration 9
/// drops `daily_series_kept` (which sync run last kept the packed series) and
/// rebuilds `daily_series` (derived from `daily_metrics`; the reports compared below
/// read it).
const NOT_KEPT: &[&str] = &["daily_series_kept", "daily_series"];

/// Columns an upgrade moves to another table: migration 10 moves the one webhook's
/// delivery state from `alert_outbox` to its `default` row of `alert_deliveries`
/// (checked by [`deliveries_moved`]).
const MOVED: &[(&str, &[&str])] = &[(
    "alert_outbox",
    &[
        "status",
        "attempts",
        "last_attempt_at",
        "http_status",
        "error",
        "delivered_at",
    ],
)];

/// The outbox of a mirror from before version 10 is the `default` webhook's
/// deliveries after the upgrade, with the same states.
fn deliveries_moved(db: &Path, before: &[(String, String)], version: i64) {
    let conn = common::open(db);
    let after: Vec<(String, String)> = conn
        .prepare(
            "SELECT event_id, status FROM alert_deliveries WHERE webhook = 'default' ORDER BY 1",
        )
        .expect("deliveries")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        after, before,
        "v{version}: the outbox's delivery states moved"
    );
}

/// Each event's id and delivery status in a mirror from before version 10.
fn outbox_states(db: &Path) -> Vec<(String, String)> {
    let conn = common::open(db);
    if !tables(&conn).contains("alert_outbox") || tables(&conn).contains("alert_deliveries") {
        return Vec::new();
    }
    conn.prepare("SELECT id, status FROM alert_outbox ORDER BY 1")
        .expect("outbox")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn every_released_version_upgrades_in_place_keeps_its_rows_and_reports_alike() {
    for version in 1..=schema::CURRENT_VERSION {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("upgraded.db");
        copy_private(&fixture(version), &db);
        let mut cols = columns(&db);
        for table in NOT_KEPT {
            cols.remove(*table);
        }
        for (table, moved) in MOVED {
            if let Some(kept) = cols.get_mut(*table) {
                kept.retain(|c| !moved.contains(&c.as_str()));
            }
        }
        let before = digests(&db, &cols, version);
        let outbox = outbox_states(&db);

        // Opening read-write upgrades an older mirror in place.
        succeeds(&db, "status", version);
        assert_eq!(
            schema::version(&common::open(&db)).expect("version"),
            schema::CURRENT_VERSION,
            "v{version} upgraded in place"
        );
        assert_eq!(integrity(&db), "ok", "v{version}");
        assert_eq!(
            digests(&db, &cols, version),
            before,
            "v{version}: every row kept"
        );
        if !outbox.is_empty() {
            deliveries_moved(&db, &outbox, version);
        }
        succeeds(&db, "check", version);

        // The same rows, written into a mirror this build created.
        let fresh = dir.path().join("fresh.db");
        drop(orgledger::mirror::open_rw(&fresh).expect("a new mirror"));
        let conn = common::open(&fresh);
        fill(&conn, &cols.keys().cloned().collect());
        // Rows written by hand rather than by the writer: the tables derived from
        // them are built as the writer would have kept them.
        orgledger::mirror::rebuild_derived(&conn).expect("derived tables");
        drop(conn);
        for as_of in AS_OF {
            assert_eq!(
                common::report_files(&db, as_of),
                common::report_files(&fresh, as_of),
                "v{version}: reports as of {as_of}"
            );
        }
    }
}

#[test]
fn a_mirror_newer_than_the_build_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("newer.db");
    copy_private(&fixture(schema::CURRENT_VERSION), &db);
    let newer = schema::CURRENT_VERSION + 1;
    common::open(&db)
        .execute(
            "INSERT INTO schema_migrations (version, applied_at, what) VALUES (?1, 'later', 'a step of a newer build')",
            [newer],
        )
        .expect("a newer step");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let bytes = std::fs::read(&db).expect("read");
    let backup = dir.path().join("copy.db");
    let commands: [Vec<&str>; 5] = [
        vec!["status"],
        vec!["check"],
        vec!["query", "SELECT 1"],
        vec!["report", "--out", dir.path().to_str().expect("utf-8")],
        vec!["backup", "--out", backup.to_str().expect("utf-8")],
    ];
    for args in commands {
        let out = common::orgledger(&db).args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("schema version {newer}"))
                && stderr.contains(&format!("version {})", schema::CURRENT_VERSION)),
            "{args:?} names both versions: {stderr}"
        );
        assert_eq!(
            std::fs::read(&db).expect("read"),
            bytes,
            "{args:?}: bytes untouched"
        );
        let mode = std::fs::metadata(&db).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "{args:?}: mode untouched");
    }
    assert!(!backup.exists());
}

#[test]
#[ignore = "writes the committed fixtures: run by hand when a migration is released"]
fn regenerate_fixture_mirrors() {
    let dir = fixture(1).parent().expect("fixture folder").to_path_buf();
    std::fs::create_dir_all(&dir).expect("fixture folder");
    // A committed fixture is evidence of what its release wrote: only a missing one
    // is built.
    for version in 1..=schema::CURRENT_VERSION {
        let path = fixture(version);
        if !path.exists() {
            build_fixture(&path, version);
        }
    }
}
