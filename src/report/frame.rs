//! SQLite → polars, column by column.
//!
//! A statement's rows are read once into one typed vector per column
//! (`Vec<Option<i64>>`, `Vec<Option<f64>>` or `Vec<Option<String>>`), and each vector
//! becomes a polars column; no per-row objects are built. A column's type comes from
//! the report job's declaration when it has one (this build of rusqlite does not expose
//! SQLite's declared types), otherwise from its first non-null value; a later value of
//! a wider type widens the column (integer → real → text) rather than failing, because
//! SQLite columns are dynamically typed.

use crate::calendar::parse_day_bytes;
use crate::report::error::{ReportError, SqlSite};
use crate::report::sql::Extract;
use polars::prelude::{
    ChunkedArray, Column, DataFrame, DataType, IntoColumn, NumericNative, PolarsNumericType,
};
use rusqlite::Connection;
use rusqlite::types::{Value, ValueRef};

/// How a report job wants a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit integer (booleans are 0/1).
    Int,
    /// Floating point.
    Real,
    /// A number kept without loss: integers while every value is whole, else floats.
    Number,
    /// Text.
    Text,
    /// A mirror timestamp or `YYYY-MM-DD` text, read as its UTC day number (i64).
    Day,
}

impl Kind {
    fn dtype(self) -> DataType {
        match self {
            Kind::Int | Kind::Day | Kind::Number => DataType::Int64,
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

/// Rows per frame for a job that reads an extract in batches: a batch bounds what
/// the reading holds (a text cell is a string of its own until its batch is a
/// frame) and what the job derives from it, never every row at once.
pub(crate) const BATCH_ROWS: usize = 16_384;

/// Runs a statement (see [`read_part`]).
pub fn read_sql(
    conn: &Connection,
    extract: &Extract,
    part: &str,
    sql: &str,
    params: &Params,
    needs: &[(&str, Kind)],
) -> Result<DataFrame, ReportError> {
    let mut whole = None;
    read_sql_batches(
        conn,
        extract,
        (part, sql),
        params,
        needs,
        usize::MAX,
        &mut |df| {
            whole = Some(df);
            Ok(())
        },
    )?;
    // `read_sql_batches` hands over one frame at least, here the only one.
    Ok(whole.unwrap_or_default())
}

/// Runs a statement and hands its rows to `each` in frames of at most `rows` rows,
/// in the statement's order; a result without rows is one empty frame (with its
/// columns). A column keeps its declared kind in every frame; one without a declared
/// kind (or `Number`) takes its type from each frame's values, so a job that reads
/// in batches declares every column it reads.
pub fn read_sql_batches(
    conn: &Connection,
    extract: &Extract,
    (part, sql): (&str, &str),
    params: &Params,
    needs: &[(&str, Kind)],
    rows: usize,
    each: &mut dyn FnMut(DataFrame) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let started = std::time::Instant::now();
    let mut stmt = prepare(conn, extract, part, sql, params, needs)?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let hint = |name: &String| needs.iter().find(|(n, _)| n == name).map(|(_, k)| *k);
    let new_builders = || {
        names
            .iter()
            .map(|n| Builder::new(hint(n)))
            .collect::<Vec<_>>()
    };
    let mut builders = new_builders();
    let (mut height, mut total, mut handed) = (0, 0, false);
    let mut result = stmt.raw_query();
    while let Some(row) = result.next().map_err(query_err(extract, part))? {
        for (i, builder) in builders.iter_mut().enumerate() {
            let value = row.get_ref(i).map_err(query_err(extract, part))?;
            builder
                .push(value)
                .map_err(|misfit| bad_value(extract, part, &names[i], misfit))?;
        }
        height += 1;
        if height == rows {
            let full = std::mem::replace(&mut builders, new_builders());
            each(frame_of(extract, &names, full, height)?)?;
            (total, height, handed) = (total + height, 0, true);
        }
    }
    if height > 0 || !handed {
        each(frame_of(extract, &names, builders, height)?)?;
    }
    tracing::debug!(
        report = %extract.report,
        part,
        rows = total + height,
        ms = started.elapsed().as_millis() as u64,
        "query read"
    );
    Ok(())
}

/// The frame of `height` rows the builders hold.
fn frame_of(
    extract: &Extract,
    names: &[String],
    builders: Vec<Builder>,
    height: usize,
) -> Result<DataFrame, ReportError> {
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

/// Prepares a statement, binds the parameters and checks that every needed column is
/// there.
fn prepare<'c>(
    conn: &'c Connection,
    extract: &Extract,
    part: &str,
    sql: &str,
    params: &Params,
    needs: &[(&str, Kind)],
) -> Result<rusqlite::Statement<'c>, ReportError> {
    let mut stmt = conn.prepare(sql).map_err(query_err(extract, part))?;
    bind(&mut stmt, extract, part, params)?;
    for (need, _) in needs {
        if !stmt.column_names().any(|n| n == *need) {
            return Err(ReportError::MissingColumn {
                site: SqlSite::boxed(&extract.report, &extract.origin, part),
                column: need.to_string(),
            });
        }
    }
    Ok(stmt)
}

fn query_err<'a>(
    extract: &'a Extract,
    part: &'a str,
) -> impl Fn(rusqlite::Error) -> ReportError + 'a {
    crate::report::error::query_err(&extract.report, &extract.origin, part)
}

