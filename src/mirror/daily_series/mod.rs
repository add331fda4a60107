//! `daily_compute`: each white label user's live daily compute figures (day, CPU, GPU
//! and total compute seconds from `daily_metrics`) packed into one blob per user.
//!
//! `compute_trends` needs those four columns of every day of 13 months for every
//! user. Read from `daily_metrics` that is one SQLite row per user and day (1.3 M on
//! a large mirror, 13 M on xlarge), and stepping through the rows of a 25-column
//! table is most of the report's CPU. Read from here it is one row per user. The
//! writer keeps the series in step with the user's rows in the same transaction
//! ([`refresh`] after a scope changed, [`write_new`] for a scope written whole), and
//! migration 7 fills it for mirrors written before it.
//!
//! A series is a format byte, then one record per day in day order: the gap in days
//! from the previous record (from day 0, 1970-01-01, for the first) and the three
//! values, each null, an integer or a real, in bincode's standard form (variable
//! length integers). A user with a live row whose day is not `YYYY-MM-DD` or whose
//! value is neither null nor a number gets a NULL series: readers then take the
//! figures from `daily_metrics` itself, where such a row is reported.

use crate::mirror::spec::DAILY_METRICS;
use crate::report::dates::parse_day_bytes;
use bincode::{Decode, Encode};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params};

/// The first byte of every series written by this build.
const FORMAT: u8 = 1;

/// The `daily_metrics` columns a series holds, after the day.
pub const VALUE_COLUMNS: [&str; 3] = [
    "cpu_compute_time_seconds",
    "gpu_compute_time_seconds",
    "compute_time_seconds",
];

/// One of a day's values.
#[derive(Debug, Clone, Copy, PartialEq, Encode, Decode)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
}

impl Cell {
    fn of(value: ValueRef<'_>) -> Option<Cell> {
        match value {
            ValueRef::Null => Some(Cell::Null),
            ValueRef::Integer(n) => Some(Cell::Int(n)),
            ValueRef::Real(f) => Some(Cell::Real(f)),
            ValueRef::Text(_) | ValueRef::Blob(_) => None,
        }
    }

    /// The value as the reports read a number: integers as `f64`.
    fn number(self) -> Option<f64> {
        match self {
            Cell::Null => None,
            Cell::Int(n) => Some(n as f64),
            Cell::Real(f) => Some(f),
        }
    }
}

/// One record of a series.
#[derive(Debug, Encode, Decode)]
struct Record {
    gap: i64,
    values: [Cell; 3],
}

/// A series that cannot be read back (written by a later build, or damaged).
#[derive(Debug, thiserror::Error)]
#[error("daily_compute series of user {user} cannot be read: {why}")]
pub struct Unreadable {
    /// The user whose series it is.
    pub user: i64,
    /// What is wrong with it.
    pub why: String,
}

/// Packs one user's days, given as `[day, cpu, gpu, compute]` in any order. None when
/// a day or a value has no packed form (see the module's doc).
pub fn encode<'a>(days: impl IntoIterator<Item = [ValueRef<'a>; 4]>) -> Option<Vec<u8>> {
    let mut parsed: Vec<(i64, [Cell; 3])> = Vec::new();
    for [day, cpu, gpu, compute] in days {
        let ValueRef::Text(text) = day else {
            return None;
        };
        let day = parse_day_bytes(text).filter(|_| text.len() == 10)?;
        parsed.push((day, [Cell::of(cpu)?, Cell::of(gpu)?, Cell::of(compute)?]));
    }
    parsed.sort_unstable_by_key(|&(day, _)| day);
    let mut out = vec![FORMAT];
    let mut previous = 0;
    for (day, values) in parsed {
        let record = Record {
            gap: day - previous,
            values,
        };
        previous = day;
        bincode::encode_into_std_write(&record, &mut out, bincode::config::standard()).ok()?;
    }
    Some(out)
}

