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

const CLOCKS: &str = "(observed_at and last_change: the service's clock, the time the data is valid from; \
    started_at and finished_at: this machine's clock)";

/// `message` last: it is shown whole there (its cause is at its end).
const ERRORS_SQL: &str = "SELECT run_id, operation, entity, http_status, message \
    FROM sync_errors ORDER BY id DESC LIMIT 10";

/// The users' daily figures prepared for reports (`mirror::daily_series`): how many,
/// and whether reports read them or every user's `daily_metrics` rows. Its JSON keys
/// are a stable interface; the text form says it in a sentence ([`daily_figures`]).
fn series_sql() -> String {
    format!(
        "SELECT COUNT(*) AS users, COALESCE(SUM(series IS NULL), 0) AS users_not_prepared, \
         ROUND(COALESCE(SUM(LENGTH(series)), 0) / 1e6, 1) AS mb, \
         CASE WHEN {} THEN 'prepared figures' ELSE 'daily_metrics' END AS reports_read \
         FROM daily_series",
        mirror::daily_series::COMPLETE_SQL
    )
}

fn tables_sql() -> String {
    TABLES
        .iter()
        .map(|t| {
            format!(
                "SELECT '{0}' AS \"table\", COALESCE(SUM(removed_at IS NULL), 0) AS live, \
                 COALESCE(SUM(removed_at IS NOT NULL), 0) AS removed, \
                 {1} AS history, MAX(valid_from) AS last_change FROM {0}",
                t.name,
                mirror::moves::archived_count_sql(t)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// How a section reads in the text form.
enum Text {
    /// A table; with no rows, the title and this sentence instead. Then a note.
    /// With `whole_last`, the last column's cells are not cut.
    Table {
        empty: &'static str,
        note: Option<&'static str>,
        whole_last: bool,
    },
    /// One sentence made from the rows.
    Sentence(fn(&ResultSet) -> String),
}

/// One part of the status: its JSON key, its title and text form, its rows.
struct Section {
    key: &'static str,
    title: &'static str,
    text: Text,
    rows: ResultSet,
}

fn sections(conn: &Connection) -> Result<Vec<Section>, mirror::MirrorError> {
    let table = |empty| Text::Table {
        empty,
        note: None,
        whole_last: false,
    };
    Ok(vec![
        Section {
            key: "last_runs",
            title: "last runs",
            text: Text::Table {
                empty: "none yet",
                note: Some(CLOCKS),
                whole_last: false,
            },
            rows: table::fetch(conn, RUNS_SQL)?,
        },
        Section {
            key: "tables",
            title: "tables",
            text: table("none"),
            rows: table::fetch(conn, &tables_sql())?,
        },
        Section {
            key: "daily_figures",
            title: "daily figures",
            text: Text::Sentence(daily_figures),
            rows: table::fetch(conn, &series_sql())?,
        },
        Section {
            key: "recent_errors",
            title: "recent errors",
            text: Text::Table {
                empty: "none",
                note: None,
                whole_last: true,
            },
            rows: table::fetch(conn, ERRORS_SQL)?,
        },
        Section {
            key: "alert_outbox",
            title: "alert outbox",
            text: table("no events"),
            rows: table::fetch(conn, crate::alerts::outbox::STATUS_SQL)?,
        },
        Section {
            key: "email_alerts",
            title: "alert e-mails (per recipient)",
            text: Text::Table {
                empty: "none",
                note: None,
                whole_last: true,
            },
            rows: table::fetch(conn, crate::alerts::outbox::MAIL_STATUS_SQL)?,
        },
        Section {
            key: "email_subscriptions",
            title: "report subscriptions (last as-of date, per recipient)",
            text: Text::Table {
                empty: "none sent",
                note: None,
                whole_last: true,
            },
            rows: table::fetch(conn, crate::email::sends::STATUS_SQL)?,
        },
        Section {
            key: "last_check_and_backup",
            title: "last check and backup",
            text: table("none yet"),
            rows: table::fetch(conn, mirror::maintenance::STATUS_SQL)?,
        },
        Section {
            key: "erasures",
            title: "erasures (personal data forgotten; the last 20)",
            text: table("none"),
            rows: table::fetch(conn, mirror::privacy::STATUS_SQL)?,
        },
    ])
}

/// Whether the reports' fast copy of the users' daily compute and storage figures
/// is ready, in words.
fn daily_figures(rows: &ResultSet) -> String {
    let int = |column| rows.cell(0, column).and_then(|v| v.as_i64()).unwrap_or(0);
    let (users, unready) = (int("users"), int("users_not_prepared"));
    let mb = rows.cell(0, "mb").and_then(|v| v.as_f64()).unwrap_or(0.0);
    match (users, unready) {
        (0, _) => "none (no white label user's daily metrics are in the mirror)".to_string(),
        (_, 0) => {
            format!("{users} users' daily compute and storage, ready for reports ({mb:.1} MB)")
        }
        _ => format!(
            "{unready} of {users} users' figures could not be prepared, so reports read every user's from daily_metrics (slower)"
        ),
    }
}

fn print_text(db: &std::path::Path, sections: &[Section]) -> Result<()> {
    crate::outln!("mirror: {}", db.display());
    for section in sections {
        match &section.text {
            Text::Sentence(say) => crate::outln!("\n{}: {}", section.title, say(&section.rows)),
            Text::Table { empty, .. } if section.rows.rows.is_empty() => {
                crate::outln!("\n{}: {empty}", section.title);
            }
            Text::Table {
                note, whole_last, ..
            } => {
                crate::outln!("\n{}:", section.title);
                if *whole_last {
                    crate::out!("{}", section.rows.to_table_whole_last());
                } else {
                    crate::out!("{}", section.rows.to_table());
                }
                if let Some(note) = note {
                    crate::outln!("{note}");
                }
            }
        }
    }
    Ok(())
}

/// The JSON form: `db`, then each section under its key, columns in order.
struct Json<'a> {
    db: String,
    sections: &'a [Section],
}

impl serde::Serialize for Json<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.sections.len() + 1))?;
        map.serialize_entry("db", &self.db)?;
        for section in self.sections {
            map.serialize_entry(section.key, &section.rows)?;
        }
        map.end()
    }
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
        StatusFormat::Table => print_text(&settings.db, &sections)?,
        StatusFormat::Json => {
            let json = Json {
                db: settings.db.display().to_string(),
                sections: &sections,
            };
            crate::outln!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(Exit::Ok)
}
