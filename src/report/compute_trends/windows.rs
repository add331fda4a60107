//! Windows over the dense series: rolling sums, the previous day, and week and
//! month totals. Series are dense, sorted by (series, day) and stacked in one frame,
//! so every window is a difference of running sums over the whole frame; no window
//! is partitioned by series (which costs a group-by over millions of rows).

use super::VALUES;
use crate::report::cols::null_of;
use polars::prelude::*;

/// Whether the row `n` up belongs to the same series.
fn same_series(n: i64) -> Expr {
    col("series").eq(col("series").shift(lit(n)))
}

/// `e` of the row `n` days earlier in the same series (null before the series starts).
pub(super) fn back(e: Expr, n: i64) -> Expr {
    when(same_series(n))
        .then(e.shift(lit(n)))
        .otherwise(null_of(DataType::Float64))
}

/// Adds `rolling_7d` and `rolling_30d` (the sum of `compute_seconds` over the last 7
/// and 30 days up to each day, null when none of those days is known, as a rolling
/// sum with `min_periods = 1`), `prev` (the day before) and `rolling_30d_prev` (the
/// 30-day sum 30 days earlier).
///
/// A window of `n` rows ending at row `i` sums `run[i] - run[i - n]`, where `run` is
/// the running sum over the whole frame; when the series starts inside the window,
/// the subtrahend is the running sum just before the series' first row.
pub(super) fn rolling(stacked: LazyFrame) -> LazyFrame {
    let value = || col("compute_seconds");
    let first_row = col("series")
        .neq(col("series").shift(lit(1)))
        .fill_null(lit(true));
    let before_series = |run: &str, this_row: Expr| {
        when(first_row.clone())
            .then(col(run) - this_row)
            .otherwise(null_of(DataType::Float64))
            .fill_null_with_strategy(FillNullStrategy::Forward(None))
            .alias(format!("{run}_start"))
    };
    let known = || value().is_not_null().cast(DataType::Float64);
    let window = |n: i64| {
        let earlier = |run: &str| {
            when(same_series(n))
                .then(col(run).shift(lit(n)))
                .otherwise(col(format!("{run}_start")))
        };
        let count = col("run_known") - earlier("run_known");
        when(count.gt(lit(0.0)))
            .then(col("run_value") - earlier("run_value"))
            .otherwise(null_of(DataType::Float64))
    };
    stacked
        .with_columns([
            value()
                .fill_null(lit(0.0))
                .cum_sum(false)
                .alias("run_value"),
            known().cum_sum(false).alias("run_known"),
        ])
        .with_columns([
            before_series("run_value", value().fill_null(lit(0.0))),
            before_series("run_known", known()),
        ])
        .with_columns([
            window(7).alias("rolling_7d"),
            window(30).alias("rolling_30d"),
            back(value(), 1).alias("prev"),
        ])
        .with_column(back(col("rolling_30d"), 30).alias("rolling_30d_prev"))
        .drop(cols([
            "run_value",
            "run_known",
            "run_value_start",
            "run_known_start",
        ]))
}

pub(super) fn period_columns() -> [Expr; 10] {
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
pub(super) fn periods(
    base: &DataFrame,
    start: &str,
    read_from: i64,
    first: i64,
    order: i64,
) -> LazyFrame {
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

/// Compares the period that runs to T (starting at `current`) with the same number
/// of leading days of the period before: its `prev` becomes the total of the days
/// `from ..= to` (null when none of them is known). Other rows keep theirs.
///
/// Only those few days of each series are summed, so the group-by is small.
pub(super) fn compare_elapsed(
    rows: LazyFrame,
    base: &DataFrame,
    current: i64,
    from: i64,
    to: i64,
) -> LazyFrame {
    let value = col("compute_seconds");
    let leading = base
        .clone()
        .lazy()
        .filter(col("day").gt_eq(lit(from)).and(col("day").lt_eq(lit(to))))
        .group_by([col("series")])
        .agg([when(value.clone().count().gt(lit(0)))
            .then(value.sum())
            .otherwise(null_of(DataType::Float64))
            .alias("prev_elapsed")]);
    rows.join(
        leading,
        [col("series")],
        [col("series")],
        JoinArgs::new(JoinType::Left),
    )
    .with_column(
        when(col("start").eq(lit(current)))
            .then(col("prev_elapsed"))
            .otherwise(col("prev"))
            .alias("prev"),
    )
    .select(period_columns())
}
