//! The generic versioned upsert every mirrored table goes through.
//!
//! A row is a list of SQL values in [`TableSpec`] order. Its content hash decides what
//! happens: unknown key → insert; same hash → nothing is written (so a re-sync of an
//! unchanged world rewrites no row); different hash → the old version is copied to
//! `<table>_history` with `valid_to` = this run's time, then the row is overwritten.
//! A row written twice in the same run is overwritten in place: one run is one
//! instant, and a zero-length version in history would be noise.

use crate::mirror::moves::{self, MovesSql};
use crate::mirror::row_stmt::RowStatement;
use crate::mirror::spec::TableSpec;
use rusqlite::types::Value;
use rusqlite::{Connection, Statement, Transaction, params_from_iter};
use std::collections::{HashMap, HashSet};

/// The run a write belongs to: its id and the server time it observed.
#[derive(Debug, Clone)]
pub struct RunStamp {
    /// `sync_runs.id`.
    pub run_id: i64,
    /// Observation time as mirror timestamp text; becomes `valid_from`/`valid_to`/`removed_at`.
    pub observed_at: String,
}

/// Row counts of a sync, summed over tables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    /// New keys.
    pub inserted: u64,
    /// Keys whose content changed (a history row was written).
    pub updated: u64,
    /// Keys seen again with identical content (nothing written).
    pub unchanged: u64,
    /// Keys marked removed.
    pub removed: u64,
}

impl WriteStats {
    /// Adds another set of counts to this one.
    pub fn add(&mut self, other: WriteStats) {
        self.inserted += other.inserted;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.removed += other.removed;
    }
}

/// What the mirror holds for a key before the write.
struct Existing {
    hash: Vec<u8>,
    run_id: i64,
    removed: bool,
}

/// Text form of a row's key, for sets and maps (keys are integers or text).
pub fn key_text(values: &[Value]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(16 * values.len());
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push('\u{1f}');
        }
        // Writing into a String cannot fail.
        let _ = match value {
            Value::Integer(n) => write!(out, "{n}"),
            Value::Text(s) => out.write_str(s),
            Value::Real(f) => write!(out, "{f}"),
            Value::Null => out.write_char('\u{0}'),
            Value::Blob(b) => write!(out, "{b:?}"),
        };
    }
    out
}

/// Keys as [`TableSql::remove_unseen`] asks for them: whether a run saw a key.
pub trait SeenKeys {
    /// Whether `key` was seen.
    fn saw(&self, key: &[Value]) -> bool;
}

impl SeenKeys for HashSet<String> {
    fn saw(&self, key: &[Value]) -> bool {
        self.contains(&key_text(key))
    }
}

/// One row of a mirrored table: values in spec order and their digest.
///
/// The digest is computed where the row is built (on the fetch tasks, in
/// parallel) so the single writer thread only compares it.
#[derive(Debug, Clone)]
pub struct Row {
    /// Values in [`TableSpec`] order.
    pub values: Vec<Value>,
    /// [`content_hash`] of `values`.
    pub hash: [u8; 16],
}

impl Row {
    /// Wraps values and computes their digest.
    pub fn new(values: Vec<Value>) -> Self {
        let hash = content_hash(&values);
        Row { values, hash }
    }
}

