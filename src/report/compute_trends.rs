//! `compute_trends`: compute time per user, per white label and per organization, by
//! day, ISO week and calendar month, with rolling 7- and 30-day sums and the change
//! against the previous period.
//!
//! Users and white labels come from daily metrics (a day's usage); organizations from
//! the mirror's history of project information (the growth of compute used). Each
//! entity's series is made dense (one row per calendar day) so fixed windows of 7 and
//! 30 rows are 7 and 30 days, and the previous row of a series is the previous day
//! (or week, or month). Output is bounded: day rows for the last 30 days, week rows for
//! the last 13 ISO weeks, month rows for the last 12 months (the current week and month
//! run up to the as-of date). Rolling sums and changes are computed on the whole series
//! before that filter; days older than anything an output row depends on (13 months
//! and 62 days) are dropped first, which changes no value.

use crate::report::Ctx;
use crate::report::cols::{add_day_texts, null_of, project, round_columns};
use crate::report::dates::{month_start, months_back, week_start};
use crate::report::error::{ReportError, SqlSite, pl};
use crate::report::frame::{self, Kind};
use polars::prelude::*;
use rusqlite::types::Value;

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "entity_type",
    "entity_id",
    "entity_name",
    "period",
    "period_start",
    "cpu_seconds",
    "gpu_seconds",
    "compute_seconds",
    "rolling_7d",
    "rolling_30d",
    "rolling_30d_prev",
    "change_pct",
];

/// Entity kinds, in output order.
const KINDS: [&str; 3] = ["user", "whitelabel", "organization"];
const USER: i64 = 0;
const WHITELABEL: i64 = 1;
const ORGANIZATION: i64 = 2;

const VALUES: [&str; 3] = ["cpu_seconds", "gpu_seconds", "compute_seconds"];

/// Period kinds, in output order.
const PERIODS: [&str; 3] = ["day", "week", "month"];

/// Daily-metrics row counts above which the extract is read on two connections.
const SHARD_ABOVE: i64 = 200_000;

/// How a dense series fills the days it has no row for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// A flow (usage per day): a missing day used nothing.
    Zero,
    /// A level (compute used so far): a missing day keeps the last level.
    Forward,
}

const DAILY_NEEDS: [(&str, Kind); 5] = [
    ("user_id", Kind::Int),
    ("day", Kind::Day),
    ("cpu_seconds", Kind::Real),
    ("gpu_seconds", Kind::Real),
    ("compute_seconds", Kind::Real),
];

