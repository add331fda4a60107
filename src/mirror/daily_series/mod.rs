//! `daily_series`: each white label user's live daily figures that reports read for
//! every day (CPU, GPU and total compute seconds, storage bytes added and deleted,
//! from `daily_metrics`), packed into one row per user.
//!
//! `compute_trends` needs every day of 13 months for every user, `usage_summary` the
//! last 30. Read from `daily_metrics` that is one SQLite row per user and day (1.3 M
//! on a large mirror, 13 M on xlarge), and stepping through the rows of a 25-column
//! table was most of those reports' CPU. Read from here it is one row per user. The
//! writer keeps a user's series in step with their rows in the same transaction
//! ([`DERIVED`], the table derived from `daily_metrics` through its `TableSpec`:
//! [`write_new`] for a scope written whole, [`merge`] for one written over days the
//! mirror held), and migration 7 filled the table for mirrors written before it. The
//! bytes are in `codec`.
//!
//! A user with a live row whose day is not `YYYY-MM-DD`, whose compute value is
//! neither null nor a number, or whose storage value is not a whole number gets a
//! NULL series: readers then take every user's figures from `daily_metrics`, where
//! such a row is reported.

mod codec;

use crate::calendar::parse_day_bytes;
use crate::mirror::spec::{DAILY_METRICS, Derived};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, OptionalExtension, params};

/// Values per day.
pub const VALUES: usize = 5;

/// The `daily_metrics` columns a series holds, after the day, in record order.
pub const COLUMNS: [&str; VALUES] = [
    "cpu_compute_time_seconds",
    "gpu_compute_time_seconds",
    "compute_time_seconds",
    "storage_bytes_added",
    "storage_bytes_deleted",
];

/// Where each of [`COLUMNS`] sits in a record.
pub const CPU: usize = 0;
/// See [`CPU`].
pub const GPU: usize = 1;
/// See [`CPU`].
pub const COMPUTE: usize = 2;
/// See [`CPU`].
pub const STORAGE_ADDED: usize = 3;
/// See [`CPU`].
pub const STORAGE_DELETED: usize = 4;

/// One of a day's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// A whole number.
    Int(i64),
    /// A real number (compute columns only).
    Real(f64),
}

impl Value {
    /// The packed form of a stored value in column `i` of [`COLUMNS`], if it has one.
    fn of(i: usize, value: ValueRef<'_>) -> Option<Value> {
        match value {
            ValueRef::Null => Some(Value::Null),
            ValueRef::Integer(n) => Some(Value::Int(n)),
            ValueRef::Real(f) if i < STORAGE_ADDED => Some(Value::Real(f)),
            _ => None,
        }
    }

    /// The value as the reports read a number: integers as `f64`.
    pub fn number(self) -> Option<f64> {
        match self {
            Value::Null => None,
            Value::Int(n) => Some(n as f64),
            Value::Real(f) => Some(f),
        }
    }
}

/// A series that cannot be read back (written by a later build, or damaged).
#[derive(Debug, thiserror::Error)]
#[error("daily_series of user {user} cannot be read: {why}")]
pub struct Unreadable {
    /// The user whose series it is.
    pub user: i64,
    /// What is wrong with it.
    pub why: String,
}

/// Packs one user's days, each given as the day followed by the values of
/// [`COLUMNS`], in any order. None when a day or a value has no packed form.
pub fn encode<'a>(days: impl IntoIterator<Item = [ValueRef<'a>; VALUES + 1]>) -> Option<Vec<u8>> {
    let days: Option<Vec<Day>> = days.into_iter().map(parse).collect();
    Some(pack(days?))
}

/// One day: its number and values.
type Day = (i64, [Value; VALUES]);