thread_local! {
    /// Serialized row for [`content_hash`], reused across rows.
    static HASH_INPUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A 16-byte digest of a row's values, type-tagged so `1` and `"1"` differ.
///
/// XXH3-128, not a cryptographic hash: it only answers "did this row change?"
/// between two copies of data from the same service, where nobody gains from a
/// collision, and it is an order of magnitude faster than SHA-256 on the million
/// rows of a large sync. The values are laid out in one buffer and hashed in one
/// call: XXH3's streaming interface costs more per value than the hashing itself.
pub fn content_hash(values: &[Value]) -> [u8; 16] {
    HASH_INPUT.with_borrow_mut(|buf| {
        buf.clear();
        for value in values {
            match value {
                Value::Null => buf.push(0),
                Value::Integer(n) => {
                    buf.push(1);
                    buf.extend_from_slice(&n.to_le_bytes());
                }
                Value::Real(f) => {
                    buf.push(2);
                    buf.extend_from_slice(&f.to_bits().to_le_bytes());
                }
                Value::Text(s) => {
                    buf.push(3);
                    buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
                    buf.extend_from_slice(s.as_bytes());
                }
                Value::Blob(b) => {
                    buf.push(4);
                    buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    buf.extend_from_slice(b);
                }
            }
        }
        xxhash_rust::xxh3::xxh3_128(buf).to_le_bytes()
    })
}

/// Rows one multi-row INSERT writes when a scope is seen for the first time (every
/// scope of a first sync). One execution per row costs SQLite a statement start,
/// halt and reset each time; for the million daily-metrics rows of a large sync
/// that was a tenth of the writer's time.
const INSERT_CHUNK: usize = 32;

/// Parameter number of the run id in an insert or update of `rows` rows of a table
/// `width` columns wide: each row binds its values and digest, then the run id and
/// time follow once.
fn stamp_param(width: usize, rows: usize) -> usize {
    rows * (width + 1) + 1
}

/// SQL statements of one table, built once from its spec.
#[derive(Debug)]
pub struct TableSql {
    spec: &'static TableSpec,
    select_one: String,
    select_scope: String,
    select_live_keys: String,
    insert: String,
    insert_chunk: String,
    archive: String,
    update: String,
    mark_removed: String,
    moves: Option<MovesSql>,
}

impl TableSql {
    /// Builds the statements for a table.
    pub fn new(spec: &'static TableSpec) -> Self {
        let name = spec.name;
        let cols: Vec<String> = spec
            .all_columns()
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let cols = cols.join(", ");
        let n = spec.width();
        let key_where = where_clause(spec.key.iter().map(|c| c.name), 1);
        let key_list: Vec<&str> = spec.key.iter().map(|c| c.name).collect();
        let key_list = key_list.join(", ");
        let placeholders: Vec<String> = (1..=n + 3).map(|i| format!("?{i}")).collect();
        // Row r takes parameters r(n+1)+1 ..= r(n+1)+n+1 (values, digest); the run
        // stamp comes last and is shared.
        let stamp = stamp_param(n, INSERT_CHUNK);
        let tuples: Vec<String> = (0..INSERT_CHUNK)
            .map(|r| {
                let cells: Vec<String> = (1..=n + 1)
                    .map(|i| format!("?{}", r * (n + 1) + i))
                    .collect();
                format!("({}, ?{stamp}, ?{})", cells.join(", "), stamp + 1)
            })
            .collect();
        let sets: Vec<String> = spec
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("\"{}\" = ?{}", c.name, spec.key.len() + i + 1))
            .collect();
        let sets = if sets.is_empty() {
            String::new()
        } else {
            format!("{}, ", sets.join(", "))
        };
        TableSql {
            spec,
            select_one: format!(
                "SELECT content_hash, run_id, removed_at IS NOT NULL FROM {name} WHERE {key_where}"
            ),
            select_scope: format!(
                "SELECT {key_list}, content_hash, run_id, removed_at IS NOT NULL FROM {name} WHERE {}",
                where_clause(spec.scope.iter().copied(), 1)
            ),
            select_live_keys: format!("SELECT {key_list} FROM {name} WHERE removed_at IS NULL"),
            insert: format!(
                "INSERT INTO {name} ({cols}, content_hash, run_id, valid_from) VALUES ({})",
                placeholders.join(", ")
            ),
            // OR FAIL, not the default ABORT: a multi-row statement that may abort
            // must be able to undo its own rows, so SQLite copies every page it
            // touches to a statement journal first (a temporary file; 5 % of a
            // large sync's CPU). A failing row fails the whole document's
            // transaction anyway, which rolls back what the statement wrote.
            insert_chunk: format!(
                "INSERT OR FAIL INTO {name} ({cols}, content_hash, run_id, valid_from) VALUES {}",
                tuples.join(", ")
            ),
            archive: format!(
                "INSERT INTO {name}_history ({cols}, content_hash, valid_from, run_id, removed_at, \
                 removed_run, valid_to) SELECT {cols}, content_hash, valid_from, run_id, removed_at, \
                 removed_run, ?{} FROM {name} WHERE {key_where}",
                spec.key.len() + 1
            ),
            update: format!(
                "UPDATE {name} SET {sets}content_hash = ?{}, run_id = ?{}, valid_from = ?{}, \
                 removed_at = NULL, removed_run = NULL WHERE {key_where}",
                n + 1,
                n + 2,
                n + 3
            ),
            mark_removed: format!(
                "UPDATE {name} SET removed_at = ?{}, removed_run = ?{} WHERE {key_where}",
                spec.key.len() + 1,
                spec.key.len() + 2
            ),
            moves: MovesSql::new(spec),
        }
    }

    /// The `TableSpec` these statements were built from.
    pub fn spec(&self) -> &'static TableSpec {
        self.spec
    }

    /// Prepares this table's per-row statements on `conn` for the run `stamp`.
    pub fn writer<'c>(
        &'c self,
        conn: &'c Connection,
        stamp: &'c RunStamp,
    ) -> rusqlite::Result<TableWriter<'c>> {
        // The run's id and time are the same for every row of the run: bound once
        // here (SQLite keeps bindings across executions), not per row. `rows` is
        // how many rows the statement writes; the stamp follows their parameters.
        let stamped = |sql: &str, rows: usize| -> rusqlite::Result<RowStatement<'c>> {
            let first = stamp_param(self.spec.width(), rows);
            RowStatement::prepare(conn, sql, first, stamp.run_id, &stamp.observed_at)
        };
        Ok(TableWriter {
            sql: self,
            conn,
            stamp,
            select_one: conn.prepare(&self.select_one)?,
            // Root tables have no scope, and no valid scope query.
            select_scope: (!self.spec.scope.is_empty())
                .then(|| conn.prepare(&self.select_scope))
                .transpose()?,
            insert: stamped(&self.insert, 1)?,
            insert_chunk: stamped(&self.insert_chunk, INSERT_CHUNK)?,
            update: stamped(&self.update, 1)?,
        })
    }

    /// Upserts one row of a root table (no scope). See [`TableWriter::upsert`].
    pub fn upsert(
        &self,
        tx: &Transaction,
        stamp: &RunStamp,
        row: Row,
    ) -> rusqlite::Result<WriteStats> {
        self.writer(tx, stamp)?.upsert(row)
    }

    /// Replaces the rows of one scope. See [`TableWriter::replace_scope`].
    pub fn replace_scope(
        &self,
        tx: &Transaction,
        stamp: &RunStamp,
        scope: &[Value],
        rows: Vec<Row>,
    ) -> rusqlite::Result<WriteStats> {
        self.writer(tx, stamp)?.replace_scope(scope, rows)
    }

    /// Marks removed every live row whose key is not in `seen` (root tables, at the
    /// end of a complete sync), and the live rows of its children
    /// ([`crate::mirror::spec::children`]). Returns the rows marked, children included.
    pub fn remove_unseen(
        &self,
        tx: &Transaction,
        stamp: &RunStamp,
        seen: &HashSet<String>,
    ) -> rusqlite::Result<u64> {
        self.remove_unseen_keys(tx, stamp, seen)
    }

    /// [`TableSql::remove_unseen`] over any set of seen keys (a sync keeps digests).
    pub fn remove_unseen_keys(
        &self,
        tx: &Transaction,
        stamp: &RunStamp,
        seen: &impl SeenKeys,
    ) -> rusqlite::Result<u64> {
        let k = self.spec.key.len();
        let gone: Vec<Vec<Value>> = {
            let mut stmt = tx.prepare_cached(&self.select_live_keys)?;
            let mut rows = stmt.query([])?;
            let mut gone = Vec::new();
            while let Some(row) = rows.next()? {
                let key: Vec<Value> = (0..k).map(|i| row.get(i)).collect::<Result<_, _>>()?;
                if !seen.saw(&key) {
                    gone.push(key);
                }
            }
            gone
        };
        let mut removed = gone.len() as u64;
        for key in &gone {
            self.mark_removed(tx, stamp, key)?;
            for child in crate::mirror::spec::children(self.spec) {
                removed += remove_children(tx, stamp, child, key)?;
            }
        }
        Ok(removed)
    }

    fn mark_removed(
        &self,
        conn: &Connection,
        stamp: &RunStamp,
        key: &[Value],
    ) -> rusqlite::Result<()> {
        let mut params = key.to_vec();
        params.push(Value::Text(stamp.observed_at.clone()));
        params.push(Value::Integer(stamp.run_id));
        let mut stmt = conn.prepare_cached(&self.mark_removed)?;
        stmt.execute(params_from_iter(params.iter()))?;
        Ok(())
    }
}

