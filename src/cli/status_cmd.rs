//! `orgledger status`: what is in the mirror and how fresh it is.

use crate::cli::Exit;
use crate::cli::args::{StatusArgs, StatusFormat};
use crate::cli::settings::Settings;
use crate::cli::table::{self, ResultSet};
use crate::mirror::{self, spec::TABLES};
use anyhow::Result;
use rusqlite::Connection;

const RUNS_SQL: &str = "SELECT id, status, started_at, observed_at, finished_at, requests, \
    ROUND(bytes / 1e6, 1) AS mb, rows_inserted AS inserted, rows_updated AS updated, \
    rows_unchanged AS unchanged, rows_removed AS removed, errors \
    FROM sync_runs ORDER BY id DESC LIMIT 5";

const ERRORS_SQL: &str = "SELECT run_id, operation, entity, http_status, message \
    FROM sync_errors ORDER BY id DESC LIMIT 10";

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

fn sections(conn: &Connection) -> Result<Vec<(&'static str, ResultSet)>> {
    Ok(vec![
        ("last runs", table::fetch(conn, RUNS_SQL)?),
        ("tables", table::fetch(conn, &tables_sql())?),
        ("recent errors", table::fetch(conn, ERRORS_SQL)?),
    ])
}

/// Runs the command.
pub fn run(settings: &Settings, args: &StatusArgs) -> Result<Exit> {
    if !settings.db.exists() {
        return Err(mirror::MirrorError::Missing(settings.db.clone()).into());
    }
    // Opening read-write upgrades an older mirror in place, which status may do.
    let conn = mirror::open_rw(&settings.db)?;
    let sections = sections(&conn)?;
    match args.format {
        StatusFormat::Table => {
            println!("mirror: {}", settings.db.display());
            for (title, rs) in &sections {
                println!("\n{title}:");
                print!("{}", rs.to_table());
            }
        }
        StatusFormat::Json => {
            let mut obj = serde_json::Map::new();
            obj.insert("db".into(), settings.db.display().to_string().into());
            for (title, rs) in &sections {
                obj.insert(title.replace(' ', "_"), rs.to_json());
            }
            println!("{}", serde_json::to_string_pretty(&obj)?);
        }
    }
    Ok(Exit::Ok)
}
