//! From the output rows to the report's table: names, texts, the change against the
//! previous period, the organizations' own column and rounding, each column made once.
//!
//! Each column is built straight from the rows' vectors (the value columns take them
//! over without a copy). Over an xlarge mirror the report has 2.2 million rows; through
//! polars expressions every step (the derived columns, rounding, the final selection)
//! would make another copy of the table, and those copies come to a third of the
//! report's peak memory.

use super::windows::{Periods, Rows};
use super::{COLUMNS, Entity, Names, PERIODS};
use crate::calendar::day_text;
use crate::report::cols::round_scaled;
use crate::report::frame::Nums;
use polars::prelude::*;

/// Decimals kept: seconds to the millisecond, percentages to 0.01.
const SECONDS_DECIMALS: i32 = 3;
const PERCENT_DECIMALS: i32 = 2;

/// The report's table from the output rows' parts, in order, columns in [`COLUMNS`]
/// order. The parts' vectors are taken over one column at a time.
pub(super) fn table(
    mut parts: Vec<Rows>,
    names: &Names,
    periods: &Periods,
) -> PolarsResult<DataFrame> {
    let height = parts.iter().map(|p| p.kind.len()).sum();
    let entity_type: StringChunked = values(&parts, |p| &p.kind)
        .map(|k| entity_of(k).map(Entity::name))
        .collect();
    let entity_name: StringChunked = values(&parts, |p| &p.kind)
        .zip(values(&parts, |p| &p.entity_id))
        .map(|(k, id)| names.get(k, id))
        .collect();
    let period: StringChunked = values(&parts, |p| &p.period_order)
        .map(|p| Some(period_name(p)))
        .collect();
    let period_start = day_texts(values(&parts, |p| &p.start));
    // Only the periods that contain T are unfinished (every row starts on or before T).
    let period_complete: BooleanChunked = values(&parts, |p| &p.period_order)
        .zip(values(&parts, |p| &p.start))
        .map(|(order, start)| start < periods.current_start(order))
        .collect();
    let organization = Entity::Organization.code();
    let is_org: Vec<bool> = values(&parts, |p| &p.kind)
        .map(|k| k == organization)
        .collect();
    let entity_id: Vec<i64> = values(&parts, |p| &p.entity_id).collect();
    for part in &mut parts {
        part.release_keys();
    }

    let mut values = (0..7).map(|k| {
        let mut column = Nums::with_capacity(height);
        for part in &mut parts {
            column.append(std::mem::take(&mut part.values[k]));
        }
        column
    });
    let mut next = || values.next().unwrap_or_default();
    let (cpu, gpu, mut compute) = (next(), next(), next());
    let (rolling_7d, rolling_30d, rolling_30d_prev, prev) = (next(), next(), next(), next());
    let change_pct = change_pct(&compute, &prev);
    drop(prev);
    // An organization's value is the growth of its compute used, not compute time
    // spent in the period: it gets a column of its own.
    let mut growth = compute.clone();
    growth.mask(|i| is_org[i]);
    compute.mask(|i| !is_org[i]);

    let columns = vec![
        entity_type.with_name(COLUMNS[0].into()).into_column(),
        Column::new(COLUMNS[1].into(), entity_id),
        entity_name.with_name(COLUMNS[2].into()).into_column(),
        period.with_name(COLUMNS[3].into()).into_column(),
        period_start.with_name(COLUMNS[4].into()).into_column(),
        period_complete.with_name(COLUMNS[5].into()).into_column(),
        rounded(COLUMNS[6], cpu, SECONDS_DECIMALS),
        rounded(COLUMNS[7], gpu, SECONDS_DECIMALS),
        rounded(COLUMNS[8], compute, SECONDS_DECIMALS),
        rounded(COLUMNS[9], growth, SECONDS_DECIMALS),
        rounded(COLUMNS[10], rolling_7d, SECONDS_DECIMALS),
        rounded(COLUMNS[11], rolling_30d, SECONDS_DECIMALS),
        rounded(COLUMNS[12], rolling_30d_prev, SECONDS_DECIMALS),
        rounded(COLUMNS[13], change_pct, PERCENT_DECIMALS),
    ];
    DataFrame::new(height, columns)
}

/// One integer column of the rows, across the parts.
fn values(parts: &[Rows], column: fn(&Rows) -> &Vec<i64>) -> impl Iterator<Item = i64> + Clone {
    parts.iter().flat_map(move |p| column(p).iter().copied())
}

fn entity_of(code: i64) -> Option<Entity> {
    usize::try_from(code)
        .ok()
        .and_then(|i| Entity::ALL.get(i).copied())
}

fn period_name(order: i64) -> &'static str {
    match order {
        0 => PERIODS[0],
        1 => PERIODS[1],
        _ => PERIODS[2],
    }
}

/// `YYYY-MM-DD` of each day; the few distinct days are formatted once.
fn day_texts(days: impl Iterator<Item = i64> + Clone) -> StringChunked {
    let (Some(low), Some(high)) = (days.clone().min(), days.clone().max()) else {
        return StringChunked::from_iter(std::iter::empty::<Option<&str>>());
    };
    let texts: Vec<Option<String>> = (low..=high).map(day_text).collect();
    days.map(|d| texts[(d - low) as usize].as_deref()).collect()
}

/// The change of compute seconds against the previous period, in percent of the
/// previous period's magnitude; unknown when that is unknown or zero.
fn change_pct(compute: &Nums<f64>, prev: &Nums<f64>) -> Nums<f64> {
    let mut out = Nums::with_capacity(compute.len());
    for i in 0..compute.len() {
        let change = match (compute.get(i), prev.get(i)) {
            // Not `!= 0.0`: an unknown (NaN) previous value gives no change either.
            (Some(c), Some(p)) if p.abs() > 0.0 => Some(100.0 * (c - p) / p.abs()),
            _ => None,
        };
        out.push(change);
    }
    out
}

/// The column of `values` rounded to `decimals` (finite values only).
fn rounded(name: &str, mut values: Nums<f64>, decimals: i32) -> Column {
    let scale = 10f64.powi(decimals);
    values.update(|x| round_scaled(x, scale));
    values.into_column(name)
}