/// One table's per-row statements, prepared once on a connection.
///
/// The sync's writer keeps one per table for the whole run: going through
/// rusqlite's statement cache hashes the full SQL text (a kilobyte for the wide
/// tables) on every fetch and every return, for each of a million rows. The rare
/// statements (archive a version, mark removed) still go through the cache.
pub struct TableWriter<'c> {
    sql: &'c TableSql,
    conn: &'c Connection,
    stamp: &'c RunStamp,
    select_one: Statement<'c>,
    select_scope: Option<Statement<'c>>,
    insert: RowStatement<'c>,
    insert_chunk: RowStatement<'c>,
    update: RowStatement<'c>,
}

impl TableWriter<'_> {
    fn existing(&mut self, key: &[Value]) -> rusqlite::Result<Option<Existing>> {
        let mut rows = self.select_one.query(params_from_iter(key.iter()))?;
        match rows.next()? {
            Some(row) => Ok(Some(Existing {
                hash: row.get(0)?,
                run_id: row.get(1)?,
                removed: row.get(2)?,
            })),
            None => Ok(None),
        }
    }

    fn scope_rows(
        &mut self,
        scope: &[Value],
    ) -> rusqlite::Result<HashMap<String, (Vec<Value>, Existing)>> {
        let k = self.sql.spec.key.len();
        let Some(select_scope) = self.select_scope.as_mut() else {
            return Err(rusqlite::Error::InvalidParameterCount(scope.len(), 0));
        };
        let mut rows = select_scope.query(params_from_iter(scope.iter()))?;
        let mut out = HashMap::new();
        while let Some(row) = rows.next()? {
            let key: Vec<Value> = (0..k).map(|i| row.get(i)).collect::<Result<_, _>>()?;
            let existing = Existing {
                hash: row.get(k)?,
                run_id: row.get(k + 1)?,
                removed: row.get(k + 2)?,
            };
            out.insert(key_text(&key), (key, existing));
        }
        Ok(out)
    }

    /// Writes one row against what the mirror holds for its key.
    fn apply(&mut self, row: &Row, existing: Option<Existing>) -> rusqlite::Result<WriteStats> {
        let mut stats = WriteStats::default();
        match existing {
            Some(old) if old.hash == row.hash && !old.removed => {
                stats.unchanged = 1;
                return Ok(stats);
            }
            Some(old) => {
                if old.run_id != self.stamp.run_id {
                    self.archive(row, &old)?;
                }
                self.update.run(std::slice::from_ref(row))?;
                stats.updated = 1;
            }
            None => {
                self.insert.run(std::slice::from_ref(row))?;
                stats.inserted = 1;
            }
        }
        Ok(stats)
    }

    /// Archives the version `row` replaces: narrow when only its moving columns
    /// change (`crate::mirror::moves`), whole otherwise.
    fn archive(&self, row: &Row, old: &Existing) -> rusqlite::Result<()> {
        let key = &row.values[..self.sql.spec.key.len()];
        let mut params = key.to_vec();
        params.push(Value::Text(self.stamp.observed_at.clone()));
        let run = |sql: &str| -> rusqlite::Result<usize> {
            self.conn
                .prepare_cached(sql)?
                .execute(params_from_iter(params.iter()))
        };
        let moves = self.sql.moves.as_ref();
        if let Some(moves) = moves
            && !old.removed
            && self.steady_unchanged(moves, row)?
        {
            run(&moves.archive)?;
            return Ok(());
        }
        run(&self.sql.archive)?;
        if let Some(moves) = moves {
            let mut link = vec![Value::Integer(self.conn.last_insert_rowid())];
            link.extend_from_slice(key);
            self.conn
                .prepare_cached(&moves.link)?
                .execute(params_from_iter(link.iter()))?;
        }
        Ok(())
    }

    /// Whether the current row's steady columns equal `row`'s.
    fn steady_unchanged(&self, moves: &MovesSql, row: &Row) -> rusqlite::Result<bool> {
        let key = &row.values[..self.sql.spec.key.len()];
        let mut select = self.conn.prepare_cached(&moves.select_steady)?;
        let mut rows = select.query(params_from_iter(key.iter()))?;
        let Some(current) = rows.next()? else {
            return Ok(false);
        };
        for (i, at) in moves.steady_at.iter().enumerate() {
            if !moves::same(&current.get::<_, Value>(i)?, &row.values[*at]) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Upserts one row of a root table (no scope).
    pub fn upsert(&mut self, row: Row) -> rusqlite::Result<WriteStats> {
        let existing = self.existing(&row.values[..self.sql.spec.key.len()])?;
        self.apply(&row, existing)
    }

    /// Replaces the rows of one scope (the children of one parent document) with
    /// `rows`: new and changed rows are written, and, for removable tables, rows of
    /// the scope missing from `rows` are marked removed.
    pub fn replace_scope(
        &mut self,
        scope: &[Value],
        rows: Vec<Row>,
    ) -> rusqlite::Result<WriteStats> {
        let mut current = self.scope_rows(scope)?;
        if current.is_empty() {
            let stats = self.insert_all(&rows)?;
            self.keep_derived(scope, &rows, true, stats)?;
            return Ok(stats);
        }
        let mut stats = WriteStats::default();
        for row in &rows {
            let existing = current
                .remove(&key_text(&row.values[..self.sql.spec.key.len()]))
                .map(|(_, e)| e);
            stats.add(self.apply(row, existing)?);
        }
        if self.sql.spec.removable {
            for (key, existing) in current.into_values() {
                if !existing.removed {
                    self.sql.mark_removed(self.conn, self.stamp, &key)?;
                    stats.removed += 1;
                }
            }
        }
        self.keep_derived(scope, &rows, false, stats)?;
        Ok(stats)
    }

    /// Brings the tables derived from this one's rows ([`TableSpec::derived`]) in
    /// step with a scope just written with `rows`; `new_scope`: the scope held no
    /// rows before.
    fn keep_derived(
        &self,
        scope: &[Value],
        rows: &[Row],
        new_scope: bool,
        stats: WriteStats,
    ) -> rusqlite::Result<()> {
        let changed = stats.inserted + stats.updated + stats.removed > 0;
        if self.sql.spec.derived.is_empty() || !changed {
            return Ok(());
        }
        let rows: Vec<&[Value]> = rows.iter().map(|r| r.values.as_slice()).collect();
        for derived in self.sql.spec.derived {
            (derived.keep)(self.conn, scope, &rows, new_scope)?;
        }
        Ok(())
    }

    /// Inserts the rows of a scope that holds none yet, [`INSERT_CHUNK`] rows per
    /// statement. Their keys are distinct: `sync::rows::DocRows` keeps one row per key.
    fn insert_all(&mut self, rows: &[Row]) -> rusqlite::Result<WriteStats> {
        let mut chunks = rows.chunks_exact(INSERT_CHUNK);
        for chunk in &mut chunks {
            self.insert_chunk.run(chunk)?;
        }
        for row in chunks.remainder() {
            self.insert.run(std::slice::from_ref(row))?;
        }
        Ok(WriteStats {
            inserted: rows.len() as u64,
            ..WriteStats::default()
        })
    }
}

/// Marks removed the live rows of `child` whose scope is `scope` (a removed
/// parent's key). Their history stays: only `removed_at`/`removed_run` are set, as
/// for any removal.
fn remove_children(
    conn: &Connection,
    stamp: &RunStamp,
    child: &TableSpec,
    scope: &[Value],
) -> rusqlite::Result<u64> {
    let n = scope.len();
    let sql = format!(
        "UPDATE {} SET removed_at = ?{}, removed_run = ?{} WHERE {} AND removed_at IS NULL",
        child.name,
        n + 1,
        n + 2,
        where_clause(child.scope.iter().copied(), 1)
    );
    let mut params = scope.to_vec();
    params.push(Value::Text(stamp.observed_at.clone()));
    params.push(Value::Integer(stamp.run_id));
    let changed = conn
        .prepare_cached(&sql)?
        .execute(params_from_iter(params.iter()))?;
    Ok(changed as u64)
}

/// `a = ?i AND b = ?i+1 ...`
fn where_clause<'a>(cols: impl Iterator<Item = &'a str>, first: usize) -> String {
    let parts: Vec<String> = cols
        .enumerate()
        .map(|(i, c)| format!("\"{c}\" = ?{}", first + i))
        .collect();
    parts.join(" AND ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::{DATASETS, ORGANIZATIONS};

    fn stamp(run_id: i64, day: u32) -> RunStamp {
        RunStamp {
            run_id,
            observed_at: format!("2026-03-{day:02}T12:00:00.000Z"),
        }
    }

    /// Records sync runs 1..=`days`, run N observed on March N as [`stamp`] says, as a
    /// sync does before it writes: the as-of views rely on the runs' times.
    fn record_runs(conn: &Connection, days: u32) {
        for day in 1..=days {
            let id = crate::mirror::runs::begin(conn, "test").expect("begin");
            crate::mirror::runs::set_observed(conn, id, &stamp(id, day).observed_at)
                .expect("observed");
        }
    }

    fn org_row(id: i64, name: &str) -> Vec<Value> {
        let mut row = vec![Value::Integer(id), Value::Text(name.into())];
        row.resize(ORGANIZATIONS.width(), Value::Null);
        row
    }

    fn dataset_row(org: i64, name: &str, size: i64) -> Vec<Value> {
        let mut row = vec![
            Value::Integer(org),
            Value::Text(name.into()),
            Value::Null,
            Value::Integer(size),
        ];
        row.resize(DATASETS.width(), Value::Null);
        row
    }

    fn mirror() -> (tempfile::TempDir, rusqlite::Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = crate::mirror::open_rw(&dir.path().join("m.db")).expect("open");
        (dir, conn)
    }

    fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).expect(sql)
    }

    #[test]
    fn insert_unchanged_update_keeps_history() {
        let (_dir, mut conn) = mirror();
        let orgs = TableSql::new(&ORGANIZATIONS);
        let tx = conn.transaction().expect("tx");
        assert_eq!(
            orgs.upsert(&tx, &stamp(1, 1), Row::new(org_row(1, "Zoë AG")))
                .expect("insert")
                .inserted,
            1
        );
        // Written again in the same run with other content: overwritten, no history.
        assert_eq!(
            orgs.upsert(&tx, &stamp(1, 1), Row::new(org_row(1, "Zoë AG!")))
                .expect("same run")
                .updated,
            1
        );
        tx.commit().expect("commit");
        assert_eq!(
            count(&conn, "SELECT COUNT(*) FROM organizations_history"),
            0
        );

        let tx = conn.transaction().expect("tx");
        assert_eq!(
            orgs.upsert(&tx, &stamp(2, 2), Row::new(org_row(1, "Zoë AG!")))
                .expect("same")
                .unchanged,
            1
        );
        assert_eq!(
            orgs.upsert(&tx, &stamp(2, 2), Row::new(org_row(1, "Zoë GmbH")))
                .expect("change")
                .updated,
            1
        );
        tx.commit().expect("commit");
        let (name, from, to): (String, String, String) = conn
            .query_row(
                "SELECT name, valid_from, valid_to FROM organizations_history",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("one history row");
        assert_eq!(name, "Zoë AG!");
        assert_eq!(from, "2026-03-01T12:00:00.000Z");
        assert_eq!(to, "2026-03-02T12:00:00.000Z");

        // As of day 1 the old name, as of day 2 the new one.
        record_runs(&conn, 2);
        let day = |d: u32| chrono::NaiveDate::from_ymd_opt(2026, 3, d).expect("date");
        crate::mirror::asof::install(&conn, day(1)).expect("views");
        let old: String = conn
            .query_row("SELECT name FROM organizations", [], |r| r.get(0))
            .expect("as of day 1");
        assert_eq!(old, "Zoë AG!");
        crate::mirror::asof::install(&conn, day(2)).expect("views");
        let new: String = conn
            .query_row("SELECT name FROM organizations", [], |r| r.get(0))
            .expect("as of day 2");
        assert_eq!(new, "Zoë GmbH");
        assert_eq!(
            count(&conn, "SELECT COUNT(*) FROM organizations_versions"),
            2
        );
    }

    #[test]
    fn scopes_mark_missing_children_removed_and_bring_them_back() {
        let (_dir, mut conn) = mirror();
        let datasets = TableSql::new(&DATASETS);
        let scope = [Value::Integer(1)];
        let tx = conn.transaction().expect("tx");
        let rows = vec![
            Row::new(dataset_row(1, "a", 10)),
            Row::new(dataset_row(1, "b", 20)),
        ];
        assert_eq!(
            datasets
                .replace_scope(&tx, &stamp(1, 1), &scope, rows)
                .expect("first")
                .inserted,
            2
        );
        // Another organization's datasets are another scope and stay untouched.
        datasets
            .replace_scope(
                &tx,
                &stamp(1, 1),
                &[Value::Integer(2)],
                vec![Row::new(dataset_row(2, "a", 5))],
            )
            .expect("other scope");
        tx.commit().expect("commit");

        let tx = conn.transaction().expect("tx");
        let stats = datasets
            .replace_scope(
                &tx,
                &stamp(2, 2),
                &scope,
                vec![Row::new(dataset_row(1, "a", 10))],
            )
            .expect("second");
        assert_eq!((stats.unchanged, stats.removed), (1, 1));
        tx.commit().expect("commit");
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM datasets WHERE removed_run = 2 AND dataset = 'b'"
            ),
            1
        );
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM datasets WHERE removed_at IS NULL"
            ),
            2
        );

        let tx = conn.transaction().expect("tx");
        let rows = vec![
            Row::new(dataset_row(1, "a", 10)),
            Row::new(dataset_row(1, "b", 20)),
        ];
        let stats = datasets
            .replace_scope(&tx, &stamp(3, 3), &scope, rows)
            .expect("back");
        assert_eq!(
            stats.updated, 1,
            "a removed row that reappears is a new version"
        );
        tx.commit().expect("commit");
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM datasets WHERE removed_at IS NULL"
            ),
            3
        );
        record_runs(&conn, 3);
        crate::mirror::asof::install(
            &conn,
            chrono::NaiveDate::from_ymd_opt(2026, 3, 2).expect("date"),
        )
        .expect("views");
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM datasets WHERE organization_id = 1"
            ),
            1,
            "b was gone on day 2"
        );
    }

    #[test]
    fn a_new_scope_is_written_in_chunks_like_row_by_row() {
        let (_dir, mut conn) = mirror();
        let datasets = TableSql::new(&DATASETS);
        // Two full chunks and a remainder.
        let rows = || -> Vec<Row> {
            (0..2 * INSERT_CHUNK as i64 + 6)
                .map(|i| Row::new(dataset_row(1, &format!("d{i:03}"), i * 10)))
                .collect()
        };
        let tx = conn.transaction().expect("tx");
        let stats = datasets
            .replace_scope(&tx, &stamp(4, 4), &[Value::Integer(1)], rows())
            .expect("insert");
        assert_eq!(stats.inserted, 2 * INSERT_CHUNK as u64 + 6);
        tx.commit().expect("commit");
        let (n, sum, stamps): (i64, i64, i64) = conn
            .query_row(
                "SELECT COUNT(*), SUM(total_file_size), \
                 SUM(run_id = 4 AND valid_from = '2026-03-04T12:00:00.000Z') FROM datasets",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("stored");
        let expected = 2 * INSERT_CHUNK as i64 + 6;
        assert_eq!((n, stamps), (expected, expected));
        assert_eq!(sum, (0..expected).map(|i| i * 10).sum::<i64>());
        let last: (String, i64) = conn
            .query_row(
                "SELECT dataset, total_file_size FROM datasets ORDER BY dataset DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("last row");
        assert_eq!(last, (format!("d{:03}", expected - 1), (expected - 1) * 10));
        // The stored digests are the rows' own: the next run finds every row unchanged.
        let tx = conn.transaction().expect("tx");
        let again = datasets
            .replace_scope(&tx, &stamp(5, 5), &[Value::Integer(1)], rows())
            .expect("again");
        assert_eq!(again.unchanged, expected as u64);
        assert_eq!(again.inserted + again.updated + again.removed, 0);
    }

    #[test]
    fn remove_unseen_spares_what_was_seen() {
        let (_dir, mut conn) = mirror();
        let orgs = TableSql::new(&ORGANIZATIONS);
        let tx = conn.transaction().expect("tx");
        for id in 1..=3 {
            orgs.upsert(&tx, &stamp(1, 1), Row::new(org_row(id, "x")))
                .expect("insert");
        }
        let seen: HashSet<String> = ["1", "3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            orgs.remove_unseen(&tx, &stamp(2, 2), &seen)
                .expect("remove"),
            1
        );
        assert_eq!(
            orgs.remove_unseen(&tx, &stamp(2, 2), &seen).expect("again"),
            0,
            "idempotent"
        );
        tx.commit().expect("commit");
        assert_eq!(
            count(
                &conn,
                "SELECT id FROM organizations WHERE removed_at IS NOT NULL"
            ),
            2
        );
    }

    #[test]
    fn removing_a_user_removes_their_trials_and_organization_summaries() {
        use crate::mirror::spec::{TRIALS, USER_ORGANIZATIONS, USERS};
        let (_dir, mut conn) = mirror();
        let row = |spec: &TableSpec, head: Vec<Value>| {
            let mut row = head;
            row.resize(spec.width(), Value::Null);
            Row::new(row)
        };
        let int = Value::Integer;
        let (users, trials, summaries) = (
            TableSql::new(&USERS),
            TableSql::new(&TRIALS),
            TableSql::new(&USER_ORGANIZATIONS),
        );
        let tx = conn.transaction().expect("tx");
        for user in [1, 2] {
            users
                .upsert(&tx, &stamp(1, 1), row(&USERS, vec![int(user)]))
                .expect("user");
            // Trial 10 + user, and trial 20 for user 1 only; one summary each.
            let mut user_trials = vec![row(&TRIALS, vec![int(10 + user), int(user)])];
            if user == 1 {
                user_trials.push(row(&TRIALS, vec![int(20), int(user)]));
            }
            trials
                .replace_scope(&tx, &stamp(1, 1), &[int(user)], user_trials)
                .expect("trials");
            summaries
                .replace_scope(
                    &tx,
                    &stamp(1, 1),
                    &[int(user)],
                    vec![row(&USER_ORGANIZATIONS, vec![int(user), int(5)])],
                )
                .expect("summaries");
        }
        tx.commit().expect("commit");

        let tx = conn.transaction().expect("tx");
        let seen: HashSet<String> = ["2".to_string()].into();
        // User 1, its two trials and its one summary.
        assert_eq!(
            users
                .remove_unseen(&tx, &stamp(2, 2), &seen)
                .expect("remove"),
            4
        );
        tx.commit().expect("commit");
        let marked = |sql: &str| {
            count(
                &conn,
                &format!("{sql} AND removed_run = 2 AND removed_at = '2026-03-02T12:00:00.000Z'"),
            )
        };
        // Trials 11 and 20 (user 1): 11 + 20 = 31.
        assert_eq!(marked("SELECT SUM(id) FROM trials WHERE 1"), 31);
        assert_eq!(
            marked("SELECT COUNT(*) FROM user_organizations WHERE user_id = 1"),
            1
        );
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM trials WHERE user_id = 2 AND removed_at IS NULL"
            ),
            1,
            "user 2 keeps its trial"
        );
    }

    #[test]
    fn hash_matches_the_streamed_digest_of_earlier_mirrors() {
        // Mirrors written before the one-shot hash hold digests streamed value by
        // value; a different digest would rewrite every row on the next sync.
        let values = [
            Value::Null,
            Value::Integer(-7),
            Value::Real(2.5),
            Value::Text("Zoë".into()),
            Value::Blob(vec![1, 2, 3]),
        ];
        let mut streamed = xxhash_rust::xxh3::Xxh3::new();
        for part in [
            &[0u8][..],
            &[1],
            &(-7i64).to_le_bytes(),
            &[2],
            &2.5f64.to_bits().to_le_bytes(),
            &[3],
            &4u64.to_le_bytes(),
            "Zoë".as_bytes(),
            &[4],
            &3u64.to_le_bytes(),
            &[1, 2, 3],
        ] {
            streamed.update(part);
        }
        assert_eq!(content_hash(&values), streamed.digest128().to_le_bytes());
    }

    #[test]
    fn hash_is_type_tagged() {
        assert_ne!(
            content_hash(&[Value::Integer(1)]),
            content_hash(&[Value::Text("1".into())])
        );
        assert_ne!(
            content_hash(&[Value::Null]),
            content_hash(&[Value::Text(String::new())])
        );
        assert_eq!(
            content_hash(&[Value::Real(1.5)]),
            content_hash(&[Value::Real(1.5)])
        );
    }
}
