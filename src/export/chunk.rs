//! A bounded chunk of a table's rows, one typed polars builder per column.
//!
//! SQLite columns are dynamically typed; the table's `TableSpec` says what each one
//! holds. A value that does not fit its declared type is an error naming table, column
//! and value rather than a silent null.

use crate::calendar::parse_timestamp;
use crate::export::ExportError;
use crate::mirror::spec::{Column, Ty};
use polars::prelude::{
    BooleanChunkedBuilder, ChunkedBuilder, DataFrame, Float64Type, Int64Type, IntoColumn,
    IntoSeries, PrimitiveChunkedBuilder, StringChunkedBuilder, TimeUnit, TimeZone,
};
use rusqlite::types::ValueRef;

enum Builder {
    Int(PrimitiveChunkedBuilder<Int64Type>),
    Real(PrimitiveChunkedBuilder<Float64Type>),
    Bool(BooleanChunkedBuilder),
    Text(StringChunkedBuilder),
    /// Milliseconds since the epoch, typed as a UTC datetime when finished.
    Time(PrimitiveChunkedBuilder<Int64Type>),
}

impl Builder {
    fn new(col: &Column, capacity: usize) -> Self {
        let name = col.name.into();
        match col.ty {
            Ty::Int => Builder::Int(PrimitiveChunkedBuilder::new(name, capacity)),
            Ty::Real | Ty::Number => Builder::Real(PrimitiveChunkedBuilder::new(name, capacity)),
            Ty::Bool => Builder::Bool(BooleanChunkedBuilder::new(name, capacity)),
            Ty::Text | Ty::Json => Builder::Text(StringChunkedBuilder::new(name, capacity)),
            Ty::Time => Builder::Time(PrimitiveChunkedBuilder::new(name, capacity)),
        }
    }
}

/// Rows of one table (or one partition of it) collected column by column.
pub struct Chunk {
    table: &'static str,
    columns: Vec<Column>,
    builders: Vec<Builder>,
    rows: usize,
    capacity: usize,
}

impl Chunk {
    /// An empty chunk for `columns` with room for `capacity` rows.
    pub fn new(table: &'static str, columns: &[Column], capacity: usize) -> Self {
        Chunk {
            table,
            columns: columns.to_vec(),
            builders: columns.iter().map(|c| Builder::new(c, capacity)).collect(),
            rows: 0,
            capacity,
        }
    }

    /// Rows collected so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends one row read from SQLite (values in column order).
    pub fn push(&mut self, row: &rusqlite::Row<'_>) -> Result<(), RowError> {
        for (i, builder) in self.builders.iter_mut().enumerate() {
            let value = row.get_ref(i).map_err(RowError::Sqlite)?;
            push_value(builder, value).map_err(|(value, expected)| {
                RowError::Export(ExportError::BadValue {
                    table: self.table,
                    column: self.columns[i].name,
                    value,
                    expected,
                })
            })?;
        }
        self.rows += 1;
        Ok(())
    }

    /// The rows as a frame; the chunk is left empty, ready for the next rows.
    pub fn take(&mut self) -> DataFrame {
        let fresh: Vec<Builder> = self
            .columns
            .iter()
            .map(|c| Builder::new(c, self.capacity))
            .collect();
        let builders = std::mem::replace(&mut self.builders, fresh);
        let height = std::mem::take(&mut self.rows);
        let columns = builders
            .into_iter()
            .map(|b| match b {
                Builder::Int(b) => b.finish().into_column(),
                Builder::Real(b) => b.finish().into_column(),
                Builder::Bool(b) => b.finish().into_column(),
                Builder::Text(b) => b.finish().into_column(),
                Builder::Time(b) => b
                    .finish()
                    .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
                    .into_series()
                    .into_column(),
            })
            .collect();
        // Every builder got one value per row, so the heights agree.
        DataFrame::new(height, columns).unwrap_or_default()
    }
}

/// Why a row could not be appended: SQLite failed, or a value did not fit.
pub enum RowError {
    /// Reading the value failed.
    Sqlite(rusqlite::Error),
    /// The value does not fit its column.
    Export(ExportError),
}

/// A value that does not fit: its text and what the column declares.
type Misfit = (String, &'static str);

fn push_value(builder: &mut Builder, value: ValueRef<'_>) -> Result<(), Misfit> {
    match builder {
        Builder::Int(b) => b.append_option(match value {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n),
            ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
            other => return Err((text_of(other), "an integer")),
        }),
        Builder::Real(b) => b.append_option(match value {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n as f64),
            ValueRef::Real(f) => Some(f),
            other => return Err((text_of(other), "a number")),
        }),
        Builder::Bool(b) => b.append_option(match value {
            ValueRef::Null => None,
            ValueRef::Integer(0) => Some(false),
            ValueRef::Integer(1) => Some(true),
            other => return Err((text_of(other), "a boolean (0 or 1)")),
        }),
        Builder::Text(b) => match value {
            ValueRef::Null => b.append_null(),
            ValueRef::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => b.append_value(s),
                Err(_) => return Err((text_of(value), "UTF-8 text")),
            },
            ValueRef::Integer(n) => b.append_value(n.to_string()),
            ValueRef::Real(f) => b.append_value(f.to_string()),
            ValueRef::Blob(_) => return Err((text_of(value), "text")),
        },
        Builder::Time(b) => b.append_option(match value {
            ValueRef::Null => None,
            ValueRef::Text(t) => {
                Some(epoch_millis(t).ok_or_else(|| (text_of(value), "a mirror timestamp"))?)
            }
            other => return Err((text_of(other), "a mirror timestamp")),
        }),
    }
    Ok(())
}

/// Milliseconds since 1970-01-01 of a mirror timestamp (`crate::calendar`'s reader).
pub fn epoch_millis(t: &[u8]) -> Option<i64> {
    let (day, nanos) = parse_timestamp(t)?;
    Some(day * 86_400_000 + nanos / 1_000_000)
}

fn text_of(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_timestamps_become_epoch_milliseconds() {
        assert_eq!(epoch_millis(b"1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            epoch_millis(b"2026-11-25T04:38:53.125Z"),
            Some(
                chrono::DateTime::parse_from_rfc3339("2026-11-25T04:38:53.125Z")
                    .expect("rfc3339")
                    .timestamp_millis()
            )
        );
        assert_eq!(epoch_millis(b"2026-11-25"), None);
        assert_eq!(epoch_millis(b"2026-11-25T24:00:00.000Z"), None);
        assert_eq!(epoch_millis(b"2026-02-30T00:00:00.000Z"), None);
    }
}
