//! Reading the mirror as it stood at the end of a given day (UTC).
//!
//! For each mirrored table `t`, a TEMP view named `t` is created on the reading
//! connection. SQLite resolves unqualified names in the temp schema first, so every
//! query (the shipped ones in `queries/` and users' custom ones) reads the state as
//! of the cut-off without knowing about history at all. A second view, `t_versions`,
//! lists every version that started before the cut-off with its `valid_from` and
//! `valid_to` (NULL while current, capped at nothing), for reports that need trends
//! from history.

use crate::mirror::spec::{TABLES, TableSpec};
use chrono::NaiveDate;
use rusqlite::Connection;

/// The exclusive cut-off for "as of the end of day `as_of`": the next midnight, UTC,
/// as mirror timestamp text.
pub fn cutoff(as_of: NaiveDate) -> String {
    let next = as_of.succ_opt().unwrap_or(as_of);
    format!("{}T00:00:00.000Z", next.format("%Y-%m-%d"))
}

fn view_sql(spec: &TableSpec, cut: &str) -> String {
    let cols: Vec<String> = spec
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let cols = cols.join(", ");
    let name = spec.name;
    let live = format!("(removed_at IS NULL OR removed_at >= '{cut}')");
    format!(
        "CREATE TEMP VIEW {name} AS \
           SELECT {cols}, valid_from, run_id FROM main.{name} \
             WHERE valid_from < '{cut}' AND {live} \
           UNION ALL \
           SELECT {cols}, valid_from, run_id FROM main.{name}_history \
             WHERE valid_from < '{cut}' AND valid_to >= '{cut}' AND {live};\n\
         CREATE TEMP VIEW {name}_versions AS \
           SELECT {cols}, valid_from, NULL AS valid_to, removed_at FROM main.{name} \
             WHERE valid_from < '{cut}' \
           UNION ALL \
           SELECT {cols}, valid_from, valid_to, removed_at FROM main.{name}_history \
             WHERE valid_from < '{cut}';\n"
    )
}

/// Installs the as-of views on a (read-only) connection. Calling it again moves the
/// cut-off.
pub fn install(conn: &Connection, as_of: NaiveDate) -> rusqlite::Result<()> {
    let cut = cutoff(as_of);
    let mut sql = String::new();
    for spec in TABLES {
        sql.push_str(&format!(
            "DROP VIEW IF EXISTS temp.{0}; DROP VIEW IF EXISTS temp.{0}_versions;\n",
            spec.name
        ));
        sql.push_str(&view_sql(spec, &cut));
    }
    conn.execute_batch(&sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoff_is_the_next_midnight() {
        let day = NaiveDate::from_ymd_opt(2026, 2, 28).expect("date");
        assert_eq!(cutoff(day), "2026-03-01T00:00:00.000Z");
    }
}
