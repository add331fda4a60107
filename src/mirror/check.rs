//! `orgledger check`: is the mirror sound? SQLite's own checks (`integrity_check`,
//! `foreign_key_check`) and the invariants the writer (`crate::mirror::table`) keeps:
//! one current row per key, history versions that neither end before they start nor
//! overlap the next version of their key, narrow versions whose whole version exists, current rows whose `content_hash` is the
//! hash of their values, and no run left `running` by a process that died.
//!
//! Every query runs in one read transaction, so a sync writing meanwhile is seen
//! between two of its transactions, never inside one.

use crate::mirror::MirrorError;
use crate::mirror::spec::{TABLES, TableSpec};
use crate::mirror::table::content_hash;
use rusqlite::Connection;
use rusqlite::types::Value;
use std::path::Path;

/// Findings of one kind in one table printed at most; the rest are counted.
const SHOWN_PER_KIND: usize = 20;

/// What a check found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// One line per finding; empty when the mirror is sound.
    pub findings: Vec<String>,
    /// Current rows whose content hash was verified.
    pub rows_hashed: u64,
    /// History rows whose place among their key's versions was verified.
    pub history_rows: u64,
}

impl CheckReport {
    /// Adds the findings of one kind, said by `what` when some are only counted.
    fn add(&mut self, tally: Tally, what: &str) {
        self.findings.extend(tally.lines);
        if tally.total > SHOWN_PER_KIND as u64 {
            self.findings.push(format!(
                "{what}: {} more like the above",
                tally.total - SHOWN_PER_KIND as u64
            ));
        }
    }

    /// One finding per row of `sql`, in the words of `line`.
    fn per_row(
        &mut self,
        conn: &Connection,
        sql: &str,
        what: &str,
        line: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<String>,
    ) -> Result<(), MirrorError> {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        let mut tally = Tally::default();
        while let Some(row) = rows.next()? {
            tally.found(|| line(row))?;
        }
        self.add(tally, what);
        Ok(())
    }
}

/// Findings of one kind: the first [`SHOWN_PER_KIND`] lines and how many in all.
#[derive(Default)]
struct Tally {
    lines: Vec<String>,
    total: u64,
}

impl Tally {
    /// Counts a finding; its line is only made while it will be shown.
    fn found(&mut self, line: impl FnOnce() -> rusqlite::Result<String>) -> rusqlite::Result<()> {
        self.total += 1;
        if self.lines.len() < SHOWN_PER_KIND {
            self.lines.push(line()?);
        }
        Ok(())
    }
}

/// Checks the mirror open on `conn` (the file at `db`, whose sync lock tells a live
/// run from one whose process died).
pub fn run(conn: &Connection, db: &Path) -> Result<CheckReport, MirrorError> {
    let mut report = CheckReport::default();
    conn.execute_batch("BEGIN")?;
    let checked = check_all(conn, &mut report);
    // Only a read transaction: nothing to keep or lose.
    let _ = conn.execute_batch("COMMIT");
    checked?;
    // Outside the snapshot, which may be older than a sync that ended meanwhile.
    dead_runs(conn, || crate::mirror::lock::held(db), &mut report)?;
    Ok(report)
}

fn check_all(conn: &Connection, report: &mut CheckReport) -> Result<(), MirrorError> {
    integrity(conn, report)?;
    foreign_keys(conn, report)?;
    for spec in TABLES {
        one_current_row_per_key(conn, spec, report)?;
        versions_in_order(conn, spec, report)?;
        moves_linked(conn, spec, report)?;
        hashes_match(conn, spec, report)?;
    }
    Ok(())
}

/// `integrity_check` says `ok` alone when it finds nothing; every other line is a
/// finding.
fn integrity(conn: &Connection, report: &mut CheckReport) -> Result<(), MirrorError> {
    let sql = "SELECT integrity_check FROM pragma_integrity_check WHERE integrity_check <> 'ok'";
    report.per_row(conn, sql, "integrity_check", |row| {
        Ok(format!("integrity_check: {}", row.get::<_, String>(0)?))
    })
}

