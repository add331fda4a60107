//! `compute_trends`: compute time per user, per white label and per organization, by
//! day, ISO week and calendar month, with rolling 7- and 30-day sums and the change
//! against the previous period.
//!
//! Users and white labels come from daily metrics (a day's usage); organizations from
//! the mirror's history of project information (the growth of compute used). Each
//! entity's series is made dense (one row per calendar day, from its first day to the
//! as-of date T: a user whose records stop before T used nothing since) so fixed
//! windows of 7 and 30 rows are 7 and 30 days, and the previous row of a series is the
//! previous day (or week, or month). Output is bounded: day rows for the last 30 days,
//! week rows for the last 13 ISO weeks, month rows for the last 12 months. The day,
//! week and month that contain T are unfinished (`period_complete` false); the week's
//! and month's change compares the same number of leading days of the period before.
//! Rolling sums and changes are computed on the whole series
//! before that filter; days older than anything an output row depends on (13 months
//! and 62 days) are dropped first, which changes no value.
//!
//! The users' side (daily metrics, read in two shards on a large mirror) and the
//! organizations' side (history) share nothing until the names are joined, so the
//! organizations' side runs on its own connection in another thread.
//!
//! Modules: `read` (the daily metrics), `series` (dense series), `windows` (rolling
//! sums and period totals).

mod read;
mod series;
#[cfg(test)]
mod tests;
mod windows;

use crate::report::Ctx;
use crate::report::cols::{add_day_texts, null_of, project, round_columns};
use crate::report::dates::{month_start, months_back, week_start};
use crate::report::error::{ReportError, pl, unpanicked};
use crate::report::frame::Kind;
use polars::prelude::*;
use series::{Calendar, Fill, SeriesTable, densify, whitelabel_days};
use windows::{back, compare_elapsed, period_columns, periods, rolling};

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "entity_type",
    "entity_id",
    "entity_name",
    "period",
    "period_start",
    "period_complete",
    "cpu_seconds",
    "gpu_seconds",
    "compute_seconds",
    "compute_growth_seconds",
    "rolling_7d",
    "rolling_30d",
    "rolling_30d_prev",
    "change_pct",
];

/// The kinds of entity a series belongs to, in output order. Frames carry the kind
/// as its [`Entity::code`] (polars sorts and joins on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entity {
    /// A user: usage per day, from daily metrics.
    User,
    /// A white label: the sum of its users.
    Whitelabel,
    /// An organization: the growth of compute used, from the mirror's history.
    Organization,
}

impl Entity {
    const ALL: [Entity; 3] = [Entity::User, Entity::Whitelabel, Entity::Organization];

    fn code(self) -> i64 {
        self as i64
    }

    /// The `entity_type` written in the report.
    fn name(self) -> &'static str {
        match self {
            Entity::User => "user",
            Entity::Whitelabel => "whitelabel",
            Entity::Organization => "organization",
        }
    }
}

const VALUES: [&str; 3] = ["cpu_seconds", "gpu_seconds", "compute_seconds"];

/// Period kinds, in output order.
const PERIODS: [&str; 3] = ["day", "week", "month"];

/// The columns every dense series has once stacked.
fn dense_columns() -> [Expr; 7] {
    [
        col("series"),
        col("day"),
        col("week_start"),
        col("month_start"),
        col("cpu_seconds").cast(DataType::Float64),
        col("gpu_seconds").cast(DataType::Float64),
        col("compute_seconds").cast(DataType::Float64),
    ]
}

/// The days the report looks at: T and the 13 months and 62 days before it.
struct Span {
    horizon: i64,
    today: i64,
    calendar: Calendar,
}

