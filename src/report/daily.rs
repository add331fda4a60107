//! The users' daily figures, for the reports that read every day of every user
//! (`compute_trends`: 13 months, `usage_summary`: 30 days): the values of
//! [`daily_series::COLUMNS`] (CPU, GPU and total compute seconds as sent, storage
//! bytes added and deleted) of each user and day of `daily_metrics`.
//!
//! They come from the packed series (`crate::mirror::daily_series`, one row per user)
//! when those hold exactly what the as-of view of `daily_metrics` shows: no run
//! observed the service after the cut-off (so the view is the live rows,
//! `crate::mirror::asof`) and every user's days could be packed. Else they come from
//! the view's rows. Either way a day reaches the report as the same
//! `[Value; VALUES]`, so each formula over the days is written once, in the report
//! that uses it; `tests/it/packed_series.rs` checks that both sources give the same
//! reports byte for byte.

use crate::calendar::day_text;
use crate::mirror::asof;
use crate::mirror::daily_series::{self, COLUMNS, VALUES, Value};
use crate::report::Ctx;
use crate::report::error::{ReportError, SqlSite};
use crate::report::frame::{self, Kind};
use rusqlite::types::ValueRef;

/// About this many users' days are read (and held) at once by [`chunks`]' readers.
const CHUNK_USERS: i64 = 512;

/// Where the days are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The as-of view of `daily_metrics`: one row per user and day.
    Rows,
    /// The packed series: one row per user.
    Packed,
}

/// A range of user ids, `[low, high)`; an open end reaches every id on that side.
pub(crate) type IdRange = (Option<i64>, Option<i64>);

fn query_err<'a>(
    ctx: &'a Ctx<'_>,
    table: &'a str,
    what: &'a str,
) -> impl Fn(rusqlite::Error) -> ReportError + 'a {
    crate::report::error::query_err(ctx.report(), table, what)
}

/// A sum of storage figures: whole bytes exactly, and any fractional figures (a
/// service that sends them) apart.
#[derive(Default, Clone, Copy)]
pub(crate) struct Bytes {
    whole: i128,
    fraction: f64,
}

impl Bytes {
    /// A user's day's net storage change: the bytes added less the bytes deleted
    /// (a missing figure counts 0), the one definition `usage_summary` and
    /// `storage_trends` read.
    pub(crate) fn net_storage(values: &[Value; VALUES]) -> Bytes {
        let mut net = Bytes::default();
        net.add(values[daily_series::STORAGE_ADDED], 1);
        net.add(values[daily_series::STORAGE_DELETED], -1);
        net
    }

    pub(crate) fn add(&mut self, value: Value, sign: i128) {
        match value {
            Value::Int(n) => self.whole += sign * i128::from(n),
            Value::Real(f) => self.fraction += sign as f64 * f,
            Value::Null => {}
        }
    }

    /// A figure read as a number: whole bytes exactly where it is whole.
    pub(crate) fn of(value: Option<f64>) -> Bytes {
        match value {
            // Whole and within f64's exact integers (2^53 bytes: 9 PB).
            Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => Bytes {
                whole: v as i128,
                fraction: 0.0,
            },
            Some(v) => Bytes {
                whole: 0,
                fraction: v,
            },
            None => Bytes::default(),
        }
    }

    /// The same bytes taken away.
    pub(crate) fn negated(self) -> Bytes {
        Bytes {
            whole: -self.whole,
            fraction: -self.fraction,
        }
    }

    pub(crate) fn plus(mut self, other: Bytes) -> Bytes {
        self.whole += other.whole;
        self.fraction += other.fraction;
        self
    }

    pub(crate) fn value(self) -> f64 {
        self.whole as f64 + self.fraction
    }
}

/// Which [`Source`] holds the days as of the report's date.
pub(crate) fn source(ctx: &Ctx<'_>) -> Result<Source, ReportError> {
    let err = query_err(
        ctx,
        "main.daily_series",
        "whether the series stand for the rows",
    );
    let history = asof::history_current_at(ctx.conn, &asof::cutoff(ctx.as_of)).map_err(&err)?;
    if history || !daily_series::complete(ctx.conn).map_err(&err)? {
        return Ok(Source::Rows);
    }
    Ok(Source::Packed)
}