fn foreign_keys(conn: &Connection, report: &mut CheckReport) -> Result<(), MirrorError> {
    let sql = "SELECT \"table\", rowid, parent FROM pragma_foreign_key_check";
    report.per_row(conn, sql, "foreign_key_check", |row| {
        let (table, rowid, parent): (String, Option<i64>, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        let rowid = rowid.map_or_else(|| "?".to_string(), |r| r.to_string());
        Ok(format!(
            "foreign_key_check: {table} row {rowid} refers to a {parent} row that does not exist"
        ))
    })
}

/// `"a", "b"` of the key columns, for SQL.
fn key_list(spec: &TableSpec) -> String {
    let cols: Vec<String> = spec.key.iter().map(|c| format!("\"{}\"", c.name)).collect();
    cols.join(", ")
}

/// `(a=1, b=x)`: a key as a finding names it.
fn key_label(spec: &TableSpec, values: &[Value]) -> String {
    let parts: Vec<String> = spec
        .key
        .iter()
        .zip(values)
        .map(|(col, value)| match value {
            Value::Integer(n) => format!("{}={n}", col.name),
            Value::Text(s) => format!("{}={s}", col.name),
            Value::Real(f) => format!("{}={f}", col.name),
            Value::Null => format!("{}=NULL", col.name),
            Value::Blob(b) => format!("{}={}", col.name, hex::encode(b)),
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Reads the first `k` columns of a row as a key.
fn key_of(row: &rusqlite::Row<'_>, k: usize) -> rusqlite::Result<Vec<Value>> {
    (0..k).map(|i| row.get(i)).collect()
}

/// The primary key makes a second current row impossible; an index that no longer
/// matches its table (what `integrity_check` reports) is how one could still show.
fn one_current_row_per_key(
    conn: &Connection,
    spec: &TableSpec,
    report: &mut CheckReport,
) -> Result<(), MirrorError> {
    let keys = key_list(spec);
    let sql = format!(
        "SELECT {keys}, COUNT(*) FROM main.{name} NOT INDEXED GROUP BY {keys} HAVING COUNT(*) > 1",
        name = spec.name
    );
    let k = spec.key.len();
    report.per_row(conn, &sql, spec.name, |row| {
        let n: i64 = row.get(k)?;
        let key = key_label(spec, &key_of(row, k)?);
        Ok(format!("{} {key}: {n} current rows for one key", spec.name))
    })
}

/// A narrow version (`crate::mirror::moves`) takes its steady columns from the
/// whole version it names: a `_history` row of the same key, or the current row
/// when it names none. One that names what is not there would read as NULLs.
fn moves_linked(
    conn: &Connection,
    spec: &TableSpec,
    report: &mut CheckReport,
) -> Result<(), MirrorError> {
    if spec.moving.is_empty() {
        return Ok(());
    }
    let keys = key_list(spec);
    let same_key = |other: &str| -> String {
        spec.key
            .iter()
            .map(|c| format!("{other}.\"{0}\" = m.\"{0}\"", c.name))
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let sql = format!(
        "SELECT {m_keys}, m.valid_from, m.wide_id FROM main.{name}_moves m \
         WHERE CASE WHEN m.wide_id IS NULL \
           THEN NOT EXISTS (SELECT 1 FROM main.{name} c WHERE {current}) \
           ELSE NOT EXISTS (SELECT 1 FROM main.{name}_history h \
             WHERE h.history_id = m.wide_id AND {history}) END",
        m_keys = keys
            .split(", ")
            .map(|k| format!("m.{k}"))
            .collect::<Vec<_>>()
            .join(", "),
        name = spec.name,
        current = same_key("c"),
        history = same_key("h"),
    );
    let k = spec.key.len();
    report.per_row(conn, &sql, spec.name, |row| {
        let key = key_label(spec, &key_of(row, k)?);
        let from: String = row.get(k)?;
        let wide: Option<i64> = row.get(k + 1)?;
        Ok(match wide {
            Some(id) => format!(
                "{}_moves {key} from {from}: names history row {id}, which is not of this key",
                spec.name
            ),
            None => format!(
                "{}_moves {key} from {from}: no current row to take its other columns from",
                spec.name
            ),
        })
    })
}

/// Every version of the keys that have history, in order: history rows, then the
/// current row (which is open-ended). The writer archives a version with `valid_to`
/// equal to the `valid_from` of the version that replaces it, both the observed time
/// of the replacing run. Two runs that observed the same second of the service's
/// clock (HTTP `Date` has whole seconds) leave a version that starts and ends at
/// once: it is never current as of any time, and is sound. Unsound are a version
/// that ends before it starts, one that ends after the next one starts (both would
/// be current at once) and a history row with no current row after it.
fn versions_sql(spec: &TableSpec) -> String {
    let keys = key_list(spec);
    let name = spec.name;
    format!(
        "WITH a AS ({archived}), v AS ( \
           SELECT {keys}, valid_from, valid_to, 0 AS cur FROM a \
           UNION ALL \
           SELECT {keys}, valid_from, NULL, 1 FROM main.{name} \
             WHERE ({keys}) IN (SELECT {keys} FROM a) \
         ), o AS ( \
           SELECT *, LEAD(valid_from) OVER w AS next_from, \
             LEAD(cur) OVER w AS next_cur FROM v \
           WINDOW w AS (PARTITION BY {keys} ORDER BY valid_from, cur, valid_to) \
         ) \
         SELECT {keys}, cur, valid_from, valid_to, next_from, next_cur FROM o \
         WHERE (cur = 0 AND valid_to < valid_from) \
            OR (next_from IS NOT NULL AND (cur = 1 OR valid_to > next_from)) \
            OR (cur = 0 AND next_from IS NULL)",
        archived = crate::mirror::moves::archived_sql(spec, "1"),
    )
}

fn versions_in_order(
    conn: &Connection,
    spec: &TableSpec,
    report: &mut CheckReport,
) -> Result<(), MirrorError> {
    report.history_rows += conn.query_row(
        &format!("SELECT {}", crate::mirror::moves::archived_count_sql(spec)),
        [],
        |row| row.get::<_, i64>(0),
    )? as u64;
    let k = spec.key.len();
    report.per_row(conn, &versions_sql(spec), spec.name, |row| {
        let version = Version {
            current: row.get(k)?,
            from: row.get(k + 1)?,
            to: row.get(k + 2)?,
            next_from: row.get(k + 3)?,
        };
        let key = key_label(spec, &key_of(row, k)?);
        Ok(format!("{} {key}: {}", spec.name, version.fault()))
    })
}

/// One version [`versions_sql`] found out of order.
struct Version {
    current: bool,
    from: String,
    to: Option<String>,
    next_from: Option<String>,
}

impl Version {
    fn fault(&self) -> String {
        let (from, to) = (&self.from, self.to.as_deref().unwrap_or(""));
        match (&self.next_from, self.current) {
            (_, false) if to < from.as_str() => {
                format!("the history version from {from} to {to} ends before it starts")
            }
            (Some(next), true) => format!(
                "the current version (from {from}) overlaps a history version that starts at {next}"
            ),
            (Some(next), false) => format!(
                "the history version from {from} to {to} overlaps the next version, which starts at {next}"
            ),
            (None, _) => {
                format!("the history version from {from} to {to} has no current version after it")
            }
        }
    }
}

/// Each current row's stored digest against [`content_hash`] of its values, the
/// function the writer stores: a mismatch is a row changed outside orgledger (or
/// damaged), which the next sync would take for a change of the service.
fn hashes_match(
    conn: &Connection,
    spec: &TableSpec,
    report: &mut CheckReport,
) -> Result<(), MirrorError> {
    let cols: Vec<String> = spec
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let sql = format!(
        "SELECT {}, content_hash FROM main.{}",
        cols.join(", "),
        spec.name
    );
    let width = spec.width();
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    let mut tally = Tally::default();
    let mut values: Vec<Value> = Vec::with_capacity(width);
    while let Some(row) = rows.next()? {
        report.rows_hashed += 1;
        values.clear();
        for i in 0..width {
            values.push(row.get(i)?);
        }
        let stored = row.get_ref(width)?;
        if stored.as_blob().ok() == Some(&content_hash(&values)[..]) {
            continue;
        }
        tally.found(|| {
            Ok(format!(
                "{} {}: content_hash does not match the row's values (changed outside orgledger?)",
                spec.name,
                key_label(spec, &values[..spec.key.len()])
            ))
        })?;
    }
    report.add(tally, spec.name);
    Ok(())
}

/// Runs `running` now, with when they started.
fn running(conn: &Connection) -> Result<Vec<(i64, String)>, MirrorError> {
    let mut stmt = conn.prepare("SELECT id, started_at FROM sync_runs WHERE status = 'running'")?;
    let rows = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// A run stays `running` only while its process holds the sync lock. `held` says
/// whether one does. A sync that ends between the read of the runs and that probe
/// leaves the lock free with its run no longer `running`, so the runs are read
/// again after it: only a run `running` before and after a free lock is dead.
fn dead_runs(
    conn: &Connection,
    held: impl FnOnce() -> Result<bool, MirrorError>,
    report: &mut CheckReport,
) -> Result<(), MirrorError> {
    let before = running(conn)?;
    if before.is_empty() {
        return Ok(());
    }
    match held() {
        Ok(true) => Ok(()),
        Ok(false) => {
            let after = running(conn)?;
            for (id, started) in before.into_iter().filter(|run| after.contains(run)) {
                report.findings.push(format!(
                    "sync_runs: run {id} (started {started}) is `running` but no process holds the sync lock: \
                     its process died; the next sync or `status` marks it aborted"
                ));
            }
            Ok(())
        }
        // A lock file that cannot be made (a read-only folder) leaves the question open.
        Err(e) => {
            tracing::warn!(error = %e, "cannot tell whether a `running` run is alive");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::ORGANIZATIONS;
    use crate::mirror::table::{Row, RunStamp, TableSql};

    fn org(name: &str) -> Row {
        let mut values = vec![Value::Integer(1), Value::Text(name.into())];
        values.resize(ORGANIZATIONS.width(), Value::Null);
        Row::new(values)
    }

    #[test]
    fn a_version_two_runs_saw_in_the_same_second_is_sound_and_a_running_run_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("m.db");
        let mut conn = crate::mirror::open_rw(&db).expect("open");
        let orgs = TableSql::new(&ORGANIZATIONS);
        // HTTP `Date` has whole seconds: two runs can observe the same instant.
        for (run_id, name) in [(1, "a"), (2, "b"), (3, "c")] {
            let stamp = RunStamp {
                run_id,
                observed_at: "2026-03-01T12:00:00.000Z".into(),
            };
            let tx = conn.transaction().expect("tx");
            orgs.upsert(&tx, &stamp, org(name)).expect("upsert");
            tx.commit().expect("commit");
        }
        let report = run(&conn, &db).expect("check");
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        assert_eq!(report.history_rows, 2);

        crate::mirror::runs::begin(&conn, "test").expect("a run");
        let report = run(&conn, &db).expect("check");
        assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
        assert!(report.findings[0].contains("is `running`"));
        let _lock = crate::mirror::lock::acquire(&db).expect("the run's process");
        assert!(run(&conn, &db).expect("check").findings.is_empty());
    }

    #[test]
    fn a_sync_that_ends_between_the_read_and_the_lock_probe_is_not_called_dead() {
        use crate::mirror::runs::{self, RunStatus, RunTotals};
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("m.db");
        let conn = crate::mirror::open_rw(&db).expect("open");
        let run_id = runs::begin(&conn, "test").expect("a run");
        let sync = crate::mirror::lock::acquire(&db).expect("the sync's lock");
        // The sync ends just before the probe: its run is marked, then its lock goes.
        let ends_then_probe = || {
            runs::finish(
                &conn,
                run_id,
                RunStatus::Succeeded,
                &RunTotals::default(),
                None,
            )?;
            drop(sync);
            crate::mirror::lock::held(&db)
        };
        let mut report = CheckReport::default();
        dead_runs(&conn, ends_then_probe, &mut report).expect("check");
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        // And the probe left the lock free for the next sync.
        assert!(!crate::mirror::lock::held(&db).expect("probe"));
        let _next = crate::mirror::lock::acquire(&db).expect("a sync starts");
    }
}
