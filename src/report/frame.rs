//! SQLite → polars, column by column.
//!
//! A statement's rows are read once into one typed vector per column
//! (`Vec<Option<i64>>`, `Vec<Option<f64>>` or `Vec<Option<String>>`), and each vector
//! becomes a polars column; no per-row objects are built. A column's type comes from
//! the report job's declaration when it has one (this build of rusqlite does not expose
//! SQLite's declared types), otherwise from its first non-null value; a later value of
//! a wider type widens the column (integer → real → text) rather than failing, because
//! SQLite columns are dynamically typed.

use crate::report::dates::parse_day_bytes;
use crate::report::error::{ReportError, SqlSite};
use crate::report::sql::Extract;
use polars::prelude::{Column, DataFrame, DataType, NamedFrom, Series};
use rusqlite::Connection;
use rusqlite::types::{Value, ValueRef};

/// How a report job wants a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit integer (booleans are 0/1).
    Int,
    /// Floating point.
    Real,
    /// Text.
    Text,
    /// A mirror timestamp or `YYYY-MM-DD` text, read as its UTC day number (i64).
    Day,
}

impl Kind {
    fn dtype(self) -> DataType {
        match self {
            Kind::Int | Kind::Day => DataType::Int64,
            Kind::Real => DataType::Float64,
            Kind::Text => DataType::String,
        }
    }
}

