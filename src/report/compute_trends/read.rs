//! Reading the daily metrics: the one large input of the report (a year of days per
//! user), read on two connections at once when the mirror is large.

use crate::report::Ctx;
use crate::report::error::{ReportError, SqlSite, pl, unpanicked};
use crate::report::frame::{self, Kind};
use polars::prelude::*;
use rusqlite::types::Value;

/// Daily-metrics row counts above which the extract is read on two connections.
const SHARD_ABOVE: i64 = 200_000;

/// The columns the `daily` section must return.
pub(super) const DAILY_NEEDS: [(&str, Kind); 5] = [
    ("user_id", Kind::Int),
    ("day", Kind::Day),
    ("cpu_seconds", Kind::Real),
    ("gpu_seconds", Kind::Real),
    ("compute_seconds", Kind::Real),
];

/// Reads the `daily` section, on two connections at once when the mirror is large
/// (each reads one range of user ids through the primary key).
pub(super) fn read_daily(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let extract = ctx.extract;
    let sql = extract.part("daily")?;
    let query_err = |source| ReportError::Query {
        site: SqlSite::boxed(&extract.report, "main.daily_metrics", "size"),
        cause: source,
    };
    // Size and id range of the stored daily metrics (index lookups, not scans).
    let (rows, low, high): (i64, Option<i64>, Option<i64>) = ctx
        .conn
        .query_row(
            // daily_metrics is WITHOUT ROWID, so there is no cheap row count; one
            // year of days per user is the estimate. MIN and MAX go in separate
            // subqueries: together in one SELECT they make SQLite scan the table.
            "SELECT (SELECT COUNT(*) FROM main.users) * 365, \
                    (SELECT MIN(user_id) FROM main.daily_metrics), \
                    (SELECT MAX(user_id) FROM main.daily_metrics)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(query_err)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (Some(low), Some(high)) = (low, high) else {
        return ctx.read("daily", &DAILY_NEEDS);
    };
    if rows < SHARD_ABOVE || threads < 2 || high <= low {
        return ctx.read("daily", &DAILY_NEEDS);
    }
    let mid = low + (high - low) / 2 + 1;
    // The two ranges cover every row, whatever ids the section returns.
    let shards = [
        format!("SELECT * FROM (\n{sql}\n) WHERE user_id < :shard_split"),
        format!("SELECT * FROM (\n{sql}\n) WHERE user_id >= :shard_split OR user_id IS NULL"),
    ];
    let mut params: Vec<(&'static str, Value)> = crate::report::Ctx::params(ctx.as_of).to_vec();
    params.push((":shard_split", Value::Integer(mid)));
    // The second range is read on its own connection in another thread while this
    // thread reads the first on the report's connection.
    let (db, as_of, params) = (ctx.db, ctx.as_of, &params);
    let [low_range, high_range] = &shards;
    let (first, second) = std::thread::scope(|scope| {
        let other = scope.spawn(move || {
            let conn = crate::report::open(db, as_of)?;
            frame::read_sql(&conn, extract, "daily", high_range, params, &DAILY_NEEDS)
        });
        let first = frame::read_sql(ctx.conn, extract, "daily", low_range, params, &DAILY_NEEDS);
        let second = unpanicked(&extract.report, other.join());
        (first, second)
    });
    let mut out = first?;
    out.vstack_mut_owned(second?)
        .map_err(pl(&extract.report, "joining shards"))?;
    Ok(out)
}
