//! Reading the mirror as it stood at the end of a given day (UTC).
//!
//! For each mirrored table `t`, a TEMP view named `t` is created on the reading
//! connection. SQLite resolves unqualified names in the temp schema first, so every
//! query (the shipped ones in `queries/` and users' custom ones) reads the state as
//! of the cut-off without knowing about history at all. A second view, `t_versions`,
//! lists every version that started before the cut-off with its `valid_from` and
//! `valid_to` (NULL while current, capped at nothing), for reports that need trends
//! from history.
//!
//! Every `valid_from`, `valid_to` and `removed_at` the mirror holds is the
//! `observed_at` of the sync run that wrote it. So when no run observed the service at
//! or after the cut-off (the common case: reports as of today), no history row can be
//! current then, and the view `t` reads `main.t` alone. That is worth a query on
//! `sync_runs`: SQLite cannot join through a UNION ALL view without first copying the
//! whole view, every column of it, into a temporary table.

use crate::mirror::moves;
use crate::mirror::spec::{TABLES, TableSpec};
use chrono::NaiveDate;
use rusqlite::Connection;

/// The exclusive cut-off for "as of the end of day `as_of`": the next midnight, UTC,
/// as mirror timestamp text.
pub fn cutoff(as_of: NaiveDate) -> String {
    let next = as_of.succ_opt().unwrap_or(as_of);
    format!("{}T00:00:00.000Z", next.format("%Y-%m-%d"))
}

fn view_sql(spec: &TableSpec, cut: &str, history_current: bool) -> String {
    let cols: Vec<String> = spec
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let cols = cols.join(", ");
    let name = spec.name;
    let live = format!("(removed_at IS NULL OR removed_at >= '{cut}')");
    // Without a run at or after the cut-off, every valid_from and removed_at is before
    // it: the live rows are the ones not removed (one test per row fewer on the
    // largest scans).
    let current = if history_current {
        format!(
            "SELECT {cols}, valid_from, run_id FROM main.{name} \
               WHERE valid_from < '{cut}' AND {live} \
             UNION ALL \
             SELECT {cols}, valid_from, run_id FROM ({archived}) WHERE {live}",
            archived = moves::archived_sql(
                spec,
                &format!("valid_from < '{cut}' AND valid_to >= '{cut}'")
            ),
        )
    } else {
        format!("SELECT {cols}, valid_from, run_id FROM main.{name} WHERE removed_at IS NULL")
    };
    format!(
        "CREATE TEMP VIEW {name} AS {current};\n\
         CREATE TEMP VIEW {name}_versions AS \
           SELECT {cols}, valid_from, NULL AS valid_to, removed_at FROM main.{name} \
             WHERE valid_from < '{cut}' \
           UNION ALL \
           SELECT {cols}, valid_from, valid_to, removed_at FROM ({archived});\n",
        archived = moves::archived_sql(spec, &format!("valid_from < '{cut}'")),
    )
}

/// Whether a sync run observed the service at or after `cut`, so that some history
/// row may still have been current then (see the module's doc).
pub(crate) fn history_current_at(conn: &Connection, cut: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM main.sync_runs WHERE observed_at >= ?1)",
        [cut],
        |row| row.get(0),
    )
}

/// Installs the as-of views on a connection. Calling it again moves the cut-off.
///
/// A read-only connection stays in one read transaction from here on: the views are
/// chosen for one snapshot of the mirror, and a sync that commits later (observing a
/// later time, archiving rows) must not show through them.
pub fn install(conn: &Connection, as_of: NaiveDate) -> rusqlite::Result<()> {
    if conn.is_autocommit() && conn.is_readonly(rusqlite::MAIN_DB)? {
        conn.execute_batch("BEGIN")?;
    }
    moves::install_archived(conn)?;
    let cut = cutoff(as_of);
    let history_current = history_current_at(conn, &cut)?;
    let mut sql = String::new();
    for spec in TABLES {
        sql.push_str(&format!(
            "DROP VIEW IF EXISTS temp.{0}; DROP VIEW IF EXISTS temp.{0}_versions;\n",
            spec.name
        ));
        sql.push_str(&view_sql(spec, &cut, history_current));
    }
    conn.execute_batch(&sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::mirror::spec::ORGANIZATIONS;
    use crate::mirror::testkit::{TestMirror, i, t};

    fn name_as_of(conn: &Connection, day: NaiveDate) -> Option<String> {
        install(conn, day).expect("views");
        conn.query_row("SELECT name FROM organizations WHERE id = 1", [], |r| {
            r.get(0)
        })
        .ok()
    }

    fn view_reads_history(conn: &Connection) -> bool {
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_temp_master WHERE name = 'organizations'",
                [],
                |r| r.get(0),
            )
            .expect("view");
        sql.contains("organizations_history")
    }

    #[test]
    fn history_is_read_only_when_a_run_observed_the_service_after_the_cut_off() {
        let mut mirror = TestMirror::new();
        mirror.run("2026-03-01T12:00:00.000Z", |run| {
            run.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("Old"))])
        });
        mirror.run("2026-03-02T12:00:00.000Z", |run| {
            run.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("New"))])
        });
        mirror.close();
        let conn = crate::mirror::open_ro(&mirror.path).expect("open");
        let day = |d| NaiveDate::from_ymd_opt(2026, 3, d).expect("date");
        assert_eq!(name_as_of(&conn, day(1)).as_deref(), Some("Old"));
        assert!(view_reads_history(&conn));
        assert_eq!(name_as_of(&conn, day(2)).as_deref(), Some("New"));
        assert!(!view_reads_history(&conn));
    }

    #[test]
    fn a_sync_committed_after_the_views_were_installed_does_not_show_through_them() {
        let mut mirror = TestMirror::new();
        mirror.run("2026-03-01T12:00:00.000Z", |run| {
            run.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("Old"))])
        });
        let reader = crate::mirror::open_ro(&mirror.path).expect("open");
        let day1 = NaiveDate::from_ymd_opt(2026, 3, 1).expect("date");
        assert_eq!(name_as_of(&reader, day1).as_deref(), Some("Old"));
        // A later run archives the row the views (main table only) read.
        mirror.run("2026-03-02T12:00:00.000Z", |run| {
            run.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("New"))])
        });
        let name: Option<String> = reader
            .query_row("SELECT name FROM organizations WHERE id = 1", [], |r| {
                r.get(0)
            })
            .ok();
        assert_eq!(name.as_deref(), Some("Old"));
    }

    #[test]
    fn cutoff_is_the_next_midnight() {
        let day = NaiveDate::from_ymd_opt(2026, 2, 28).expect("date");
        assert_eq!(cutoff(day), "2026-03-01T00:00:00.000Z");
    }
}
