//! `orgledger status`: what is in the mirror and how fresh it is.

use crate::cli::Exit;
use crate::cli::args::{StatusArgs, StatusFormat};
use crate::cli::settings::Settings;
use crate::cli::table::{self, ResultSet};
use crate::mirror::{self, spec::TABLES};
use anyhow::Result;
use rusqlite::Connection;

/// `observed_at` first: it is the time the run's data is valid from, on the
/// service's clock like `last_change`; `started_at`/`finished_at` are this
/// machine's clock (a sandbox that travels in time makes them differ by days).
const RUNS_SQL: &str = "SELECT id, status, observed_at, started_at, finished_at, requests, \
    ROUND(bytes / 1e6, 1) AS mb, rows_inserted AS inserted, rows_updated AS updated, \
    rows_unchanged AS unchanged, rows_removed AS removed, errors \
    FROM sync_runs ORDER BY id DESC LIMIT 5";

const RUNS_TITLE: &str = "last runs";

const CLOCKS: &str = "(observed_at and last_change: the service's clock, the time the data is valid from; \
    started_at and finished_at: this machine's clock)";

const ERRORS_SQL: &str = "SELECT run_id, operation, entity, http_status, message \
    FROM sync_errors ORDER BY id DESC LIMIT 10";

/// The packed daily series (`mirror::daily_series`): whether reports can read them
/// or read `daily_metrics` instead.
fn series_sql() -> String {
    format!(
        "SELECT COUNT(*) AS users, COALESCE(SUM(series IS NULL), 0) AS unpacked, \
         ROUND(COALESCE(SUM(LENGTH(series)), 0) / 1e6, 1) AS mb, \
         (SELECT MAX(run_id) FROM daily_series_kept) AS kept_through_run, \
         CASE WHEN {} THEN 'yes' ELSE 'no: they read daily_metrics' END AS reports_read_them \
         FROM daily_series",
        mirror::daily_series::COMPLETE_SQL
    )
}

fn tables_sql() -> String {
    TABLES
        .iter()
        .map(|t| {
            format!(
                "SELECT '{0}' AS \"table\", SUM(removed_at IS NULL) AS live, SUM(removed_at IS NOT NULL) AS removed, \
                 (SELECT COUNT(*) FROM {0}_history) AS history, MAX(valid_from) AS last_change FROM {0}",
                t.name
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

fn sections(conn: &Connection) -> Result<Vec<(&'static str, ResultSet)>, mirror::MirrorError> {
    Ok(vec![
        (RUNS_TITLE, table::fetch(conn, RUNS_SQL)?),
        ("tables", table::fetch(conn, &tables_sql())?),
        ("packed daily series", table::fetch(conn, &series_sql())?),
        ("recent errors", table::fetch(conn, ERRORS_SQL)?),
        (
            "alert outbox",
            table::fetch(conn, crate::alerts::outbox::STATUS_SQL)?,
        ),
        (
            "last check and backup",
            table::fetch(conn, mirror::maintenance::STATUS_SQL)?,
        ),
    ])
}

/// A run is `running` only while a process holds the sync lock: runs left so by
/// a process that died are marked `aborted` here, as the next sync would.
fn settle_dead_runs(conn: &Connection, db: &std::path::Path) {
    match mirror::lock::acquire(db) {
        Ok(_lock) => match mirror::runs::abort_stale(conn) {
            Ok(0) => {}
            Ok(n) => tracing::info!(runs = n, "marked runs whose process died as aborted"),
            Err(e) => tracing::warn!(error = %e, "cannot mark runs whose process died as aborted"),
        },
        Err(mirror::MirrorError::Busy(_)) => {}
        // A lock file that cannot be created (a read-only folder) only means the
        // runs are shown as stored.
        Err(e) => tracing::debug!(error = %e, "cannot check the sync lock"),
    }
}

/// Runs the command.
pub fn run(settings: &Settings, args: &StatusArgs) -> Result<Exit> {
    if mirror::path::inspect(&settings.db)? == mirror::path::Found::Nothing {
        return Err(mirror::MirrorError::Missing(settings.db.clone()).into());
    }
    // Opening read-write upgrades an older mirror in place, which status may do.
    let conn = mirror::open_rw(&settings.db)?;
    settle_dead_runs(&conn, &settings.db);
    let sections = sections(&conn)?;
    match args.format {
        StatusFormat::Table => {
            crate::outln!("mirror: {}", settings.db.display());
            for (title, rs) in &sections {
                crate::outln!("\n{title}:");
                crate::out!("{}", rs.to_table());
                if *title == RUNS_TITLE {
                    crate::outln!("{CLOCKS}");
                }
            }
        }
        StatusFormat::Json => {
            let mut obj = serde_json::Map::new();
            obj.insert("db".into(), settings.db.display().to_string().into());
            for (title, rs) in &sections {
                obj.insert(title.replace(' ', "_"), rs.to_json());
            }
            crate::outln!("{}", serde_json::to_string_pretty(&obj)?);
        }
    }
    Ok(Exit::Ok)
}
