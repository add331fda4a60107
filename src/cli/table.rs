//! Running a SQL statement into a generic result (column names + JSON-like cells)
//! and printing it as an aligned table, CSV or JSON (keys in the statement's column
//! order). Shared by `query`, `status` and `changes`.

use anyhow::Result;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Statement};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// A query result.
#[derive(Debug, Default)]
pub struct ResultSet {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Value>>,
}

/// Runs `sql` and collects every row.
pub fn fetch(conn: &Connection, sql: &str) -> rusqlite::Result<ResultSet> {
    collect(&mut conn.prepare(sql)?)
}

/// Runs a prepared statement and collects every row.
pub fn collect(stmt: &mut Statement<'_>) -> rusqlite::Result<ResultSet> {
    let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
    let n = columns.len();
    let mut rows = Vec::new();
    let mut cursor = stmt.query([])?;
    while let Some(row) = cursor.next()? {
        let mut cells = Vec::with_capacity(n);
        for i in 0..n {
            cells.push(match row.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::from(v),
                ValueRef::Real(v) => Value::from(v),
                ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::from(hex::encode(b)),
            });
        }
        rows.push(cells);
    }
    Ok(ResultSet { columns, rows })
}

fn plain(cell: &Value) -> String {
    match cell {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A result serializes as a JSON array of row objects whose keys keep the
/// statement's column order (a `serde_json::Map` would sort them).
impl Serialize for ResultSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.rows.iter().map(|cells| Row {
            columns: &self.columns,
            cells,
        }))
    }
}

/// One row as a JSON object, keys in column order.
struct Row<'a> {
    columns: &'a [String],
    cells: &'a [Value],
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.columns.iter().zip(self.cells))
    }
}

impl ResultSet {
    /// Rows as pretty JSON, keys in column order.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// The cell of `column` in row `row`, when both exist.
    pub fn cell(&self, row: usize, column: &str) -> Option<&Value> {
        let i = self.columns.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(i)
    }

    /// CSV with a header line.
    pub fn to_csv(&self) -> Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.columns)?;
        for row in &self.rows {
            w.write_record(row.iter().map(plain))?;
        }
        Ok(String::from_utf8(
            w.into_inner().map_err(|e| anyhow::anyhow!(e.to_string()))?,
        )?)
    }

    /// Aligned text, long cells cut at 60 characters.
    pub fn to_table(&self) -> String {
        self.aligned(false)
    }

    /// Aligned text, long cells cut at 60 characters except in the last column,
    /// which nothing follows on its line: a message there keeps its end, where its
    /// cause is.
    pub fn to_table_whole_last(&self) -> String {
        self.aligned(true)
    }

    fn aligned(&self, whole_last: bool) -> String {
        let cut = |s: String| -> String {
            if s.chars().count() > 60 {
                s.chars().take(57).chain("...".chars()).collect()
            } else {
                s
            }
        };
        let last = self.columns.len().saturating_sub(1);
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if whole_last && i == last {
                            plain(c)
                        } else {
                            cut(plain(c))
                        }
                    })
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        // A whole last column runs to the end of its line: its rule stays as wide
        // as its title rather than as its longest message.
        if whole_last && let (Some(w), Some(title)) = (widths.last_mut(), self.columns.last()) {
            *w = title.chars().count();
        }
        let line = |row: &[String]| -> String {
            let parts: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c}{}", " ".repeat(w.saturating_sub(c.chars().count()))))
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.columns);
        out.push('\n');
        out.push_str(&line(
            &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
        ));
        out.push('\n');
        for row in &cells {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rows_keep_the_column_order() {
        let set = ResultSet {
            columns: vec!["zeta".into(), "alpha".into(), "mid".into()],
            rows: vec![vec![Value::from(1), Value::from("a"), Value::Null]],
        };
        let json = serde_json::to_string(&set).expect("json");
        assert_eq!(json, r#"[{"zeta":1,"alpha":"a","mid":null}]"#);
    }
}
