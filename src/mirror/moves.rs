//! History that grows by what changed: versions that differ from the next one only
//! in a table's moving columns ([`TableSpec::moving`]: usage figures, last-seen
//! times) are archived narrow.
//!
//! A project's information row is 2 kB wide, and its compute time used moves every
//! day; archiving the whole row each day made `project_info_history` most of a
//! year's growth. So when a sync replaces a version whose steady columns (every
//! data column that is not moving) equal the new version's, the old version goes to
//! `<table>_moves` as its key, its moving columns and its validity. Its steady
//! columns are those of the next whole version of the key (nothing steady changed
//! in between): the current row while the key's steady columns stay, or the
//! `_history` row archived when they change, which `wide_id` then names.
//!
//! Readers never see the split: [`archived_sql`] gives the archived versions whole,
//! the `_history` rows and the ones the `_moves` rows stand for, and every reader of
//! history (the as-of views, `changes`, `check`) goes through it.

use crate::mirror::spec::TableSpec;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

/// A table's data columns that are not moving, in spec order.
pub fn steady<'a>(spec: &'a TableSpec) -> impl Iterator<Item = &'a str> + 'a {
    spec.columns
        .iter()
        .map(|c| c.name)
        .filter(|name| !spec.moving.contains(name))
}

/// A table's moving columns in spec order (the order of the `_moves` table).
fn moving<'a>(spec: &'a TableSpec) -> impl Iterator<Item = &'a str> + 'a {
    spec.columns
        .iter()
        .map(|c| c.name)
        .filter(|name| spec.moving.contains(name))
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    names.map(|n| format!("\"{n}\"")).collect()
}

fn key_names(spec: &TableSpec) -> impl Iterator<Item = &str> {
    spec.key.iter().map(|c| c.name)
}