pub fn build(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let today = ctx.today;
    let horizon = months_back(today, 13).unwrap_or(today - 400) - 62;
    let span = Span {
        horizon,
        today,
        calendar: Calendar::new(horizon - 1, today),
    };
    let (people, orgs) = std::thread::scope(|scope| {
        let (db, as_of, thresholds, extract) = (ctx.db, ctx.as_of, ctx.thresholds, ctx.extract);
        let span = &span;
        let orgs = scope.spawn(move || {
            let conn = crate::report::open(db, as_of)?;
            let ctx = Ctx {
                conn: &conn,
                db,
                as_of,
                today,
                thresholds,
                extract,
            };
            organization_series(&ctx, span)
        });
        let people = people_series(ctx, span);
        let orgs = unpanicked(report, orgs.join());
        (people, orgs)
    });
    let (people, users, whitelabels, mut table) = people?;
    let (orgs, org_table, organizations) = orgs?;
    let offset = table.append(org_table);
    let all = concat(
        [
            people,
            orgs.with_column(col("series") + lit(offset))
                .select(dense_columns()),
        ],
        UnionArgs::default(),
    )
    .map_err(pl(report, "stacking series"))?;
    let names = table.frame(report, users, whitelabels, organizations)?;
    finish(report, all, names, today)
}

/// What the users' side gives: their and their white labels' dense series (stacked),
/// the `users` and `whitelabels` sections (for names), and the series numbers used.
type People = (LazyFrame, DataFrame, DataFrame, SeriesTable);

/// Users' and white labels' dense daily series, from the daily metrics.
fn people_series(ctx: &Ctx<'_>, span: &Span) -> Result<People, ReportError> {
    let report = ctx.report();
    let err = |step| pl(report, step);
    let daily = read::read_daily(ctx)?;
    let users = ctx.read(
        "users",
        &[
            ("user_id", Kind::Int),
            ("user_name", Kind::Text),
            ("whitelabel_id", Kind::Int),
        ],
    )?;
    let whitelabels = ctx.read(
        "whitelabels",
        &[
            ("whitelabel_id", Kind::Int),
            ("whitelabel_name", Kind::Text),
        ],
    )?;
    let (horizon, today) = (span.horizon, span.today);

    // Filtering copies every column; skip it when nothing would be dropped.
    let in_range = || -> PolarsResult<bool> {
        let ids = daily.column("user_id")?.i64()?;
        let days = daily.column("day")?.i64()?;
        Ok(ids.null_count() == 0
            && days.null_count() == 0
            && days.min().is_none_or(|d| d >= horizon)
            && days.max().is_none_or(|d| d <= today))
    };
    let recent = if in_range().map_err(err("checking the days"))? {
        daily.lazy()
    } else {
        daily.lazy().filter(
            col("user_id")
                .is_not_null()
                .and(col("day").gt_eq(lit(horizon)))
                .and(col("day").lt_eq(lit(today))),
        )
    };
    // Users: their own daily metrics (read in key order, so usually sorted already).
    let user_rows = recent
        .select([
            col("user_id").alias("entity_id"),
            col("day"),
            col("cpu_seconds"),
            col("gpu_seconds"),
            col("compute_seconds"),
        ])
        .collect()
        .map_err(err("selecting user days"))?;
    let user_rows = if is_sorted(&user_rows) {
        user_rows
    } else {
        sorted(user_rows.lazy())
            .collect()
            .map_err(err("sorting user days"))?
    };

    let mut table = SeriesTable::default();
    // A user whose last record is before T used nothing since: the series runs on in
    // zeros to T, so the windows at T (and the white label totals) count those days.
    let users_dense = densify(
        report,
        &user_rows,
        &VALUES,
        Fill::Zero,
        Some(today),
        Entity::User,
        &span.calendar,
        &mut table,
    )?;
    let whitelabel_of = whitelabel_lookup(&users).map_err(err("white label of each user"))?;
    let wl_dense = whitelabel_days(
        report,
        &user_rows,
        &whitelabel_of,
        &span.calendar,
        &mut table,
    )?;
    let stacked = concat(
        [
            users_dense.lazy().select(dense_columns()),
            wl_dense.lazy().select(dense_columns()),
        ],
        UnionArgs::default(),
    )
    .map_err(err("stacking series"))?;
    Ok((stacked, users, whitelabels, table))
}

