//! Reading the daily metrics, the one large input of the report (a year of days per
//! user): only the five columns the report uses and the days from the horizon to T,
//! one range of user ids at a time (each range a search of the primary key), so what
//! is held at once is one chunk of users, not the table.

use crate::mirror::{asof, compute_series};
use crate::report::Ctx;
use crate::report::dates::day_text;
use crate::report::error::{ReportError, SqlSite};
use crate::report::frame::{self, Kind};
use crate::report::sql::Extract;
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
    /// The packed series in `daily_compute` (`crate::mirror::compute_series`), one
    /// row per user. They hold exactly the live rows of `main.daily_metrics`, so they
    /// stand for the `daily` section only when it is the shipped one, the as-of views
    /// read the main tables (no run observed the service after the cut-off), and
    /// every user's days could be packed.
    Packed,
}

/// Which [`Source`] the report can read from.
pub(super) fn source(ctx: &Ctx<'_>) -> Result<Source, ReportError> {
    let shipped = crate::report::sql::embedded(&ctx.extract.report)
        .map(|text| Extract::parse(&ctx.extract.report, String::new(), text));
    let shipped_daily = shipped.as_ref().and_then(|e| e.part("daily").ok());
    if shipped_daily != Some(ctx.extract.part("daily")?) {
        return Ok(Source::Rows);
    }
    let site = || SqlSite::boxed(&ctx.extract.report, "main.daily_compute", "source");
    let history = asof::history_current_at(ctx.conn, &asof::cutoff(ctx.as_of));
    let unpacked = ctx.conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM main.daily_compute WHERE series IS NULL)",
        [],
        |row| row.get::<_, bool>(0),
    );
    match (history, unpacked) {
        (Ok(false), Ok(false)) => Ok(Source::Packed),
        (Ok(_), Ok(_)) => Ok(Source::Rows),
        (Err(cause), _) | (_, Err(cause)) => Err(ReportError::Query {
            site: site(),
            cause,
        }),
    }
}

/// Reads the days of the users in `range` from `first_day` to T, handing each record
/// with a user and a day to `record` as `(user, day, [cpu, gpu, compute])`, a user's
/// days in day order.
pub(super) fn read_chunk(
    ctx: &Ctx<'_>,
    source: Source,
    range: IdRange,
    first_day: i64,
    record: impl FnMut(i64, i64, [Option<f64>; 3]),
) -> Result<usize, ReportError> {
    match source {
        Source::Rows => read_rows(ctx, range, first_day, record),
        Source::Packed => read_packed(ctx, range, first_day, record),
    }
}

/// [`read_chunk`] from the packed series. The total is worked out as the shipped
/// `daily` section does: compute time as sent, else CPU time plus 3 x GPU time.
fn read_packed(
    ctx: &Ctx<'_>,
    range: IdRange,
    first_day: i64,
    mut record: impl FnMut(i64, i64, [Option<f64>; 3]),
) -> Result<usize, ReportError> {
    let site = |part: &str| SqlSite::boxed(&ctx.extract.report, "main.daily_compute", part);
    let query_err = |cause| ReportError::Query {
        site: site("series"),
        cause,
    };
    let mut stmt = ctx
        .conn
        .prepare_cached(
            "SELECT user_id, series FROM main.daily_compute              WHERE user_id BETWEEN ?1 AND ?2 AND series IS NOT NULL ORDER BY user_id",
        )
        .map_err(query_err)?;
    let last = range.1.map_or(i64::MAX, |high| high - 1);
    let bounds = (range.0.unwrap_or(i64::MIN), last);
    let mut rows = stmt.query(bounds).map_err(query_err)?;
    let mut count = 0;
    let today = ctx.today;
    while let Some(row) = rows.next().map_err(query_err)? {
        let user: i64 = row.get(0).map_err(query_err)?;
        let unreadable = |why: String| ReportError::BadValue {
            site: site("series"),
            column: "series".into(),
            value: format!("user {user}: {why}"),
            expected: "a packed daily compute series",
        };
        let series = row.get_ref(1).map_err(query_err)?;
        let series = series
            .as_blob()
            .map_err(|_| unreadable("not a blob".into()))?;
        compute_series::decode(user, series, |day, [cpu, gpu, compute]| {
            if (first_day..=today).contains(&day) {
                let total = compute.or_else(|| Some(cpu? + 3.0 * gpu?));
                record(user, day, [cpu, gpu, total]);
                count += 1;
            }
        })
        .map_err(|bad| unreadable(bad.why))?;
    }
    Ok(count)
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
