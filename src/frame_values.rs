//! A finished polars frame's columns as plain vectors, for the code that reads
//! figures back out of report frames (the summary, the HTML page, completeness,
//! alerts). A missing column or one of another type reads as all unknown: these
//! readers look at frames orgledger built, whose columns the tests pin.

use polars::prelude::*;

/// A string column's values (all unknown when the column is missing or not text), for
/// the readers of finished frames (summary, HTML page).
pub fn strs<'a>(df: &'a DataFrame, name: &str) -> Vec<Option<&'a str>> {
    match df.column(name).ok().and_then(|c| c.str().ok()) {
        Some(ca) => ca.iter().collect(),
        None => vec![None; df.height()],
    }
}

/// A column's values as integers (all unknown when missing or not numeric).
pub fn ints(df: &DataFrame, name: &str) -> Vec<Option<i64>> {
    df.column(name)
        .ok()
        .and_then(|c| c.cast(&DataType::Int64).ok())
        .and_then(|c| c.i64().ok().map(|ca| ca.iter().collect()))
        .unwrap_or_else(|| vec![None; df.height()])
}

/// A column's values as floats (all unknown when missing or not numeric).
pub fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    df.column(name)
        .ok()
        .and_then(|c| c.cast(&DataType::Float64).ok())
        .and_then(|c| c.f64().ok().map(|ca| ca.iter().collect()))
        .unwrap_or_else(|| vec![None; df.height()])
}

/// A boolean column's values (all unknown when missing or not boolean).
pub fn bools(df: &DataFrame, name: &str) -> Vec<Option<bool>> {
    match df.column(name).ok().and_then(|c| c.bool().ok()) {
        Some(ca) => ca.iter().collect(),
        None => vec![None; df.height()],
    }
}