/// Organizations' dense daily series (their own series numbers, from 0), with the
/// `organizations` section (for names).
fn organization_series(
    ctx: &Ctx<'_>,
    span: &Span,
) -> Result<(LazyFrame, SeriesTable, DataFrame), ReportError> {
    let report = ctx.report();
    let err = |step| pl(report, step);
    let conn = crate::report::open(ctx.db, ctx.as_of)?;
    let ctx = Ctx {
        conn: &conn,
        ..*ctx
    };
    let organizations = ctx.read(
        "organizations",
        &[
            ("organization_id", Kind::Int),
            ("organization_name", Kind::Text),
        ],
    )?;
    let events = ctx.read(
        "org_events",
        &[
            ("organization_id", Kind::Int),
            ("day", Kind::Day),
            ("delta", Kind::Real),
        ],
    )?;
    let (horizon, today) = (span.horizon, span.today);
    // The level of compute used at the end of each day with a change (history older
    // than the horizon folds into one starting level).
    let levels = events
        .lazy()
        .filter(
            col("organization_id")
                .is_not_null()
                .and(col("day").is_not_null())
                .and(col("day").lt_eq(lit(today))),
        )
        .with_column(
            when(col("day").lt(lit(horizon)))
                .then(lit(horizon - 1))
                .otherwise(col("day"))
                .alias("day"),
        )
        .group_by([col("organization_id").alias("entity_id"), col("day")])
        .agg([col("delta").sum()]);
    let levels = sorted(levels)
        .with_column(
            col("delta")
                .cum_sum(false)
                .over([col("entity_id")])
                .map_err(err("accumulating levels"))?
                .alias("level"),
        )
        .collect()
        .map_err(err("accumulating organization levels"))?;
    let mut table = SeriesTable::default();
    let dense = densify(
        report,
        &levels,
        &["level"],
        Fill::Forward,
        Some(today),
        Entity::Organization,
        &span.calendar,
        &mut table,
    )?;
    // An organization's day is the growth of its level; its first day has none.
    let dense = dense.lazy().with_columns([
        null_of(DataType::Float64).alias("cpu_seconds"),
        null_of(DataType::Float64).alias("gpu_seconds"),
        (col("level") - back(col("level"), 1)).alias("compute_seconds"),
    ]);
    Ok((dense, table, organizations))
}

fn sorted(lf: LazyFrame) -> LazyFrame {
    lf.sort(["entity_id", "day"], SortMultipleOptions::default())
}