pub fn build(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let today = ctx.today;
    let horizon = months_back(today, 13).unwrap_or(today - 400) - 62;
    let err = |step| pl(report, step);

    let daily = read_daily(ctx)?;
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
    let sort = |lf: LazyFrame| lf.sort(["entity_id", "day"], SortMultipleOptions::default());

    // Users: their own daily metrics (read in key order, so usually sorted already).
    let user_rows = recent
        .clone()
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
        sort(user_rows.lazy())
            .collect()
            .map_err(err("sorting user days"))?
    };

    // White labels: the sum of their users' days. Each day row gets its user's white
    // label by a lookup (cheaper than joining the 1.8M rows of a large mirror).
    let whitelabel_of = whitelabel_lookup(&users).map_err(err("white label of each user"))?;
    let row_whitelabel: Vec<Option<i64>> = user_rows
        .column("entity_id")
        .and_then(|c| c.i64().cloned())
        .map_err(err("white label of each day"))?
        .iter()
        .map(|user| user.and_then(|u| whitelabel_of.get(&u).copied()))
        .collect();
    let mut with_whitelabel = user_rows.clone();
    with_whitelabel
        .with_column(frame::Nums::from(row_whitelabel).into_column("whitelabel_id"))
        .map_err(err("white label of each day"))?;
    let wl_rows = sort(
        with_whitelabel
            .lazy()
            .filter(col("whitelabel_id").is_not_null())
            .group_by([col("whitelabel_id").alias("entity_id"), col("day")])
            .agg([
                col("cpu_seconds").sum(),
                col("gpu_seconds").sum(),
                col("compute_seconds").sum(),
            ]),
    )
    .collect()
    .map_err(err("summing white label days"))?;

    // Organizations: the level of compute used at the end of each day with a change
    // (history older than the horizon folds into one starting level).
    let org_levels = events
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
    let org_levels = sort(org_levels)
        .with_column(
            col("delta")
                .cum_sum(false)
                .over([col("entity_id")])
                .map_err(err("accumulating levels"))?
                .alias("level"),
        )
        .collect()
        .map_err(err("accumulating organization levels"))?;

    let calendar = Calendar::new(horizon - 1, today);
    let mut series = SeriesTable::default();
    let users_dense = densify(
        report,
        &user_rows,
        &VALUES,
        Fill::Zero,
        None,
        USER,
        &calendar,
        &mut series,
    )?;
    let wl_dense = densify(
        report,
        &wl_rows,
        &VALUES,
        Fill::Zero,
        None,
        WHITELABEL,
        &calendar,
        &mut series,
    )?;
    let org_dense = densify(
        report,
        &org_levels,
        &["level"],
        Fill::Forward,
        Some(today),
        ORGANIZATION,
        &calendar,
        &mut series,
    )?;

    // The sparse inputs are not needed any more: give their memory back before the
    // windows allocate theirs.
    drop((user_rows, wl_rows, org_levels));

    // Series are dense and sorted, so "the same series `n` rows up" is "n days earlier".
    let same_series = |n: i64| col("series").eq(col("series").shift(lit(n)));
    let back = |e: Expr, n: i64| {
        when(same_series(n))
            .then(e.shift(lit(n)))
            .otherwise(null_of(DataType::Float64))
    };
    // An organization's day is the growth of its level; its first day has none.
    let org_dense = org_dense.lazy().with_columns([
        null_of(DataType::Float64).alias("cpu_seconds"),
        null_of(DataType::Float64).alias("gpu_seconds"),
        (col("level") - back(col("level"), 1)).alias("compute_seconds"),
    ]);
    let dense_columns = [
        col("series"),
        col("day"),
        col("week_start"),
        col("month_start"),
        col("cpu_seconds").cast(DataType::Float64),
        col("gpu_seconds").cast(DataType::Float64),
        col("compute_seconds").cast(DataType::Float64),
    ];
    let all = concat(
        [
            users_dense.lazy().select(dense_columns.clone()),
            wl_dense.lazy().select(dense_columns.clone()),
            org_dense.select(dense_columns),
        ],
        UnionArgs::default(),
    )
    .map_err(err("stacking series"))?;

    let window = |size| RollingOptionsFixedWindow {
        window_size: size,
        min_periods: 1,
        ..Default::default()
    };
    let over = |e: Expr| e.over([col("series")]).map_err(err("windows"));
    let base = all
        .with_columns([
            over(col("compute_seconds").rolling_sum(window(7)))?.alias("rolling_7d"),
            over(col("compute_seconds").rolling_sum(window(30)))?.alias("rolling_30d"),
            back(col("compute_seconds"), 1).alias("prev"),
        ])
        .with_column(back(col("rolling_30d"), 30).alias("rolling_30d_prev"))
        .collect()
        .map_err(err("rolling sums"))?;

    let days = base
        .clone()
        .lazy()
        .filter(col("day").gt(lit(today - 30)))
        .with_columns([lit(0i64).alias("period_order"), col("day").alias("start")])
        .select(period_columns());
    let first_week = week_start(today) - 7 * 12;
    let weeks = periods(&base, "week_start", first_week - 7, first_week, 1);
    let first_month = months_back(today, 11).unwrap_or(today - 335);
    let month_before = months_back(today, 12).unwrap_or(first_month - 31);
    let months = periods(&base, "month_start", month_before, first_month, 2);

    let kind_text = when(col("kind").eq(lit(USER)))
        .then(lit(KINDS[0]))
        .when(col("kind").eq(lit(WHITELABEL)))
        .then(lit(KINDS[1]))
        .otherwise(lit(KINDS[2]));
    let period_text = when(col("period_order").eq(lit(0i64)))
        .then(lit(PERIODS[0]))
        .when(col("period_order").eq(lit(1i64)))
        .then(lit(PERIODS[1]))
        .otherwise(lit(PERIODS[2]));
    let prev = col("prev");
    let magnitude = when(prev.clone().lt(lit(0.0)))
        .then(-prev.clone())
        .otherwise(prev.clone());
    let names = series.frame(report, users, whitelabels, organizations)?;
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
            ("rolling_7d", 3),
            ("rolling_30d", 3),
            ("rolling_30d_prev", 3),
            ("change_pct", 2),
        ],
    )?;
    project(report, &out, COLUMNS)
}