fn bad_value(
    extract: &Extract,
    part: &str,
    column: &str,
    (value, expected): Misfit,
) -> ReportError {
    ReportError::BadValue {
        site: SqlSite::boxed(&extract.report, &extract.origin, part),
        column: column.to_string(),
        value,
        expected,
    }
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
            .map_err(query_err(extract, part))?;
    }
    Ok(())
}

/// The values of a numeric column: plain values plus a validity mask that exists
/// only once a null was seen, so a column without nulls goes to polars without a copy.
#[derive(Debug, Default, Clone)]
pub struct Nums<T> {
    values: Vec<T>,
    valid: Option<Vec<bool>>,
}

impl<T: Copy + Default> From<Vec<Option<T>>> for Nums<T> {
    fn from(values: Vec<Option<T>>) -> Self {
        let mut out = Nums::with_capacity(values.len());
        for v in values {
            out.push(v);
        }
        out
    }
}

impl<T: Copy + Default> Nums<T> {
    /// Room for `capacity` values.
    pub fn with_capacity(capacity: usize) -> Self {
        Nums {
            values: Vec::with_capacity(capacity),
            valid: None,
        }
    }

    /// `n` nulls.
    fn nulls(n: usize) -> Self {
        Nums {
            values: vec![T::default(); n],
            valid: (n > 0).then(|| vec![false; n]),
        }
    }

    /// Appends a value or a null.
    #[inline]
    pub fn push(&mut self, value: Option<T>) {
        match value {
            Some(v) => {
                self.values.push(v);
                if let Some(valid) = &mut self.valid {
                    valid.push(true);
                }
            }
            None => {
                let n = self.values.len();
                self.valid.get_or_insert_with(|| vec![true; n]).push(false);
                self.values.push(T::default());
            }
        }
    }

    /// Appends `other`'s values after these.
    pub fn append(&mut self, other: Nums<T>) {
        let (n, more) = (self.values.len(), other.values.len());
        match (&mut self.valid, other.valid) {
            (None, None) => {}
            (valid, other) => {
                let valid = valid.get_or_insert_with(|| vec![true; n]);
                match other {
                    Some(other) => valid.extend(other),
                    None => valid.resize(n + more, true),
                }
            }
        }
        self.values.extend(other.values);
    }

    /// The value at `i` (`None`: null).
    pub fn get(&self, i: usize) -> Option<T> {
        let valid = self.valid.as_ref().is_none_or(|v| v[i]);
        valid.then(|| self.values[i])
    }

    /// The number of values, nulls included.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Makes the values at the indices where `keep` is false null.
    pub fn mask(&mut self, keep: impl Fn(usize) -> bool) {
        let n = self.len();
        let valid = self.valid.get_or_insert_with(|| vec![true; n]);
        for (i, ok) in valid.iter_mut().enumerate() {
            *ok = *ok && keep(i);
        }
    }

    /// Applies `f` to every value in place (nulls keep their placeholder's result,
    /// which no reader sees).
    pub fn update(&mut self, f: impl Fn(T) -> T) {
        for v in &mut self.values {
            *v = f(*v);
        }
    }

    fn map<U: Copy + Default>(&self, f: impl Fn(T) -> U) -> Nums<U> {
        Nums {
            values: self.values.iter().map(|v| f(*v)).collect(),
            valid: self.valid.clone(),
        }
    }