/// Named parameters bound to every query (`:as_of`, `:cutoff`).
pub type Params = [(&'static str, Value)];

/// Runs one section of an extract and returns its result as a DataFrame. `needs`
/// lists the columns the caller relies on, with their kind; each must be present.
pub fn read_part(
    conn: &Connection,
    extract: &Extract,
    part: &str,
    params: &Params,
    needs: &[(&str, Kind)],
) -> Result<DataFrame, ReportError> {
    let sql = extract.part(part)?;
    read_sql(conn, extract, part, sql, params, needs)
}

/// Runs a statement (see [`read_part`]).
pub fn read_sql(
    conn: &Connection,
    extract: &Extract,
    part: &str,
    sql: &str,
    params: &Params,
    needs: &[(&str, Kind)],
) -> Result<DataFrame, ReportError> {
    let site = || SqlSite::boxed(&extract.report, &extract.origin, part);
    let query_err = |source| ReportError::Query {
        site: site(),
        source,
    };
    let started = std::time::Instant::now();
    let mut stmt = conn.prepare(sql).map_err(query_err)?;
    bind(&mut stmt, extract, part, params)?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    for (need, _) in needs {
        if !names.iter().any(|n| n == need) {
            return Err(ReportError::MissingColumn {
                site: site(),
                column: need.to_string(),
            });
        }
    }
    let mut builders: Vec<Builder> = names
        .iter()
        .map(|name| {
            let hint = needs.iter().find(|(n, _)| n == name).map(|(_, k)| *k);
            Builder::new(hint)
        })
        .collect();
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(query_err)? {
        for (i, builder) in builders.iter_mut().enumerate() {
            let value = row.get_ref(i).map_err(query_err)?;
            builder
                .push(value)
                .map_err(|(value, expected)| ReportError::BadValue {
                    site: site(),
                    column: names[i].clone(),
                    value,
                    expected,
                })?;
        }
    }
    let height = builders.first().map_or(0, |b| b.len);
    tracing::debug!(
        report = %extract.report,
        part,
        rows = height,
        ms = started.elapsed().as_millis() as u64,
        "query read"
    );
    let columns: Vec<Column> = names
        .iter()
        .zip(builders)
        .map(|(name, b)| b.finish(name))
        .collect();
    DataFrame::new(height, columns).map_err(crate::report::error::pl(
        &extract.report,
        "building the frame of a query",
    ))
}

fn bind(
    stmt: &mut rusqlite::Statement<'_>,
    extract: &Extract,
    part: &str,
    params: &Params,
) -> Result<(), ReportError> {
    for i in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(i).unwrap_or("?").to_string();
        let Some((_, value)) = params.iter().find(|(n, _)| *n == name) else {
            let available: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
            return Err(ReportError::UnknownParam {
                site: SqlSite::boxed(&extract.report, &extract.origin, part),
                param: name,
                available: available.join(", "),
            });
        };
        stmt.raw_bind_parameter(i, value)
            .map_err(|source| ReportError::Query {
                site: SqlSite::boxed(&extract.report, &extract.origin, part),
                source,
            })?;
    }
    Ok(())
}

/// The values of one column so far.
enum Data {
    /// Only nulls seen (and no declared kind).
    Unknown,
    Int(Vec<Option<i64>>),
    Real(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
}

struct Builder {
    hint: Option<Kind>,
    len: usize,
    data: Data,
}

/// A value that does not fit: its text and what was expected.
type Misfit = (String, &'static str);

impl Builder {
    fn new(hint: Option<Kind>) -> Self {
        let data = match hint {
            None => Data::Unknown,
            Some(Kind::Int | Kind::Day) => Data::Int(Vec::new()),
            Some(Kind::Real) => Data::Real(Vec::new()),
            Some(Kind::Text) => Data::Text(Vec::new()),
        };
        Builder { hint, len: 0, data }
    }

    fn push(&mut self, value: ValueRef<'_>) -> Result<(), Misfit> {
        if self.hint == Some(Kind::Day) {
            let day = match value {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some(
                    parse_day_bytes(t)
                        .ok_or_else(|| (String::from_utf8_lossy(t).into_owned(), "a date"))?,
                ),
                other => return Err((value_text(other), "a date")),
            };
            if let Data::Int(v) = &mut self.data {
                v.push(day);
            }
            self.len += 1;
            return Ok(());
        }
        let value = self.coerce(value)?;
        match (&mut self.data, value) {
            (Data::Unknown, ValueRef::Null) => {}
            (Data::Unknown, first) => {
                let nulls = self.len;
                self.data = match first {
                    ValueRef::Integer(_) => Data::Int(vec![None; nulls]),
                    ValueRef::Real(_) => Data::Real(vec![None; nulls]),
                    _ => Data::Text(vec![None; nulls]),
                };
                return self.push(first);
            }
            (Data::Int(v), ValueRef::Null) => v.push(None),
            (Data::Int(v), ValueRef::Integer(n)) => v.push(Some(n)),
            (Data::Int(v), ValueRef::Real(f)) => {
                let mut widened: Vec<Option<f64>> = v.iter().map(|x| x.map(|n| n as f64)).collect();
                widened.push(Some(f));
                self.data = Data::Real(widened);
            }
            (Data::Real(v), ValueRef::Null) => v.push(None),
            (Data::Real(v), ValueRef::Integer(n)) => v.push(Some(n as f64)),
            (Data::Real(v), ValueRef::Real(f)) => v.push(Some(f)),
            (Data::Text(v), other) => v.push(match other {
                ValueRef::Null => None,
                other => Some(value_text(other)),
            }),
            (Data::Int(_) | Data::Real(_), other) => {
                // Text in a numeric column without a declared kind: keep everything as text.
                let mut texts = self.texts();
                texts.push(Some(value_text(other)));
                self.data = Data::Text(texts);
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Converts a value to the declared kind, if any.
    fn coerce<'v>(&self, value: ValueRef<'v>) -> Result<ValueRef<'v>, Misfit> {
        let Some(kind) = self.hint else {
            return Ok(value);
        };
        Ok(match (kind, value) {
            (_, ValueRef::Null) => ValueRef::Null,
            (Kind::Int, ValueRef::Real(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                ValueRef::Integer(f as i64)
            }
            (Kind::Int | Kind::Real, ValueRef::Integer(_) | ValueRef::Real(_)) => value,
            (Kind::Int | Kind::Real, ValueRef::Text(t)) => {
                let text = String::from_utf8_lossy(t);
                let trimmed = text.trim();
                if let Ok(n) = trimmed.parse::<i64>() {
                    ValueRef::Integer(n)
                } else if let Ok(f) = trimmed.parse::<f64>() {
                    ValueRef::Real(f)
                } else {
                    return Err((text.into_owned(), "a number"));
                }
            }
            (Kind::Int | Kind::Real, other) => return Err((value_text(other), "a number")),
            _ => value,
        })
    }

    fn texts(&self) -> Vec<Option<String>> {
        match &self.data {
            Data::Unknown => vec![None; self.len],
            Data::Int(v) => v.iter().map(|x| x.map(|n| n.to_string())).collect(),
            Data::Real(v) => v.iter().map(|x| x.map(fmt_f64)).collect(),
            Data::Text(v) => v.clone(),
        }
    }

    fn finish(self, name: &str) -> Column {
        match self.data {
            Data::Unknown => {
                let dtype = self.hint.map_or(DataType::String, Kind::dtype);
                Column::full_null(name.into(), self.len, &dtype)
            }
            Data::Int(v) => numeric_column(name, v),
            Data::Real(v) => numeric_column(name, v),
            Data::Text(v) => Column::new(name.into(), v),
        }
    }
}

/// A numeric column from optional values; a column without nulls is handed to polars
/// as a plain vector (no per-value builder).
pub fn numeric_column<T>(name: &str, values: Vec<Option<T>>) -> Column
where
    T: Copy,
    Series: NamedFrom<Vec<T>, [T]> + NamedFrom<Vec<Option<T>>, [Option<T>]>,
{
    if values.iter().all(Option::is_some) {
        let dense: Vec<T> = values.into_iter().flatten().collect();
        Column::new(name.into(), dense)
    } else {
        Column::new(name.into(), values)
    }
}

/// Text of any SQLite value (blobs as hex).
fn value_text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => String::new(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) => fmt_f64(f),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

/// A float as text: integral values without a fraction, others in their shortest
/// exact form.
pub fn fmt_f64(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1.0e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}