/// Reads the `daily` section, on two connections at once when the mirror is large
/// (each reads one range of user ids through the primary key).
fn read_daily(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let extract = ctx.extract;
    let sql = extract.part("daily")?;
    let query_err = |source| ReportError::Query {
        site: SqlSite::boxed(&extract.report, "main.daily_metrics", "size"),
        source,
    };
    // Size and id range of the stored daily metrics (index lookups, not scans).
    let (rows, low, high): (i64, Option<i64>, Option<i64>) = ctx
        .conn
        .query_row(
            // daily_metrics is WITHOUT ROWID, so there is no cheap row count; one
            // year of days per user is the estimate (MIN/MAX use the key: instant).
            "SELECT (SELECT COUNT(*) FROM main.users) * 365, MIN(user_id), MAX(user_id) FROM main.daily_metrics",
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
        let second = other.join().unwrap_or_else(|_| {
            Err(ReportError::Panicked {
                report: extract.report.clone(),
            })
        });
        (first, second)
    });
    let mut out = first?;
    out.vstack_mut_owned(second?)
        .map_err(pl(&extract.report, "joining shards"))?;
    Ok(out)
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

fn period_columns() -> [Expr; 10] {
    [
        col("series"),
        col("period_order"),
        col("start"),
        col("cpu_seconds"),
        col("gpu_seconds"),
        col("compute_seconds"),
        col("rolling_7d"),
        col("rolling_30d"),
        col("rolling_30d_prev"),
        col("prev"),
    ]
}

/// Week or month rows: totals per period, the rolling sums at the period's last day,
/// and the previous period's total. Periods from `read_from` on are summed (so the
/// one before `first` is there for the change); those from `first` on are kept.
///
/// No group-by: `base` is dense and sorted by (series, day), so each (series, period)
/// is a block of consecutive rows, and a block's total is the difference of running
/// sums between its last row and the previous block's last row. That holds on any
/// selection of whole blocks, such as the periods from `read_from` on.
fn periods(base: &DataFrame, start: &str, read_from: i64, first: i64, order: i64) -> LazyFrame {
    let block_end = col("series")
        .neq(col("series").shift(lit(-1)))
        .or(col(start).neq(col(start).shift(lit(-1))))
        .fill_null(lit(true));
    let running = |c: &str| {
        col(c)
            .fill_null(lit(0.0))
            .cum_sum(false)
            .alias(format!("run_{c}"))
    };
    let running_nulls = |c: &str| {
        col(c)
            .is_null()
            .cast(DataType::Int64)
            .cum_sum(false)
            .alias(format!("nulls_{c}"))
    };
    let diff = |c: &str| (col(c) - col(c).shift(lit(1)).fill_null(lit(0))).alias(c.to_string());
    // A block whose values are all unknown (an organization's CPU/GPU split) stays unknown.
    let total = |c: &str| {
        when(col(format!("nulls_{c}")).eq(col("rows")))
            .then(null_of(DataType::Float64))
            .otherwise(col(format!("run_{c}")))
            .alias(c.to_string())
    };
    let mut running_cols: Vec<Expr> = VALUES.iter().map(|c| running(c)).collect();
    running_cols.extend(VALUES.iter().map(|c| running_nulls(c)));
    running_cols.push(
        col("day")
            .is_not_null()
            .cast(DataType::Int64)
            .cum_sum(false)
            .alias("rows"),
    );
    running_cols.push(block_end.alias("block_end"));
    let mut diffs: Vec<Expr> = VALUES.iter().map(|c| diff(&format!("run_{c}"))).collect();
    diffs.extend(VALUES.iter().map(|c| diff(&format!("nulls_{c}"))));
    diffs.push(diff("rows"));
    base.clone()
        .lazy()
        .filter(col(start).gt_eq(lit(read_from)))
        .with_columns(running_cols)
        .filter(col("block_end"))
        .with_columns(diffs)
        .with_columns(VALUES.iter().map(|c| total(c)).collect::<Vec<_>>())
        .with_column(
            when(col("series").eq(col("series").shift(lit(1))))
                .then(col("compute_seconds").shift(lit(1)))
                .otherwise(null_of(DataType::Float64))
                .alias("prev"),
        )
        .filter(col(start).gt_eq(lit(first)))
        .with_columns([lit(order).alias("period_order"), col(start).alias("start")])
        .select(period_columns())
}