/// Hands each day of a series to `each` as `(day number, [cpu, gpu, compute])`, in
/// day order.
pub fn decode(
    user: i64,
    series: &[u8],
    mut each: impl FnMut(i64, [Option<f64>; 3]),
) -> Result<(), Unreadable> {
    let unreadable = |why: String| Unreadable { user, why };
    let Some((&format, mut rest)) = series.split_first() else {
        return Err(unreadable("it is empty".into()));
    };
    if format != FORMAT {
        return Err(unreadable(format!("unknown format {format}")));
    }
    let mut day = 0;
    while !rest.is_empty() {
        let (record, used): (Record, usize) =
            bincode::decode_from_slice(rest, bincode::config::standard())
                .map_err(|e| unreadable(e.to_string()))?;
        rest = &rest[used..];
        day += record.gap;
        each(day, record.values.map(Cell::number));
    }
    Ok(())
}

/// Positions of the day and the [`VALUE_COLUMNS`] in a `daily_metrics` row.
fn row_positions() -> [usize; 4] {
    let at = |name: &str| {
        DAILY_METRICS
            .all_columns()
            .position(|c| c.name == name)
            .unwrap_or(usize::MAX)
    };
    [
        at("day"),
        at(VALUE_COLUMNS[0]),
        at(VALUE_COLUMNS[1]),
        at(VALUE_COLUMNS[2]),
    ]
}

/// A row's value at `i` (NULL past its end).
fn cell(row: &[Value], i: usize) -> ValueRef<'_> {
    row.get(i).map_or(ValueRef::Null, ValueRef::from)
}

/// Stores the series of a user whose daily metrics were all just inserted as `rows`
/// (values in [`DAILY_METRICS`] column order), without reading them back.
pub fn write_new(conn: &Connection, user: i64, rows: &[&[Value]]) -> rusqlite::Result<()> {
    let at = row_positions();
    let series = encode(rows.iter().map(|row| at.map(|i| cell(row, i))));
    store(conn, user, series)
}

/// Rebuilds a user's series from the live `daily_metrics` rows (after a write changed
/// some of them).
pub fn refresh(conn: &Connection, user: i64) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT day, {} FROM main.daily_metrics WHERE user_id = ?1 AND removed_at IS NULL",
        VALUE_COLUMNS.join(", ")
    ))?;
    let mut rows = stmt.query([user])?;
    let mut days: Vec<[Value; 4]> = Vec::new();
    while let Some(row) = rows.next()? {
        days.push([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?]);
    }
    if days.is_empty() {
        conn.prepare_cached("DELETE FROM main.daily_compute WHERE user_id = ?1")?
            .execute([user])?;
        return Ok(());
    }
    let series = encode(days.iter().map(|d| d.each_ref().map(ValueRef::from)));
    store(conn, user, series)
}

fn store(conn: &Connection, user: i64, series: Option<Vec<u8>>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO main.daily_compute (user_id, series) VALUES (?1, ?2) \
         ON CONFLICT (user_id) DO UPDATE SET series = excluded.series",
    )?
    .execute(params![user, series])?;
    Ok(())
}