/// The packed form of one day given as in [`encode`].
fn parse(row: [ValueRef<'_>; VALUES + 1]) -> Option<Day> {
    let ValueRef::Text(text) = row[0] else {
        return None;
    };
    let day = parse_day_bytes(text).filter(|_| text.len() == 10)?;
    let mut values = [Value::Null; VALUES];
    for (i, value) in values.iter_mut().enumerate() {
        *value = Value::of(i, row[i + 1])?;
    }
    Some((day, values))
}

/// The series of `days` (distinct days, in any order).
fn pack(mut days: Vec<Day>) -> Vec<u8> {
    // Newest first: readers want the last days, and stop at the oldest they use.
    days.sort_unstable_by_key(|&(day, _)| std::cmp::Reverse(day));
    let mut out = Vec::with_capacity(1 + 10 * days.len());
    out.push(codec::FORMAT);
    let mut previous = 0;
    for (day, values) in &days {
        codec::put_record(&mut out, day - previous, values);
        previous = *day;
    }
    out
}

/// Hands each day of a series from the newest back to `oldest` to `each` as
/// `(day number, values)`; the older days are not decoded.
pub fn decode(
    user: i64,
    series: &[u8],
    oldest: i64,
    mut each: impl FnMut(i64, &[Value; VALUES]),
) -> Result<(), Unreadable> {
    let unreadable = |why: String| Unreadable { user, why };
    let Some((&format, rest)) = series.split_first() else {
        return Err(unreadable("it is empty".into()));
    };
    if format != codec::FORMAT {
        return Err(unreadable(format!("unknown format {format}")));
    }
    let mut reader = codec::Reader { bytes: rest, at: 0 };
    let mut day = 0i64;
    while reader.at < rest.len() {
        let start = reader.at;
        let Some((gap, values)) = reader.record() else {
            return Err(unreadable(format!(
                "the record at byte {} is cut short or damaged",
                start + 1
            )));
        };
        day = day.wrapping_add(gap);
        if day < oldest {
            break;
        }
        each(day, &values);
    }
    Ok(())
}

/// Positions of the day and of [`COLUMNS`] in a `daily_metrics` row.
fn row_positions() -> [usize; VALUES + 1] {
    let at = |name: &str| {
        DAILY_METRICS
            .all_columns()
            .position(|c| c.name == name)
            .unwrap_or(usize::MAX)
    };
    let mut out = [at("day"); VALUES + 1];
    for (slot, name) in out[1..].iter_mut().zip(COLUMNS) {
        *slot = at(name);
    }
    out
}

/// A row's value at `i` (NULL past its end).
fn cell(row: &[Sql], i: usize) -> ValueRef<'_> {
    row.get(i).map_or(ValueRef::Null, ValueRef::from)
}

/// `daily_series` as the derived table of [`DAILY_METRICS`]: a scope is one user.
pub const DERIVED: Derived = Derived {
    name: "daily_series",
    keep,
    rebuild,
};

/// Replaces every series by one packed from the live rows.
pub fn rebuild(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM main.daily_series", [])?;
    fill(conn)
}

fn keep(
    conn: &Connection,
    scope: &[Sql],
    rows: &[&[Sql]],
    new_scope: bool,
) -> rusqlite::Result<()> {
    let [Sql::Integer(user)] = scope else {
        return Ok(());
    };
    if new_scope {
        write_new(conn, *user, rows)
    } else {
        merge(conn, *user, rows)
    }
}

/// Stores the series of a user whose daily metrics were all just inserted as `rows`
/// (values in [`DAILY_METRICS`] column order), without reading them back.
pub fn write_new(conn: &Connection, user: i64, rows: &[&[Sql]]) -> rusqlite::Result<()> {
    let at = row_positions();
    let series = encode(rows.iter().map(|row| at.map(|i| cell(row, i))));
    store(conn, user, series)
}

