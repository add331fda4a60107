//! Column helpers shared by the report jobs: the date conversions polars cannot do in
//! this build (no date type), done once per column in Rust.

use crate::calendar::{day_text, parse_day};
use crate::report::error::{ReportError, pl};
use polars::prelude::*;

/// Adds `new` = the UTC day number of the timestamp text column `text`.
pub fn add_day_numbers(
    report: &str,
    df: &mut DataFrame,
    text: &str,
    new: &str,
) -> Result<(), ReportError> {
    let step = "reading dates";
    let ca = df
        .column(text)
        .map_err(pl(report, step))?
        .str()
        .map_err(pl(report, step))?;
    let days: Vec<Option<i64>> = ca.iter().map(|v| v.and_then(parse_day)).collect();
    df.with_column(Column::new(new.into(), days))
        .map_err(pl(report, step))?;
    Ok(())
}

/// Adds `new` = `YYYY-MM-DD` of the day-number column `days`; a float column is
/// rounded up to the next whole day first (for projections).
pub fn add_day_texts(
    report: &str,
    df: &mut DataFrame,
    days: &str,
    new: &str,
) -> Result<(), ReportError> {
    let step = "writing dates";
    let col = df.column(days).map_err(pl(report, step))?;
    let values: Vec<Option<i64>> = match col.dtype() {
        DataType::Float64 | DataType::Float32 => {
            let f = col.cast(&DataType::Float64).map_err(pl(report, step))?;
            f.f64()
                .map_err(pl(report, step))?
                .iter()
                .map(|v| {
                    v.filter(|x| x.is_finite() && x.abs() < 1.0e7)
                        .map(|x| x.ceil() as i64)
                })
                .collect()
        }
        _ => {
            let i = col.cast(&DataType::Int64).map_err(pl(report, step))?;
            i.i64().map_err(pl(report, step))?.iter().collect()
        }
    };
    let mut cache: std::collections::HashMap<i64, Option<String>> =
        std::collections::HashMap::new();
    let texts: Vec<Option<String>> = values
        .into_iter()
        .map(|v| v.and_then(|d| cache.entry(d).or_insert_with(|| day_text(d)).clone()))
        .collect();
    df.with_column(Column::new(new.into(), texts))
        .map_err(pl(report, step))?;
    Ok(())
}

/// A typed null literal.
pub fn null_of(dtype: DataType) -> Expr {
    lit(NULL).cast(dtype)
}

/// Keeps (and orders) the named columns.
pub fn project(report: &str, df: &DataFrame, names: &[&str]) -> Result<DataFrame, ReportError> {
    df.select(names.iter().copied())
        .map_err(pl(report, "selecting the output columns"))
}

/// Rounds float columns to a number of decimals (percentages to 0.01, seconds to
/// milliseconds), so sums of fractions print as the numbers a person would write.
pub fn round_columns(
    report: &str,
    df: &mut DataFrame,
    columns: &[(&str, i32)],
) -> Result<(), ReportError> {
    let step = "rounding";
    for (name, decimals) in columns {
        let col = df.column(name).map_err(pl(report, step))?;
        if col.dtype() != &DataType::Float64 {
            continue;
        }
        let scale = 10f64.powi(*decimals);
        let rounded: Float64Chunked = col
            .f64()
            .map_err(pl(report, step))?
            .iter()
            .map(|v| v.map(|x| round_scaled(x, scale)))
            .collect();
        df.with_column(rounded.with_name((*name).into()).into_column())
            .map_err(pl(report, step))?;
    }
    Ok(())
}

/// `x` rounded to the step `1 / scale` (`scale` = 10^decimals); non-finite values
/// stay as they are.
pub fn round_scaled(x: f64, scale: f64) -> f64 {
    if x.is_finite() {
        (x * scale).round() / scale
    } else {
        x
    }
}