/// Fills `daily_compute` from `daily_metrics` (migration 7): one pass in key order,
/// one user's days held at a time.
pub fn fill(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT user_id, day, {} FROM main.daily_metrics WHERE removed_at IS NULL \
         ORDER BY user_id, day",
        VALUE_COLUMNS.join(", ")
    ))?;
    let mut rows = stmt.query([])?;
    let mut user: Option<i64> = None;
    let mut days: Vec<[Value; 4]> = Vec::new();
    let flush = |user: Option<i64>, days: &mut Vec<[Value; 4]>| -> rusqlite::Result<()> {
        if let Some(user) = user {
            let series = encode(days.iter().map(|d| d.each_ref().map(ValueRef::from)));
            store(conn, user, series)?;
        }
        days.clear();
        Ok(())
    };
    while let Some(row) = rows.next()? {
        let id: Option<i64> = row.get(0)?;
        if id != user {
            flush(user, &mut days)?;
            user = id;
        }
        days.push([row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?]);
    }
    flush(user, &mut days)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ValueRef<'_> {
        ValueRef::Text(s.as_bytes())
    }

    /// Days as `(day number, [cpu, gpu, compute])`.
    type Days = Vec<(i64, [Option<f64>; 3])>;

    fn unpack(series: &[u8]) -> Days {
        let mut out = Vec::new();
        decode(7, series, |day, values| out.push((day, values))).expect("decode");
        out
    }

    #[test]
    fn days_come_back_in_day_order_with_nulls_integers_and_reals() {
        let series = encode([
            [
                text("2026-03-02"),
                ValueRef::Integer(5),
                ValueRef::Null,
                ValueRef::Real(1.5),
            ],
            [
                text("2026-03-01"),
                ValueRef::Integer(-3),
                ValueRef::Integer(1 << 40),
                ValueRef::Null,
            ],
            [
                text("1969-12-30"),
                ValueRef::Integer(0),
                ValueRef::Integer(0),
                ValueRef::Integer(0),
            ],
        ])
        .expect("packable");
        let march_1 = parse_day_bytes(b"2026-03-01").expect("day");
        assert_eq!(
            unpack(&series),
            [
                (-2, [Some(0.0), Some(0.0), Some(0.0)]),
                (march_1, [Some(-3.0), Some((1u64 << 40) as f64), None]),
                (march_1 + 1, [Some(5.0), None, Some(1.5)]),
            ]
        );
    }

    #[test]
    fn a_day_or_value_without_a_packed_form_leaves_the_user_unpacked() {
        let n = ValueRef::Integer(1);
        assert!(encode([[text("2026-03-01T00:00:00Z"), n, n, n]]).is_none());
        assert!(encode([[text("2026-02-30"), n, n, n]]).is_none());
        assert!(encode([[ValueRef::Integer(20_000), n, n, n]]).is_none());
        assert!(encode([[text("2026-03-01"), text("12"), n, n]]).is_none());
    }

    #[test]
    fn a_series_of_another_format_or_cut_short_is_an_error_naming_the_user() {
        let series = encode([[
            text("2026-03-01"),
            ValueRef::Integer(300),
            ValueRef::Integer(1),
            ValueRef::Null,
        ]])
        .expect("packable");
        let cut = &series[..series.len() - 1];
        let err = decode(42, cut, |_, _| {}).expect_err("cut short");
        assert!(err.to_string().contains("user 42"), "{err}");
        assert!(decode(42, &[9], |_, _| {}).is_err());
        assert!(decode(42, &[], |_, _| {}).is_err());
    }

    /// The days of `user` as its series holds them, and as `daily_metrics` does.
    fn series_and_rows(path: &std::path::Path, user: i64) -> (Days, Days) {
        let conn = Connection::open(path).expect("open");
        let series: Vec<u8> = conn
            .query_row(
                "SELECT series FROM daily_compute WHERE user_id = ?1",
                [user],
                |r| r.get(0),
            )
            .expect("a series");
        let mut stmt = conn
            .prepare(
                "SELECT day, cpu_compute_time_seconds, gpu_compute_time_seconds, \
                 compute_time_seconds FROM daily_metrics WHERE user_id = ?1 ORDER BY day",
            )
            .expect("prepare");
        let rows = stmt
            .query_map([user], |r| {
                let day: String = r.get(0)?;
                Ok((
                    parse_day_bytes(day.as_bytes()).unwrap_or(i64::MIN),
                    [r.get(1)?, r.get(2)?, r.get(3)?],
                ))
            })
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows");
        (unpack(&series), rows)
    }

    fn day(user: i64, day: &str, cpu: i64) -> Vec<(&'static str, Value)> {
        use crate::report::testkit::{i, t};
        vec![
            ("user_id", i(user)),
            ("day", t(day)),
            ("cpu_compute_time_seconds", i(cpu)),
            ("gpu_compute_time_seconds", i(cpu % 3)),
        ]
    }

    #[test]
    fn the_writer_keeps_a_users_series_equal_to_their_daily_metrics() {
        use crate::report::testkit::{TestMirror, i};
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
        assert_eq!(series[1].1, [Some(50.0), Some(2.0), None]);
        assert_eq!(series, rows);
    }

    #[test]
    fn filling_packs_the_days_a_mirror_already_holds() {
        use crate::report::testkit::{TestMirror, i};
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
        conn.execute_batch("DELETE FROM daily_compute")
            .expect("empty it");
        fill(&conn).expect("fill");
        drop(conn);
        for user in [7, 9] {
            let (series, rows) = series_and_rows(&m.path, user);
            assert!(!series.is_empty());
            assert_eq!(series, rows, "user {user}");
        }
    }

    #[test]
    fn an_empty_list_of_days_packs_to_the_format_byte_alone() {
        let series = encode([]).expect("packable");
        assert_eq!(series, [FORMAT]);
        assert!(unpack(&series).is_empty());
    }
}