/// Brings a user's series up to date after their scope was written with `rows` (every
/// row their document lists, values in [`DAILY_METRICS`] column order) over days the
/// mirror already held: the listed days replace or join the series' days. That is the
/// user's live rows, because a day the document no longer lists stays live
/// (`daily_metrics` is not removable). Reading the old series back costs a few
/// microseconds a user; reading the user's rows back ([`refresh`]) made a daily sync
/// of the large world 18 % slower. A user without a series, or with a NULL one, is
/// refreshed from the rows.
pub fn merge(conn: &Connection, user: i64, rows: &[&[Sql]]) -> rusqlite::Result<()> {
    const { assert!(!DAILY_METRICS.removable) };
    let old: Option<Option<Vec<u8>>> = conn
        .prepare_cached("SELECT series FROM main.daily_series WHERE user_id = ?1")?
        .query_row([user], |row| row.get(0))
        .optional()?;
    let Some(Some(old)) = old else {
        return refresh(conn, user);
    };
    let at = row_positions();
    let listed: Option<Vec<Day>> = rows
        .iter()
        .map(|row| parse(at.map(|i| cell(row, i))))
        .collect();
    let Some(mut days) = listed else {
        return store(conn, user, None);
    };
    if decode(user, &old, i64::MIN, |day, values| {
        days.push((day, *values))
    })
    .is_err()
    {
        return refresh(conn, user);
    }
    // The listed days come first, and a stable sort keeps them first among equal days.
    days.sort_by_key(|&(day, _)| std::cmp::Reverse(day));
    days.dedup_by_key(|&mut (day, _)| day);
    store(conn, user, Some(pack(days)))
}

/// The statement that reads users' live days, the day and [`COLUMNS`] first.
fn days_sql(filter: &str) -> String {
    format!(
        "SELECT day, {} , user_id FROM main.daily_metrics WHERE {filter}",
        COLUMNS.join(", ")
    )
}

/// The day and [`COLUMNS`] of a row read through [`days_sql`].
fn days_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<[Sql; VALUES + 1]> {
    let mut out = [const { Sql::Null }; VALUES + 1];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = row.get(i)?;
    }
    Ok(out)
}

/// Packs days read through [`days_sql`].
fn encode_rows(days: &[[Sql; VALUES + 1]]) -> Option<Vec<u8>> {
    encode(days.iter().map(|d| d.each_ref().map(ValueRef::from)))
}

/// Rebuilds a user's series from their live `daily_metrics` rows (when there is no
/// series to merge into).
pub fn refresh(conn: &Connection, user: i64) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(&days_sql("user_id = ?1 AND removed_at IS NULL"))?;
    let mut rows = stmt.query([user])?;
    let mut days = Vec::new();
    while let Some(row) = rows.next()? {
        days.push(days_row(row)?);
    }
    if days.is_empty() {
        conn.prepare_cached("DELETE FROM main.daily_series WHERE user_id = ?1")?
            .execute([user])?;
        return Ok(());
    }
    store(conn, user, encode_rows(&days))
}

fn store(conn: &Connection, user: i64, series: Option<Vec<u8>>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO main.daily_series (user_id, series) VALUES (?1, ?2) \
         ON CONFLICT (user_id) DO UPDATE SET series = excluded.series",
    )?
    .execute(params![user, series])?;
    Ok(())
}

/// The SQL condition under which the series hold what `daily_metrics` holds: every
/// user's days are packed. Reports read the series only while it holds; `orgledger
/// status` shows it.
pub const COMPLETE_SQL: &str = "NOT EXISTS (SELECT 1 FROM main.daily_series WHERE series IS NULL)";

/// Whether [`COMPLETE_SQL`] holds.
pub fn complete(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(&format!("SELECT {COMPLETE_SQL}"), [], |row| row.get(0))
}

