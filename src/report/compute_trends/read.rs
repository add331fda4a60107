//! Reading the daily metrics, the one large input of the report (a year of days per
//! user): only the columns the report uses and the days from the horizon to T, one
//! range of user ids at a time, so what is held at once is one chunk of users, not the
//! table. They come from the packed series (`crate::report::packed`) when those stand
//! for the `daily` section, else from the section's rows (each range a search of the
//! primary key).

use crate::calendar::day_text;
use crate::mirror::daily_series::{COMPUTE, CPU, GPU};
use crate::report::error::{ReportError, SqlSite};
use crate::report::frame::{self, Kind};
use crate::report::{Ctx, packed};
use rusqlite::types::Value;

/// About this many users' days are read (and held) at once.
const CHUNK_USERS: i64 = 512;

/// The columns the `daily` section must return, in the order a record is read.
pub(super) const DAILY_NEEDS: [(&str, Kind); 5] = [
    ("user_id", Kind::Int),
    ("day", Kind::Day),
    ("cpu_seconds", Kind::Real),
    ("gpu_seconds", Kind::Real),
    ("compute_seconds", Kind::Real),
];

/// A range of user ids, `[low, high)`; an open end reaches every id on that side.
pub(super) type IdRange = (Option<i64>, Option<i64>);

/// A statement and its named parameters.
pub(super) type Query = (String, Vec<(&'static str, Value)>);

/// Ranges of user ids that together cover every row, each holding about
/// [`CHUNK_USERS`] users (user ids as spread as the stored daily metrics' are).
pub(super) fn chunks(ctx: &Ctx<'_>) -> Result<Vec<IdRange>, ReportError> {
    let extract = ctx.extract;
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
        .map_err(|source| ReportError::Query {
            site: SqlSite::boxed(&extract.report, "main.daily_metrics", "size"),
            cause: source,
        })?;
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

/// Where the users' days are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The `daily` section's rows: one row per user and day.
    Rows,
    /// The packed series (`crate::report::packed`), when they stand for the section.
    Packed,
}

/// Which [`Source`] the report reads from.
pub(super) fn source(ctx: &Ctx<'_>) -> Result<Source, ReportError> {
    Ok(if packed::usable(ctx, "daily")? {
        Source::Packed
    } else {
        Source::Rows
    })
}

/// Reads the days of the users in `range` from `first_day` to T, handing each record
/// with a user and a day to `record` as `(user, day, [cpu, gpu, compute])`, users in
/// id order (a user's days in any order).
pub(super) fn read_chunk(
    ctx: &Ctx<'_>,
    source: Source,
    range: IdRange,
    first_day: i64,
    mut record: impl FnMut(i64, i64, [Option<f64>; 3]),
) -> Result<usize, ReportError> {
    if source == Source::Rows {
        return read_rows(ctx, range, first_day, record);
    }
    let users = (
        range.0.unwrap_or(i64::MIN),
        range.1.map_or(i64::MAX, |high| high - 1),
    );
    packed::for_each_day(ctx, users, (first_day, ctx.today), |user, day, values| {
        let [cpu, gpu, compute] = [CPU, GPU, COMPUTE].map(|i| values[i].number());
        // As the shipped `daily` section: compute time as sent, else CPU + 3 x GPU.
        let total = compute.or_else(|| Some(cpu? + 3.0 * gpu?));
        record(user, day, [cpu, gpu, total]);
    })
}

/// [`read_chunk`] from the `daily` section's rows.
fn read_rows(
    ctx: &Ctx<'_>,
    range: IdRange,
    first_day: i64,
    mut record: impl FnMut(i64, i64, [Option<f64>; 3]),
) -> Result<usize, ReportError> {
    let (sql, params) = chunk_query(ctx, range, first_day)?;
    frame::for_each_row(
        ctx.conn,
        ctx.extract,
        "daily",
        &sql,
        &params,
        &DAILY_NEEDS,
        |cells| {
            if let [Some(user), Some(day), cpu, gpu, compute] = *cells {
                record(user as i64, day as i64, [cpu, gpu, compute]);
            }
        },
    )
}

/// The statement that reads one range of users (the `daily` section, narrowed to
/// the range and the days from `first_day`), and its parameters.
pub(super) fn chunk_query(
    ctx: &Ctx<'_>,
    range: IdRange,
    first_day: i64,
) -> Result<Query, ReportError> {
    let sql = ctx.extract.part("daily")?;
    let mut filter = String::from("day >= :first_day");
    let mut params: Vec<(&'static str, Value)> = Ctx::params(ctx.as_of).to_vec();
    params.push((
        ":first_day",
        Value::Text(day_text(first_day).unwrap_or_default()),
    ));
    if let Some(low) = range.0 {
        filter.push_str(" AND user_id >= :chunk_low");
        params.push((":chunk_low", Value::Integer(low)));
    }
    if let Some(high) = range.1 {
        filter.push_str(" AND user_id < :chunk_high");
        params.push((":chunk_high", Value::Integer(high)));
    }
    Ok((format!("SELECT * FROM (\n{sql}\n) WHERE {filter}"), params))
}