/// `a.k1 = b.k1 AND a.k2 = b.k2 ...` over the key.
fn key_join(spec: &TableSpec, a: &str, b: &str) -> String {
    key_names(spec)
        .map(|k| format!("{a}.\"{k}\" = {b}.\"{k}\""))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Equality of two values as the content hash sees it: same type, same value,
/// reals by their bits (so `0.0` and `-0.0` differ, as their hashes do).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The writer's statements for a table with moving columns.
#[derive(Debug)]
pub struct MovesSql {
    /// The current row's steady columns, by key (`?1..`).
    pub select_steady: String,
    /// Where each of those columns is in a row's values.
    pub steady_at: Vec<usize>,
    /// Archives the current row's moving columns, by key; `?k+1` is `valid_to`.
    pub archive: String,
    /// Points the key's unlinked moves at the `_history` row just archived:
    /// `?1` is its `history_id`, the key follows.
    pub link: String,
}

impl MovesSql {
    /// The statements for `spec`, None when it has no moving columns.
    pub fn new(spec: &TableSpec) -> Option<Self> {
        if spec.moving.is_empty() {
            return None;
        }
        let name = spec.name;
        let k = spec.key.len();
        let key_where = |first: usize| {
            key_names(spec)
                .enumerate()
                .map(|(i, c)| format!("\"{c}\" = ?{}", first + i))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        let kept: Vec<String> = quoted(key_names(spec).chain(moving(spec)));
        let kept = kept.join(", ");
        Some(MovesSql {
            select_steady: format!(
                "SELECT {} FROM {name} WHERE {}",
                quoted(steady(spec)).join(", "),
                key_where(1)
            ),
            steady_at: steady(spec)
                .filter_map(|name| spec.index_of(name))
                .collect(),
            archive: format!(
                "INSERT INTO {name}_moves ({kept}, valid_from, valid_to, run_id) \
                 SELECT {kept}, valid_from, ?{}, run_id FROM {name} WHERE {}",
                k + 1,
                key_where(1)
            ),
            link: format!(
                "UPDATE {name}_moves SET wide_id = ?1 WHERE {} AND wide_id IS NULL",
                key_where(2)
            ),
        })
    }
}

/// Every archived version of `spec`'s rows whole: each with the table's columns
/// (key and data, in spec order), then `valid_from`, `valid_to`, `run_id`,
/// `removed_at` and `removed_run`. `filter` is a condition on `valid_from` and
/// `valid_to` that selects which versions (it is applied before the narrow ones are
/// joined to their steady columns, so it can use nothing else).
pub fn archived_sql(spec: &TableSpec, filter: &str) -> String {
    let name = spec.name;
    let cols = quoted(spec.all_columns().map(|c| c.name)).join(", ");
    let history = format!(
        "SELECT {cols}, valid_from, valid_to, run_id, removed_at, removed_run \
         FROM main.{name}_history WHERE {filter}"
    );
    if spec.moving.is_empty() {
        return history;
    }
    // Key and moving columns from the narrow row, the rest from the whole version
    // that follows it. LEFT JOINs on a unique key: one row each way, and SQLite
    // leaves the join out for a reader that uses no steady column (EXPLAIN QUERY
    // PLAN of `SELECT project_id, compute_time_used_ms FROM project_info_archived`
    // scans the narrow table alone).
    let picked: Vec<String> = spec
        .all_columns()
        .map(|c| {
            let from = if spec.moving.contains(&c.name) || spec.key.iter().any(|k| k.name == c.name)
            {
                "m"
            } else {
                "w"
            };
            format!("{from}.\"{}\"", c.name)
        })
        .collect();
    let picked = picked.join(", ");
    let narrow = |whole: &str, on: &str, linked: &str| {
        format!(
            "SELECT {picked}, m.valid_from, m.valid_to, m.run_id, NULL AS removed_at, \
             NULL AS removed_run \
             FROM (SELECT * FROM main.{name}_moves WHERE wide_id IS {linked} AND ({filter})) m \
             LEFT JOIN main.{whole} w ON {on}"
        )
    };
    format!(
        "{history} UNION ALL {} UNION ALL {}",
        narrow(name, &key_join(spec, "w", "m"), "NULL"),
        narrow(
            &format!("{name}_history"),
            "w.history_id = m.wide_id",
            "NOT NULL"
        ),
    )
}

/// Installs a TEMP view `<table>_archived` per table on `conn`: [`archived_sql`],
/// every archived version whole, for SQL that walks history (`queries/changes.sql`).
pub fn install_archived(conn: &Connection) -> rusqlite::Result<()> {
    let mut sql = String::new();
    for spec in crate::mirror::spec::TABLES {
        sql.push_str(&format!(
            "CREATE TEMP VIEW IF NOT EXISTS {}_archived AS {};\n",
            spec.name,
            archived_sql(spec, "1")
        ));
    }
    conn.execute_batch(&sql)
}

/// A scalar SQL expression: how many archived versions `spec`'s rows have.
pub fn archived_count_sql(spec: &TableSpec) -> String {
    let name = spec.name;
    let history = format!("(SELECT COUNT(*) FROM main.{name}_history)");
    if spec.moving.is_empty() {
        return history;
    }
    format!("({history} + (SELECT COUNT(*) FROM main.{name}_moves))")
}

/// Bookkeeping columns of a `_history` row, none of them steady.
const HISTORY_BOOKKEEPING: &[&str] = &[
    "history_id",
    "content_hash",
    "valid_from",
    "run_id",
    "removed_at",
    "removed_run",
    "valid_to",
];

/// Moves the `_history` rows that differ from their successor only in moving
/// columns to `_moves` (migration 11, for mirrors written before it). The tables
/// and columns are read from the mirror, not from today's specs: a migration does
/// the same thing whichever build runs it. Each `<t>_moves` table names the moving
/// columns, and its `<t>_moves_key` index the key.
pub fn split_history(conn: &Connection) -> rusqlite::Result<()> {
    let tables: Vec<String> = conn
        .prepare("SELECT substr(name, 1, length(name) - 6) FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_moves' ESCAPE '\\' ORDER BY name")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for table in tables {
        SplitTable::read(conn, &table)?.split(conn)?;
    }
    Ok(())
}

/// One table's columns, as [`split_history`] reads them from the mirror.
struct SplitTable {
    name: String,
    key: Vec<String>,
    moving: Vec<String>,
    steady: Vec<String>,
}

impl SplitTable {
    fn read(conn: &Connection, name: &str) -> rusqlite::Result<Self> {
        let names = |sql: &str| -> rusqlite::Result<Vec<String>> {
            conn.prepare(sql)?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()
        };
        let key: Vec<String> = names(&format!(
            "SELECT name FROM pragma_index_info('{name}_moves_key') WHERE name <> 'wide_id' ORDER BY seqno"
        ))?;
        let narrow = names(&format!(
            "SELECT name FROM pragma_table_info('{name}_moves') ORDER BY cid"
        ))?;
        let moving: Vec<String> = narrow
            .into_iter()
            .filter(|c| !key.contains(c))
            .filter(|c| {
                !["moves_id", "valid_from", "valid_to", "run_id", "wide_id"].contains(&c.as_str())
            })
            .collect();
        let steady = names(&format!(
            "SELECT name FROM pragma_table_info('{name}_history') ORDER BY cid"
        ))?
        .into_iter()
        .filter(|c| !key.contains(c) && !moving.contains(c))
        .filter(|c| !HISTORY_BOOKKEEPING.contains(&c.as_str()))
        .collect();
        Ok(SplitTable {
            name: name.to_string(),
            key,
            moving,
            steady,
        })
    }

    /// Decides which history rows are moves, then moves them.
    fn split(&self, conn: &Connection) -> rusqlite::Result<()> {
        let moves = self.find_moves(conn)?;
        let name = &self.name;
        let kept = quoted(self.key.iter().chain(&self.moving).map(String::as_str)).join(", ");
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {name}_moves ({kept}, valid_from, valid_to, run_id, wide_id) \
             SELECT {kept}, valid_from, valid_to, run_id, ?2 FROM {name}_history WHERE history_id = ?1"
        ))?;
        let mut delete =
            conn.prepare(&format!("DELETE FROM {name}_history WHERE history_id = ?1"))?;
        for (id, wide) in moves {
            insert.execute(rusqlite::params![id, wide])?;
            delete.execute([id])?;
        }
        Ok(())
    }

    /// `(history_id, wide_id)` of every history row that is a move: not removed,
    /// followed at once by a version (history or current) with the same steady
    /// values. Its `wide_id` is the next whole history row of the key; None when
    /// the moves run up to the current row.
    fn find_moves(&self, conn: &Connection) -> rusqlite::Result<Vec<(i64, Option<i64>)>> {
        let name = &self.name;
        let key = quoted(self.key.iter().map(String::as_str)).join(", ");
        let steady = quoted(self.steady.iter().map(String::as_str)).join(", ");
        let k = self.key.len();
        let mut history = conn.prepare(&format!(
            "SELECT history_id, removed_at IS NULL AND removed_run IS NULL, valid_from, valid_to, {key}, {steady} \
             FROM {name}_history ORDER BY {key}, valid_from, history_id"
        ))?;
        let key_where: Vec<String> = self
            .key
            .iter()
            .enumerate()
            .map(|(i, c)| format!("\"{c}\" = ?{}", i + 1))
            .collect();
        let mut current = conn.prepare(&format!(
            "SELECT valid_from, {steady} FROM {name} WHERE {}",
            key_where.join(" AND ")
        ))?;
        let mut rows = history.query([])?;
        let mut group: Vec<Version> = Vec::new();
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let values: Vec<Value> = (4..4 + k + self.steady.len())
                .map(|i| row.get(i))
                .collect::<Result<_, _>>()?;
            let version = Version {
                id: row.get(0)?,
                live: row.get(1)?,
                from: row.get(2)?,
                to: row.get(3)?,
                steady: values[k..].to_vec(),
                key: values[..k].to_vec(),
            };
            if group.last().is_some_and(|last| last.key != version.key) {
                close_group(&mut current, &mut group, &mut found)?;
            }
            group.push(version);
        }
        if !group.is_empty() {
            close_group(&mut current, &mut group, &mut found)?;
        }
        Ok(found)
    }
}