/// Fills `daily_series` from `daily_metrics` (migration 7): one pass in key order,
/// one user's days held at a time.
pub fn fill(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&(days_sql("removed_at IS NULL") + " ORDER BY user_id, day"))?;
    let mut rows = stmt.query([])?;
    let mut user: Option<i64> = None;
    let mut days = Vec::new();
    let flush = |user: Option<i64>, days: &mut Vec<[Sql; VALUES + 1]>| {
        let stored = match user {
            Some(user) => store(conn, user, encode_rows(days)),
            None => Ok(()),
        };
        days.clear();
        stored
    };
    while let Some(row) = rows.next()? {
        let id: Option<i64> = row.get(VALUES + 1)?;
        if id != user {
            flush(user, &mut days)?;
            user = id;
        }
        days.push(days_row(row)?);
    }
    flush(user, &mut days)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ValueRef<'_> {
        ValueRef::Text(s.as_bytes())
    }

    fn int(n: i64) -> ValueRef<'static> {
        ValueRef::Integer(n)
    }

    const NULL: ValueRef<'static> = ValueRef::Null;

    fn day_of(text: &str) -> i64 {
        parse_day_bytes(text.as_bytes()).expect("a day")
    }

    /// Days as `(day number, values)`, newest first.
    type Days = Vec<(i64, [Value; VALUES])>;

    fn unpack(series: &[u8], oldest: i64) -> Days {
        let mut out = Vec::new();
        decode(7, series, oldest, |day, values| out.push((day, *values))).expect("decode");
        out
    }

    #[test]
    fn days_come_back_newest_first_with_nulls_integers_and_reals() {
        let series = encode([
            [
                text("2026-03-02"),
                int(5),
                NULL,
                ValueRef::Real(1.5),
                int(9),
                NULL,
            ],
            [
                text("2026-03-01"),
                int(-3),
                int(1 << 40),
                NULL,
                NULL,
                int(2),
            ],
            [text("1969-12-30"), int(0), int(0), int(0), int(0), int(0)],
        ])
        .expect("packable");
        let march_1 = day_of("2026-03-01");
        use Value::{Int, Null, Real};
        assert_eq!(
            unpack(&series, i64::MIN),
            [
                (march_1 + 1, [Int(5), Null, Real(1.5), Int(9), Null]),
                (march_1, [Int(-3), Int(1 << 40), Null, Null, Int(2)]),
                (-2, [Int(0); VALUES]),
            ]
        );
        assert_eq!(unpack(&series, march_1).len(), 2, "older days are not read");
        assert_eq!(unpack(&series, march_1 + 2), []);
    }

    #[test]
    fn the_extreme_integers_and_a_negative_real_survive() {
        let (max, min) = (int(i64::MAX), int(i64::MIN));
        let series = encode([[
            text("2026-03-01"),
            max,
            min,
            ValueRef::Real(-0.25),
            min,
            max,
        ]])
        .expect("packable");
        let days = unpack(&series, i64::MIN);
        assert_eq!(days[0].0, day_of("2026-03-01"));
        assert_eq!(
            days[0].1,
            [
                Value::Int(i64::MAX),
                Value::Int(i64::MIN),
                Value::Real(-0.25),
                Value::Int(i64::MIN),
                Value::Int(i64::MAX)
            ]
        );
    }

    #[test]
    fn a_day_or_value_without_a_packed_form_leaves_the_user_unpacked() {
        let n = int(1);
        assert!(encode([[text("2026-03-01T00:00:00Z"), n, n, n, n, n]]).is_none());
        assert!(encode([[text("2026-02-30"), n, n, n, n, n]]).is_none());
        assert!(encode([[int(20_000), n, n, n, n, n]]).is_none());
        assert!(encode([[text("2026-03-01"), text("12"), n, n, n, n]]).is_none());
        // Storage figures are whole bytes; a real one has no packed form.
        assert!(encode([[text("2026-03-01"), n, n, n, ValueRef::Real(0.5), n]]).is_none());
        assert!(encode([[text("2026-03-01"), ValueRef::Real(0.5), n, n, n, n]]).is_some());
    }

    #[test]
    fn a_series_of_another_format_or_cut_short_is_an_error_naming_the_user() {
        let series =
            encode([[text("2026-03-01"), int(300), int(1), NULL, NULL, NULL]]).expect("packable");
        let cut = &series[..series.len() - 1];
        let err = decode(42, cut, i64::MIN, |_, _| {}).expect_err("cut short");
        assert!(err.to_string().contains("user 42"), "{err}");
        assert!(decode(42, &[9], i64::MIN, |_, _| {}).is_err());
        assert!(decode(42, &[], i64::MIN, |_, _| {}).is_err());
    }

    #[test]
    fn an_empty_list_of_days_packs_to_the_format_byte_alone() {
        let series = encode([]).expect("packable");
        assert_eq!(series, [codec::FORMAT]);
        assert!(unpack(&series, i64::MIN).is_empty());
    }

    /// The days of `user` as its series holds them, and as `daily_metrics` does.
    fn series_and_rows(path: &std::path::Path, user: i64) -> (Days, Days) {
        let conn = Connection::open(path).expect("open");
        let series: Vec<u8> = conn
            .query_row(
                "SELECT series FROM daily_series WHERE user_id = ?1",
                [user],
                |r| r.get(0),
            )
            .expect("a series");
        let mut stmt = conn
            .prepare(&days_sql("user_id = ?1 ORDER BY day DESC"))
            .expect("prepare");
        let rows = stmt
            .query_map([user], |r| {
                let row = days_row(r)?;
                let mut values = [Value::Null; VALUES];
                for (i, v) in values.iter_mut().enumerate() {
                    *v = Value::of(i, ValueRef::from(&row[i + 1])).unwrap_or(Value::Null);
                }
                let Sql::Text(day) = &row[0] else {
                    return Ok((i64::MIN, values));
                };
                Ok((day_of(day), values))
            })
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows");
        (unpack(&series, i64::MIN), rows)
    }

    fn day(user: i64, day: &str, cpu: i64) -> Vec<(&'static str, Sql)> {
        use crate::mirror::testkit::{i, t};
        vec![
            ("user_id", i(user)),
            ("day", t(day)),
            ("cpu_compute_time_seconds", i(cpu)),
            ("gpu_compute_time_seconds", i(cpu % 3)),
            ("storage_bytes_added", i(cpu * 1000)),
        ]
    }

    #[test]
    fn the_writer_keeps_a_users_series_equal_to_their_daily_metrics() {
        use crate::mirror::testkit::{TestMirror, i};
        let mut m = TestMirror::new();
        m.run("2026-03-02T06:00:00.000Z", |w| {
            w.scope_rows(
                &DAILY_METRICS,
                &[i(7)],
                &[day(7, "2026-03-02", 5), day(7, "2026-03-01", 4)],
            );
        });
        let (series, rows) = series_and_rows(&m.path, 7);
        assert_eq!(series.len(), 2);
        assert_eq!(series, rows);
        // A later answer revises a day and adds one; the day it no longer lists stays.
        m.run("2026-03-04T06:00:00.000Z", |w| {
            w.scope_rows(
                &DAILY_METRICS,
                &[i(7)],
                &[day(7, "2026-03-02", 50), day(7, "2026-03-04", 6)],
            );
        });
        m.close();
        let (series, rows) = series_and_rows(&m.path, 7);
        assert_eq!(series.len(), 3);
        assert_eq!(
            series[1].1[..3],
            [Value::Int(50), Value::Int(2), Value::Null]
        );
        assert_eq!(series, rows);
    }

    #[test]
    fn a_user_whose_days_cannot_be_packed_sends_readers_to_the_rows() {
        use crate::mirror::testkit::{TestMirror, i};
        let mut m = TestMirror::new();
        m.run("2026-03-02T06:00:00.000Z", |w| {
            w.scope_rows(&DAILY_METRICS, &[i(7)], &[day(7, "2026-03-02", 5)]);
            w.scope_rows(
                &DAILY_METRICS,
                &[i(9)],
                &[day(9, "2026-03-02T00:00:00Z", 1)],
            );
        });
        m.close();
        let conn = Connection::open(&m.path).expect("open");
        let nulls: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM daily_series WHERE series IS NULL",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(nulls, 1, "user 9's day is not YYYY-MM-DD");
        assert!(!complete(&conn).expect("check"));
    }

    #[test]
    fn filling_packs_the_days_a_mirror_already_holds() {
        use crate::mirror::testkit::{TestMirror, i};
        let mut m = TestMirror::new();
        m.run("2026-03-02T06:00:00.000Z", |w| {
            w.scope_rows(
                &DAILY_METRICS,
                &[i(7)],
                &[day(7, "2026-03-01", 4), day(7, "2026-03-02", 5)],
            );
            w.scope_rows(&DAILY_METRICS, &[i(9)], &[day(9, "2026-02-27", 1)]);
        });
        m.close();
        let conn = Connection::open(&m.path).expect("open");
        conn.execute_batch("DELETE FROM daily_series")
            .expect("empty it");
        fill(&conn).expect("fill");
        drop(conn);
        for user in [7, 9] {
            let (series, rows) = series_and_rows(&m.path, user);
            assert!(!series.is_empty());
            assert_eq!(series, rows, "user {user}");
        }
    }
}