/// Ranges of user ids that together cover every user with days, each holding about
/// [`CHUNK_USERS`] users (user ids as spread as the stored daily metrics' are).
pub(crate) fn chunks(ctx: &Ctx<'_>) -> Result<Vec<IdRange>, ReportError> {
    let (users, low, high): (i64, Option<i64>, Option<i64>) = ctx
        .conn
        .query_row(
            // daily_metrics is WITHOUT ROWID, so there is no cheap row count; the
            // users are the estimate. MIN and MAX go in separate subqueries: together
            // in one SELECT they make SQLite scan the table.
            "SELECT (SELECT COUNT(*) FROM main.users), \
                    (SELECT MIN(user_id) FROM main.daily_metrics), \
                    (SELECT MAX(user_id) FROM main.daily_metrics)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(query_err(ctx, "main.daily_metrics", "size"))?;
    let (Some(low), Some(high)) = (low, high) else {
        return Ok(vec![(None, None)]);
    };
    let parts = (users / CHUNK_USERS).max(1);
    let step = ((high - low) / parts).max(1);
    let mut ranges = Vec::new();
    let mut from = None;
    let mut split = low + step;
    while split <= high {
        ranges.push((from, Some(split)));
        from = Some(split);
        split += step;
    }
    ranges.push((from, None));
    Ok(ranges)
}

/// Hands each day from `first_day` to `last_day` of the users in `range` to `each`
/// as `(user, day, values)`. From the packed series users come in id order, each
/// user's days newest first; from the rows in the order the view gives them (a
/// user's days may be split when history rows are current). Returns the days handed
/// over.
pub(crate) fn for_each_day(
    ctx: &Ctx<'_>,
    source: Source,
    range: IdRange,
    days: (i64, i64),
    each: impl FnMut(i64, i64, &[Value; VALUES]),
) -> Result<usize, ReportError> {
    let users = (
        range.0.unwrap_or(i64::MIN),
        range.1.map_or(i64::MAX, |high| high.saturating_sub(1)),
    );
    match source {
        Source::Packed => packed_days(ctx, users, days, each),
        Source::Rows => row_days(ctx, users, days, each),
    }
}

/// [`for_each_day`] from the packed series; older days are not decoded.
fn packed_days(
    ctx: &Ctx<'_>,
    (low, high): (i64, i64),
    (first_day, last_day): (i64, i64),
    mut each: impl FnMut(i64, i64, &[Value; VALUES]),
) -> Result<usize, ReportError> {
    let table = "main.daily_series";
    let err = query_err(ctx, table, "series");
    let mut stmt = ctx
        .conn
        .prepare_cached(
            "SELECT user_id, series FROM main.daily_series \
             WHERE user_id BETWEEN ?1 AND ?2 AND series IS NOT NULL ORDER BY user_id",
        )
        .map_err(&err)?;
    let mut rows = stmt.query((low, high)).map_err(&err)?;
    let mut count = 0;
    while let Some(row) = rows.next().map_err(&err)? {
        let user: i64 = row.get(0).map_err(&err)?;
        let unreadable = |why: String| ReportError::BadValue {
            site: SqlSite::boxed(ctx.report(), table, "series"),
            column: "series".into(),
            value: format!("user {user}: {why}"),
            expected: "a packed daily series",
        };
        let series = row.get_ref(1).map_err(&err)?;
        let series = series
            .as_blob()
            .map_err(|_| unreadable("not a blob".into()))?;
        daily_series::decode(user, series, first_day, |day, values| {
            if day <= last_day {
                each(user, day, values);
                count += 1;
            }
        })
        .map_err(|bad| unreadable(bad.why))?;
    }
    Ok(count)
}

/// [`for_each_day`] from the rows of the as-of view `daily_metrics`; a value is
/// read as every report reads a number (`frame`: text holding a number is that
/// number), and a row without a user or a day is skipped.
fn row_days(
    ctx: &Ctx<'_>,
    (low, high): (i64, i64),
    (first_day, last_day): (i64, i64),
    mut each: impl FnMut(i64, i64, &[Value; VALUES]),
) -> Result<usize, ReportError> {
    let table = "daily_metrics";
    let err = query_err(ctx, table, "days");
    let sql = format!(
        "SELECT user_id, day, {} FROM daily_metrics \
         WHERE day >= ?1 AND day <= ?2 AND user_id >= ?3 AND user_id <= ?4",
        COLUMNS.join(", ")
    );
    let mut stmt = ctx.conn.prepare_cached(&sql).map_err(&err)?;
    let bounds = [first_day, last_day].map(|d| day_text(d).unwrap_or_default());
    let mut rows = stmt
        .query((&bounds[0], &bounds[1], low, high))
        .map_err(&err)?;
    let mut count = 0;
    while let Some(row) = rows.next().map_err(&err)? {
        let misfit = |column: &str, (value, expected): frame::Misfit| ReportError::BadValue {
            site: SqlSite::boxed(ctx.report(), table, "days"),
            column: column.to_string(),
            value,
            expected,
        };
        let user = frame::coerce(Kind::Int, row.get_ref(0).map_err(&err)?)
            .map_err(|m| misfit("user_id", m))?;
        let day = frame::day_value(row.get_ref(1).map_err(&err)?).map_err(|m| misfit("day", m))?;
        let (ValueRef::Integer(user), Some(day)) = (user, day) else {
            continue;
        };
        let mut values = [Value::Null; VALUES];
        for (i, value) in values.iter_mut().enumerate() {
            let cell = frame::coerce(Kind::Real, row.get_ref(i + 2).map_err(&err)?)
                .map_err(|m| misfit(COLUMNS[i], m))?;
            *value = match cell {
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Real(f) => Value::Real(f),
                _ => Value::Null,
            };
        }
        each(user, day, &values);
        count += 1;
    }
    Ok(count)
}