    /// The polars column. The values move into it as they are (no copy, no vector
    /// of options in between); the validity becomes its bitmap.
    pub fn into_column(self, name: &str) -> Column
    where
        T: NumericNative<PolarsType: PolarsNumericType<Native = T>>,
    {
        let validity = self.valid.map(polars_arrow::bitmap::Bitmap::from_iter);
        ChunkedArray::<T::PolarsType>::from_vec_validity(name.into(), self.values, validity)
            .into_column()
    }
}

/// The values of one column so far.
enum Data {
    /// Only nulls seen (and no declared kind).
    Unknown,
    Int(Nums<i64>),
    Real(Nums<f64>),
    Text(Vec<Option<String>>),
}

struct Builder {
    hint: Option<Kind>,
    len: usize,
    data: Data,
}

/// A value that does not fit: its text and what was expected.
pub(crate) type Misfit = (String, &'static str);

impl Builder {
    fn new(hint: Option<Kind>) -> Self {
        let data = match hint {
            None | Some(Kind::Number) => Data::Unknown,
            Some(Kind::Int | Kind::Day) => Data::Int(Nums::default()),
            Some(Kind::Real) => Data::Real(Nums::default()),
            Some(Kind::Text) => Data::Text(Vec::new()),
        };
        Builder { hint, len: 0, data }
    }

    fn push(&mut self, value: ValueRef<'_>) -> Result<(), Misfit> {
        if self.hint == Some(Kind::Day) {
            let day = day_value(value)?;
            if let Data::Int(v) = &mut self.data {
                v.push(day);
            }
            self.len += 1;
            return Ok(());
        }
        let value = match self.hint {
            Some(kind) => coerce(kind, value)?,
            None => value,
        };
        match (&mut self.data, value) {
            (Data::Unknown, ValueRef::Null) => {}
            (Data::Unknown, first) => {
                let nulls = self.len;
                self.data = match first {
                    ValueRef::Integer(_) => Data::Int(Nums::nulls(nulls)),
                    ValueRef::Real(_) => Data::Real(Nums::nulls(nulls)),
                    _ => Data::Text(vec![None; nulls]),
                };
                return self.push(first);
            }
            (Data::Int(v), ValueRef::Null) => v.push(None),
            (Data::Int(v), ValueRef::Integer(n)) => v.push(Some(n)),
            (Data::Int(v), ValueRef::Real(f)) => {
                let mut widened = v.map(|n| n as f64);
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

    fn texts(&self) -> Vec<Option<String>> {
        match &self.data {
            Data::Unknown => vec![None; self.len],
            Data::Int(v) => (0..v.len())
                .map(|i| v.get(i).map(|n| n.to_string()))
                .collect(),
            Data::Real(v) => (0..v.len()).map(|i| v.get(i).map(fmt_f64)).collect(),
            Data::Text(v) => v.clone(),
        }
    }

    fn finish(self, name: &str) -> Column {
        match self.data {
            Data::Unknown => {
                let dtype = self.hint.map_or(DataType::String, Kind::dtype);
                Column::full_null(name.into(), self.len, &dtype)
            }
            Data::Int(v) => v.into_column(name),
            Data::Real(v) => v.into_column(name),
            Data::Text(v) => Column::new(name.into(), v),
        }
    }
}

/// A date or timestamp text as its day number.
pub(crate) fn day_value(value: ValueRef<'_>) -> Result<Option<i64>, Misfit> {
    match value {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => parse_day_bytes(t)
            .map(Some)
            .ok_or_else(|| (String::from_utf8_lossy(t).into_owned(), "a date")),
        other => Err((value_text(other), "a date")),
    }
}

/// Converts a value to a declared kind (numbers from text; days are [`day_value`]'s).
pub(crate) fn coerce(kind: Kind, value: ValueRef<'_>) -> Result<ValueRef<'_>, Misfit> {
    Ok(match (kind, value) {
        (_, ValueRef::Null) => ValueRef::Null,
        (Kind::Int | Kind::Number, ValueRef::Real(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
            ValueRef::Integer(f as i64)
        }
        (Kind::Int | Kind::Real | Kind::Number, ValueRef::Integer(_) | ValueRef::Real(_)) => value,
        (Kind::Int | Kind::Real | Kind::Number, ValueRef::Text(t)) => {
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
        (Kind::Int | Kind::Real | Kind::Number, other) => {
            return Err((value_text(other), "a number"));
        }
        _ => value,
    })
}

/// Text of any SQLite value (blobs as hex).
fn value_text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => String::new(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) => fmt_f64(f),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => hex::encode(b),
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