/// From the stacked dense series to the output rows: windows, the day, week and
/// month rows, names, changes, rounding.
fn finish(
    report: &str,
    all: LazyFrame,
    names: DataFrame,
    today: i64,
) -> Result<DataFrame, ReportError> {
    let err = |step| pl(report, step);
    let base = rolling(all).collect().map_err(err("rolling sums"))?;
    let days = base
        .clone()
        .lazy()
        .filter(col("day").gt(lit(today - 30)))
        .with_columns([lit(0i64).alias("period_order"), col("day").alias("start")])
        .select(period_columns());
    // The week and the month that contain T run only to T: their change compares the
    // same number of leading days of the period before (a month's capped at its length).
    let week_now = week_start(today);
    let first_week = week_now - 7 * 12;
    let weeks = compare_elapsed(
        periods(&base, "week_start", first_week - 7, first_week, 1),
        &base,
        week_now,
        week_now - 7,
        today - 7,
    );
    let month_now = month_start(today).unwrap_or(today);
    let last_month = months_back(today, 1).unwrap_or(month_now - 31);
    let first_month = months_back(today, 11).unwrap_or(today - 335);
    let month_before = months_back(today, 12).unwrap_or(first_month - 31);
    let months = compare_elapsed(
        periods(&base, "month_start", month_before, first_month, 2),
        &base,
        month_now,
        last_month,
        (last_month + (today - month_now)).min(month_now - 1),
    );

    let kind_text = Entity::ALL
        .iter()
        .rev()
        .fold(null_of(DataType::String), |rest, e| {
            when(col("kind").eq(lit(e.code())))
                .then(lit(e.name()))
                .otherwise(rest)
        });
    // An organization's value is the growth of its compute used, not compute time
    // spent in the period: it gets a column of its own.
    let organization = col("kind").eq(lit(Entity::Organization.code()));
    let period_text = when(col("period_order").eq(lit(0i64)))
        .then(lit(PERIODS[0]))
        .when(col("period_order").eq(lit(1i64)))
        .then(lit(PERIODS[1]))
        .otherwise(lit(PERIODS[2]));
    // Only the periods that contain T are unfinished (every row starts on or before T).
    let period_complete = when(col("period_order").eq(lit(0i64)))
        .then(col("start").lt(lit(today)))
        .when(col("period_order").eq(lit(1i64)))
        .then(col("start").lt(lit(week_now)))
        .otherwise(col("start").lt(lit(month_now)));
    let prev = col("prev");
    let magnitude = when(prev.clone().lt(lit(0.0)))
        .then(-prev.clone())
        .otherwise(prev.clone());
    let mut out = concat([days, weeks, months], UnionArgs::default())
        .map_err(err("stacking periods"))?
        .join(
            names.lazy(),
            [col("series")],
            [col("series")],
            JoinArgs::new(JoinType::Left),
        )
        .with_columns([
            when(prev.clone().gt(lit(0.0)).or(prev.lt(lit(0.0))))
                .then(lit(100.0) * (col("compute_seconds") - col("prev")) / magnitude)
                .otherwise(null_of(DataType::Float64))
                .alias("change_pct"),
            kind_text.alias("entity_type"),
            period_text.alias("period"),
            period_complete.alias("period_complete"),
            when(organization.clone())
                .then(col("compute_seconds"))
                .otherwise(null_of(DataType::Float64))
                .alias("compute_growth_seconds"),
            when(organization)
                .then(null_of(DataType::Float64))
                .otherwise(col("compute_seconds"))
                .alias("compute_seconds"),
        ])
        .sort(
            ["series", "period_order", "start"],
            SortMultipleOptions::default(),
        )
        .collect()
        .map_err(err("finishing periods"))?;
    add_day_texts(report, &mut out, "start", "period_start")?;
    round_columns(
        report,
        &mut out,
        &[
            ("cpu_seconds", 3),
            ("gpu_seconds", 3),
            ("compute_seconds", 3),
            ("compute_growth_seconds", 3),
            ("rolling_7d", 3),
            ("rolling_30d", 3),
            ("rolling_30d_prev", 3),
            ("change_pct", 2),
        ],
    )?;
    project(report, &out, COLUMNS)
}

/// user id → white label id, from the `users` section.
fn whitelabel_lookup(users: &DataFrame) -> PolarsResult<std::collections::HashMap<i64, i64>> {
    let ids = users.column("user_id")?.i64()?;
    let whitelabels = users.column("whitelabel_id")?.i64()?;
    Ok(ids
        .iter()
        .zip(whitelabels.iter())
        .filter_map(|(u, w)| Some((u?, w?)))
        .collect())
}

/// Whether rows are in (entity_id, day) order, nulls aside.
fn is_sorted(df: &DataFrame) -> bool {
    let (Ok(ids), Ok(days)) = (
        df.column("entity_id").and_then(|c| c.i64()),
        df.column("day").and_then(|c| c.i64()),
    ) else {
        return false;
    };
    let mut last: Option<(i64, i64)> = None;
    for pair in ids.iter().zip(days.iter()) {
        let (Some(id), Some(day)) = pair else {
            return false;
        };
        if last.is_some_and(|prev| prev >= (id, day)) {
            return false;
        }
        last = Some((id, day));
    }
    true
}