/// One archived version, as [`SplitTable::find_moves`] reads it.
struct Version {
    id: i64,
    live: bool,
    from: String,
    to: String,
    key: Vec<Value>,
    steady: Vec<Value>,
}

/// Classifies one key's history rows (in order), with its current row as the last
/// successor, into `found`; empties `group`.
fn close_group(
    current: &mut rusqlite::Statement,
    group: &mut Vec<Version>,
    found: &mut Vec<(i64, Option<i64>)>,
) -> rusqlite::Result<()> {
    let key = group[0].key.clone();
    let now: Option<(String, Vec<Value>)> = current
        .query_row(rusqlite::params_from_iter(key.iter()), |row| {
            let n = row.as_ref().column_count();
            Ok((
                row.get(0)?,
                (1..n).map(|i| row.get(i)).collect::<Result<_, _>>()?,
            ))
        })
        .optional()?;
    // Backwards, so each move knows the next whole version after it.
    let mut wide: Option<i64> = None;
    for i in (0..group.len()).rev() {
        let next = match group.get(i + 1) {
            Some(v) => Some((&v.from, &v.steady)),
            None => now.as_ref().map(|(from, steady)| (from, steady)),
        };
        let this = &group[i];
        let is_move = this.live
            && next.is_some_and(|(from, steady)| {
                *from == this.to && steady.iter().zip(&this.steady).all(|(a, b)| same(a, b))
            });
        if is_move {
            found.push((this.id, wide));
        } else {
            wide = Some(this.id);
        }
    }
    group.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::{ORGANIZATIONS, PROJECT_INFO};
    use crate::mirror::testkit::{TestMirror, i, t};
    use chrono::NaiveDate;

    #[test]
    fn a_table_without_moving_columns_reads_its_history_alone() {
        let sql = archived_sql(&ORGANIZATIONS, "1");
        assert!(!sql.contains("_moves"));
        assert!(MovesSql::new(&ORGANIZATIONS).is_none());
    }

    #[test]
    fn steady_and_moving_columns_split_the_data_columns() {
        let steady: Vec<&str> = steady(&PROJECT_INFO).collect();
        let moving: Vec<&str> = moving(&PROJECT_INFO).collect();
        assert_eq!(moving, ["compute_time_used_ms", "compute_time_left_ms"]);
        assert_eq!(steady.len() + moving.len(), PROJECT_INFO.columns.len());
        assert!(!steady.contains(&"compute_time_used_ms"));
    }

    #[test]
    fn reals_are_the_same_only_bit_for_bit() {
        assert!(same(&Value::Real(1.5), &Value::Real(1.5)));
        assert!(!same(&Value::Real(0.0), &Value::Real(-0.0)));
        assert!(!same(&Value::Integer(1), &Value::Real(1.0)));
        assert!(same(&Value::Null, &Value::Null));
    }

    /// Day `d` of March 2026 at noon, as a run's observed time.
    fn noon(d: u32) -> String {
        format!("2026-03-{d:02}T12:00:00.000Z")
    }

    /// Project 7's life: usage moves most days; its name changes on day 4 and 8; it
    /// is gone on day 6 and back on day 7. `None`: not seen that day.
    const LIFE: &[(u32, Option<(&str, i64)>)] = &[
        (1, Some(("A", 1))),
        (2, Some(("A", 2))),
        (3, Some(("A", 3))),
        (4, Some(("B", 3))),
        (5, Some(("B", 4))),
        (6, None),
        (7, Some(("B", 5))),
        (8, Some(("C", 6))),
        (9, Some(("C", 7))),
        (10, Some(("C", 8))),
    ];

    fn lived() -> TestMirror {
        let mut mirror = TestMirror::new();
        for (day, state) in LIFE {
            mirror.run(&noon(*day), |run| match state {
                Some((name, used)) => run.put(
                    &PROJECT_INFO,
                    &[
                        ("project_id", i(7)),
                        ("acq_sensor", t(name)),
                        ("compute_time_used_ms", i(*used)),
                        ("compute_time_left_ms", i(100 - used)),
                    ],
                ),
                None => run.remove_unseen(&PROJECT_INFO, &[]),
            });
        }
        mirror.close();
        mirror
    }

    /// A version as the tests read it: valid from, valid to, sensor, used, left.
    type Seen = (String, Option<String>, Option<String>, i64, i64);

    fn versions(conn: &Connection) -> Vec<Seen> {
        crate::mirror::asof::install(conn, NaiveDate::from_ymd_opt(2026, 3, 31).expect("date"))
            .expect("views");
        conn.prepare(
            "SELECT valid_from, valid_to, acq_sensor, compute_time_used_ms, compute_time_left_ms \
             FROM project_info_versions ORDER BY valid_from",
        )
        .expect("versions")
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .expect("versions")
        .collect::<Result<_, _>>()
        .expect("versions")
    }

    fn count(conn: &Connection, table: &str) -> i64 {
        conn.query_row(&format!("SELECT COUNT(*) FROM main.{table}"), [], |r| {
            r.get(0)
        })
        .expect("count")
    }

    #[test]
    fn usage_moves_are_archived_narrow_and_read_back_whole_as_of_every_day() {
        let mirror = lived();
        let conn = crate::mirror::open_ro(&mirror.path).expect("open");
        // Whole: A until day 4 (steady change), B removed on day 6 (back on day 7),
        // B until day 8 (steady change). Narrow: days 1, 2, 4 (before it left), 8, 9.
        assert_eq!(count(&conn, "project_info_history"), 3);
        assert_eq!(count(&conn, "project_info_moves"), 5);
        for (day, state) in LIFE {
            let date = NaiveDate::from_ymd_opt(2026, 3, *day).expect("date");
            crate::mirror::asof::install(&conn, date).expect("views");
            let seen: Option<(String, i64, i64)> = conn
                .query_row(
                    "SELECT acq_sensor, compute_time_used_ms, compute_time_left_ms FROM project_info",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .expect("as of");
            let want = state.map(|(name, used)| (name.to_string(), used, 100 - used));
            assert_eq!(seen, want, "as of day {day}");
        }
        let all = versions(&conn);
        let want: Vec<Seen> = [1, 2, 3, 4, 5, 7, 8, 9, 10]
            .iter()
            .enumerate()
            .map(|(n, day)| {
                let (name, used) = LIFE
                    .iter()
                    .find(|(d, _)| d == day)
                    .and_then(|(_, s)| *s)
                    .expect("seen");
                let to = [2, 3, 4, 5, 7, 8, 9, 10].get(n).map(|d| noon(*d));
                (noon(*day), to, Some(name.to_string()), used, 100 - used)
            })
            .collect();
        assert_eq!(all, want);
    }

    #[test]
    fn history_archived_whole_is_split_to_the_same_versions() {
        let mirror = lived();
        let conn = rusqlite::Connection::open(&mirror.path).expect("open");
        let before = versions(&conn);
        // As a build before the split would have archived it: every version whole.
        let cols: Vec<String> = PROJECT_INFO
            .all_columns()
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let cols = cols.join(", ");
        conn.execute_batch(&format!(
            "BEGIN; \
             INSERT INTO project_info_history ({cols}, content_hash, valid_from, valid_to, run_id, removed_at) \
               SELECT {cols}, zeroblob(16), valid_from, valid_to, run_id, removed_at FROM ({}) a \
               WHERE NOT EXISTS (SELECT 1 FROM project_info_history h \
                 WHERE h.project_id = a.project_id AND h.valid_from = a.valid_from); \
             DELETE FROM project_info_moves; COMMIT;",
            archived_sql(&PROJECT_INFO, "1")
        ))
        .expect("whole history");
        assert_eq!(count(&conn, "project_info_history"), 8);
        assert_eq!(versions(&conn), before);
        let tx = conn.unchecked_transaction().expect("tx");
        split_history(&tx).expect("split");
        tx.commit().expect("commit");
        assert_eq!(count(&conn, "project_info_history"), 3);
        assert_eq!(count(&conn, "project_info_moves"), 5);
        assert_eq!(versions(&conn), before);
    }

    #[test]
    fn check_finds_a_narrow_version_that_names_no_whole_version() {
        let mirror = lived();
        let conn = rusqlite::Connection::open(&mirror.path).expect("open");
        let sound = crate::mirror::check::run(&conn, &mirror.path).expect("check");
        assert!(sound.findings.is_empty(), "{:?}", sound.findings);
        assert_eq!(sound.history_rows, 8);
        conn.execute(
            "UPDATE project_info_moves SET wide_id = 4242 WHERE wide_id IS NOT NULL",
            [],
        )
        .expect("break a link");
        let broken = crate::mirror::check::run(&conn, &mirror.path).expect("check");
        assert!(
            broken
                .findings
                .iter()
                .any(|f| f.contains("project_info_moves") && f.contains("history row 4242")),
            "{:?}",
            broken.findings
        );
    }
}