/// Week and month starts of every day from the horizon to T.
struct Calendar {
    first: i64,
    months: Vec<i64>,
}

impl Calendar {
    fn new(first: i64, last: i64) -> Self {
        let months = (first..=last.max(first))
            .map(|d| month_start(d).unwrap_or(d))
            .collect();
        Calendar { first, months }
    }

    fn month_start(&self, day: i64) -> i64 {
        usize::try_from(day - self.first)
            .ok()
            .and_then(|i| self.months.get(i).copied())
            .or_else(|| month_start(day))
            .unwrap_or(day)
    }
}

/// Which entity each series number is.
#[derive(Default)]
struct SeriesTable {
    series: Vec<i64>,
    kinds: Vec<i64>,
    ids: Vec<i64>,
}

impl SeriesTable {
    fn add(&mut self, kind: i64, id: i64) -> i64 {
        let n = self.series.len() as i64;
        self.series.push(n);
        self.kinds.push(kind);
        self.ids.push(id);
        n
    }

    /// `(series, kind, entity_id, entity_name)`.
    fn frame(
        &self,
        report: &str,
        users: DataFrame,
        whitelabels: DataFrame,
        organizations: DataFrame,
    ) -> Result<DataFrame, ReportError> {
        let part = |df: DataFrame, kind: i64, id: &str, name: &str| {
            df.lazy().select([
                lit(kind).alias("kind"),
                col(id).alias("entity_id"),
                col(name).alias("entity_name"),
            ])
        };
        let names = concat(
            [
                part(users, USER, "user_id", "user_name"),
                part(whitelabels, WHITELABEL, "whitelabel_id", "whitelabel_name"),
                part(
                    organizations,
                    ORGANIZATION,
                    "organization_id",
                    "organization_name",
                ),
            ],
            UnionArgs::default(),
        )
        .map_err(pl(report, "entity names"))?
        .filter(col("entity_id").is_not_null())
        .unique(Some(cols(["kind", "entity_id"])), UniqueKeepStrategy::First);
        let table = DataFrame::new(
            self.series.len(),
            vec![
                Column::new("series".into(), self.series.clone()),
                Column::new("kind".into(), self.kinds.clone()),
                Column::new("entity_id".into(), self.ids.clone()),
            ],
        )
        .map_err(pl(report, "entity names"))?;
        table
            .lazy()
            .join(
                names,
                [col("kind"), col("entity_id")],
                [col("kind"), col("entity_id")],
                JoinArgs::new(JoinType::Left),
            )
            .collect()
            .map_err(pl(report, "entity names"))
    }
}

/// Makes each entity's series dense: one row per calendar day from its first day to
/// its last (or to `until`), filling gaps per `fill`. Input is sorted by
/// (entity_id, day); rows of the same day are merged (added for flows, the last kept
/// for levels). Each entity gets a series number in `table`; the output carries it
/// with the day's week and month start.
#[allow(clippy::too_many_arguments)]
fn densify(
    report: &str,
    df: &DataFrame,
    values: &[&str],
    fill: Fill,
    until: Option<i64>,
    kind: i64,
    calendar: &Calendar,
    table: &mut SeriesTable,
) -> Result<DataFrame, ReportError> {
    let err = || pl(report, "filling calendar gaps");
    let ids = Input::<Int64Type>::of(df, "entity_id").map_err(err())?;
    let days = Input::<Int64Type>::of(df, "day").map_err(err())?;
    let mut input = Vec::with_capacity(values.len());
    for v in values {
        input.push(Input::<Float64Type>::of(df, v).map_err(err())?);
    }
    let mut out = Dense::new(df.height(), values.len());
    let mut prev: Option<(i64, i64, i64)> = None; // (series, entity, day)
    for r in 0..df.height() {
        let (Some(id), Some(day)) = (ids.get(r), days.get(r)) else {
            continue;
        };
        let series = match prev {
            Some((series, pid, pday)) if pid == id => {
                if day <= pday {
                    out.merge(fill, &input, r);
                    continue;
                }
                for gap in pday + 1..day {
                    out.gap(fill, series, gap, calendar);
                }
                series
            }
            Some((series, _, pday)) => {
                if let Some(end) = until {
                    for gap in pday + 1..=end {
                        out.gap(fill, series, gap, calendar);
                    }
                }
                table.add(kind, id)
            }
            None => table.add(kind, id),
        };
        out.push(series, day, calendar);
        for (col, values) in out.values.iter_mut().zip(&input) {
            col.push(values.get(r));
        }
        prev = Some((series, id, day));
    }
    if let (Some((series, _, pday)), Some(end)) = (prev, until) {
        for gap in pday + 1..=end {
            out.gap(fill, series, gap, calendar);
        }
    }
    out.frame(values).map_err(err())
}

/// A numeric input column: borrowed as a slice when it has no nulls (no copy),
/// collected otherwise.
enum Input<'a, T: PolarsNumericType> {
    Dense(&'a [T::Native]),
    Sparse(Vec<Option<T::Native>>),
}

impl<'a, T: PolarsNumericType> Input<'a, T> {
    fn of(df: &'a DataFrame, name: &str) -> PolarsResult<Self> {
        let ca: &ChunkedArray<T> = df.column(name)?.as_materialized_series().unpack::<T>()?;
        Ok(match ca.cont_slice() {
            Ok(slice) => Input::Dense(slice),
            Err(_) => Input::Sparse(ca.iter().collect()),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<T::Native> {
        match self {
            Input::Dense(v) => v.get(i).copied(),
            Input::Sparse(v) => v.get(i).copied().flatten(),
        }
    }
}

/// The columns of a dense series being built.
struct Dense {
    series: Vec<i64>,
    day: Vec<i64>,
    week: Vec<i64>,
    month: Vec<i64>,
    values: Vec<frame::Nums<f64>>,
}

impl Dense {
    fn new(capacity: usize, width: usize) -> Self {
        Dense {
            series: Vec::with_capacity(capacity),
            day: Vec::with_capacity(capacity),
            week: Vec::with_capacity(capacity),
            month: Vec::with_capacity(capacity),
            values: (0..width)
                .map(|_| frame::Nums::with_capacity(capacity))
                .collect(),
        }
    }

    /// The key columns of a new row (its values are pushed by the caller).
    fn push(&mut self, series: i64, day: i64, calendar: &Calendar) {
        self.series.push(series);
        self.day.push(day);
        self.week.push(week_start(day));
        self.month.push(calendar.month_start(day));
    }

    /// A day without a record.
    fn gap(&mut self, fill: Fill, series: i64, day: i64, calendar: &Calendar) {
        self.push(series, day, calendar);
        for col in &mut self.values {
            let value = match fill {
                Fill::Zero => Some(0.0),
                Fill::Forward => col.last(),
            };
            col.push(value);
        }
    }

    /// A second row for the same day: flows add up, levels keep the latest.
    fn merge(&mut self, fill: Fill, input: &[Input<'_, Float64Type>], r: usize) {
        for (col, values) in self.values.iter_mut().zip(input) {
            let merged = match (fill, col.last(), values.get(r)) {
                (Fill::Zero, Some(a), Some(b)) => Some(a + b),
                (Fill::Zero, a, None) => a,
                (_, _, b) => b,
            };
            col.set_last(merged);
        }
    }

    fn frame(self, names: &[&str]) -> PolarsResult<DataFrame> {
        let height = self.series.len();
        let mut columns = vec![
            Column::new("series".into(), self.series),
            Column::new("day".into(), self.day),
            Column::new("week_start".into(), self.week),
            Column::new("month_start".into(), self.month),
        ];
        for (name, values) in names.iter().zip(self.values) {
            columns.push(values.into_column(name));
        }
        DataFrame::new(height, columns)
    }
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use rusqlite::types::Value;

    /// Day `d` of March 2025 for user 7: cpu = d, gpu = 1 on even days, so compute =
    /// d + 3 on even days and d on odd days; 2025-03-25 has no record.
    fn march_day(user: i64, d: i64) -> Vec<(&'static str, Value)> {
        let gpu = i64::from(d % 2 == 0);
        vec![
            ("user_id", i(user)),
            ("day", t(&format!("2025-03-{d:02}"))),
            ("cpu_compute_time_seconds", i(d)),
            ("gpu_compute_time_seconds", i(gpu)),
            ("compute_time_seconds", i(d + 3 * gpu)),
        ]
    }

    #[test]
    fn rolling_sums_periods_and_changes() {
        let mut m = TestMirror::new();
        let first = |w: &Run<'_>, used_ms: i64| {
            w.put(
                &ORGANIZATIONS,
                &[
                    ("id", i(100)),
                    ("name", t("WL admin")),
                    ("whitelabel_id", i(1)),
                    ("whitelabel_name", t("WL One")),
                ],
            );
            w.put(
                &PROJECTS,
                &[("id", i(50)), ("owner_organization_id", i(100))],
            );
            w.put(
                &PROJECT_INFO,
                &[("project_id", i(50)), ("compute_time_used_ms", i(used_ms))],
            );
        };
        m.run("2025-03-29T06:00:00.000Z", |w| first(w, 10_000));
        m.run("2025-03-31T06:00:00.000Z", |w| {
            first(w, 25_000);
            w.put(
                &USERS,
                &[
                    ("id", i(7)),
                    ("name", t("Grace")),
                    ("whitelabel_organization_id", i(100)),
                ],
            );
            w.put(
                &USERS,
                &[
                    ("id", i(8)),
                    ("name", t("Linus")),
                    ("whitelabel_organization_id", i(100)),
                ],
            );
            let days: Vec<Vec<(&str, Value)>> = (20..=31)
                .filter(|d| *d != 25)
                .map(|d| march_day(7, d))
                .collect();
            let days: Vec<&[(&str, Value)]> = days.iter().map(|v| v.as_slice()).collect();
            w.scope(&DAILY_METRICS, &[i(7)], &days);
            w.scope(
                &DAILY_METRICS,
                &[i(8)],
                &[&[
                    ("user_id", i(8)),
                    ("day", t("2025-03-31")),
                    ("cpu_compute_time_seconds", i(10)),
                    ("gpu_compute_time_seconds", i(0)),
                    ("compute_time_seconds", i(10)),
                ]],
            );
        });
        let out = m.report("2025-03-31", &["compute_trends"]);
        let df = &out.frames["compute_trends"];
        let row = |kind: &str, id: &str, period: &str, start: &str| {
            find(
                df,
                &[
                    ("entity_type", kind),
                    ("entity_id", id),
                    ("period", period),
                    ("period_start", start),
                ],
            )
        };

        // User 7, days: 20→23, 21→21, 22→25, 23→23, 24→27, 25→0 (no record), 26→29,
        // 27→27, 28→31, 29→29, 30→33, 31→31.
        let user_days = (0..df.height())
            .filter(|&r| text_of(df, r, "entity_id") == "7" && text_of(df, r, "period") == "day")
            .count();
        assert_eq!(user_days, 12, "2025-03-20 ..= 2025-03-31, the gap filled");
        let r = row("user", "7", "day", "2025-03-31");
        assert_eq!(txt(df, r, "entity_name").as_deref(), Some("Grace"));
        assert_num(df, r, "cpu_seconds", Some(31.0));
        assert_num(df, r, "gpu_seconds", Some(0.0));
        assert_num(df, r, "compute_seconds", Some(31.0));
        // 7 days 25..=31: 0 + 29 + 27 + 31 + 29 + 33 + 31 = 180.
        assert_num(df, r, "rolling_7d", Some(180.0));
        // Everything: 23+21+25+23+27+0+29+27+31+29+33+31 = 299.
        assert_num(df, r, "rolling_30d", Some(299.0));
        // (31 − 33) / 33 = −6.0606… % → −6.06.
        assert_num(df, r, "change_pct", Some(-6.06));
        // Nothing 30 days earlier.
        assert_num(df, r, "rolling_30d_prev", None);
        // 2025-03-24: the series started on the 20th: 23 + 21 + 25 + 23 + 27 = 119.
        assert_num(
            df,
            row("user", "7", "day", "2025-03-24"),
            "rolling_7d",
            Some(119.0),
        );
        // The gap day is a zero, and a change from zero is unknown.
        let r = row("user", "7", "day", "2025-03-25");
        assert_num(df, r, "compute_seconds", Some(0.0));
        assert_num(
            df,
            row("user", "7", "day", "2025-03-26"),
            "change_pct",
            None,
        );

        // ISO weeks start on Monday: 2025-03-17 (days 20..=23), 2025-03-24 (24..=30), 2025-03-31.
        let r = row("user", "7", "week", "2025-03-17");
        assert_num(df, r, "compute_seconds", Some(92.0)); // 23 + 21 + 25 + 23
        assert_num(df, r, "cpu_seconds", Some(86.0)); // 20 + 21 + 22 + 23
        assert_num(df, r, "gpu_seconds", Some(2.0)); // the 20th and 22nd
        assert_num(df, r, "change_pct", None);
        let r = row("user", "7", "week", "2025-03-24");
        assert_num(df, r, "compute_seconds", Some(176.0)); // 27 + 0 + 29 + 27 + 31 + 29 + 33
        assert_num(df, r, "cpu_seconds", Some(164.0)); // 24 + 0 + 26 + 27 + 28 + 29 + 30
        assert_num(df, r, "gpu_seconds", Some(4.0));
        // (176 − 92) / 92 = 91.304… %.
        assert_num(df, r, "change_pct", Some(91.3));
        // Rolling sums at the week's last day (the 30th): 176, and 299 − 31 = 268.
        assert_num(df, r, "rolling_7d", Some(176.0));
        assert_num(df, r, "rolling_30d", Some(268.0));
        let r = row("user", "7", "week", "2025-03-31");
        assert_num(df, r, "compute_seconds", Some(31.0));
        // (31 − 176) / 176 = −82.386… %.
        assert_num(df, r, "change_pct", Some(-82.39));
        let r = row("user", "7", "month", "2025-03-01");
        assert_num(df, r, "compute_seconds", Some(299.0));
        assert_num(
            df,
            r,
            "cpu_seconds",
            Some(20.0 + 21.0 + 22.0 + 23.0 + 24.0 + 26.0 + 27.0 + 28.0 + 29.0 + 30.0 + 31.0),
        );
        assert_num(df, r, "change_pct", None);

        // The white label sums users 7 and 8 (user 8: 10 s on the 31st only).
        let r = row("whitelabel", "1", "day", "2025-03-31");
        assert_eq!(txt(df, r, "entity_name").as_deref(), Some("WL One"));
        assert_num(df, r, "compute_seconds", Some(41.0));
        assert_num(df, r, "rolling_7d", Some(190.0));
        assert_num(
            df,
            row("whitelabel", "1", "month", "2025-03-01"),
            "compute_seconds",
            Some(309.0),
        );

        // Organization 100: project 50 used 10 s (run of the 29th), then 25 s (the 31st).
        // Growth: 29th unknown (first observation), 30th 0, 31st 15.
        assert_num(
            df,
            row("organization", "100", "day", "2025-03-29"),
            "compute_seconds",
            None,
        );
        assert_num(
            df,
            row("organization", "100", "day", "2025-03-30"),
            "compute_seconds",
            Some(0.0),
        );
        let r = row("organization", "100", "day", "2025-03-31");
        assert_eq!(txt(df, r, "entity_name").as_deref(), Some("WL admin"));
        assert_num(df, r, "compute_seconds", Some(15.0));
        assert_num(df, r, "cpu_seconds", None);
        assert_num(df, r, "rolling_7d", Some(15.0));
        assert_num(df, r, "change_pct", None);
        assert_num(
            df,
            row("organization", "100", "week", "2025-03-24"),
            "compute_seconds",
            Some(0.0),
        );
        assert_num(
            df,
            row("organization", "100", "week", "2025-03-31"),
            "compute_seconds",
            Some(15.0),
        );
        assert_num(
            df,
            row("organization", "100", "month", "2025-03-01"),
            "gpu_seconds",
            None,
        );
    }
}
