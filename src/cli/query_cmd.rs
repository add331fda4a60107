//! `orgledger query`: ad-hoc SQL over the mirror, read-only at the SQLite level:
//! the connection is opened read-only and [`mirror::guard`] refuses, as SQLite
//! prepares the statement, anything that would write or reach outside the mirror.

use crate::cause;
use crate::cli::args::{QueryArgs, QueryFormat};
use crate::cli::settings::Settings;
use crate::cli::table;
use crate::cli::{Exit, UsageError};
use crate::mirror::coverage;
use crate::mirror::{self, guard::GuardError, guard::ReadOnlyGuard};
use anyhow::{Result, anyhow};

/// Runs the command.
pub fn run(settings: &Settings, args: &QueryArgs) -> Result<Exit> {
    if args.sql.trim().trim_end_matches(';').trim().is_empty() {
        return Err(UsageError(
            "the query is empty; give one SQL statement, such as \"SELECT name FROM organizations LIMIT 5\""
                .into(),
        )
        .into());
    }
    let mut conn = mirror::open_ro(&settings.db)?;
    // SQLite's causes are rendered by `cause::sqlite`: as an anyhow source,
    // rusqlite's chain would say its message twice.
    let sqlite =
        |doing: &'static str| move |e: rusqlite::Error| anyhow!("{doing}: {}", cause::sqlite(&e));
    mirror::raw::register_functions(&conn).map_err(sqlite("cannot register raw_json()"))?;
    if let Some(day) = args.as_of {
        coverage::check(&conn, &settings.db, day, chrono::Utc::now().date_naive())?;
        mirror::asof::install(&conn, day).map_err(sqlite("cannot set up the as-of views"))?;
    }
    let guard = ReadOnlyGuard::install(&mut conn)
        .map_err(sqlite("cannot make the connection read-only"))?;
    let mut stmt = guard.prepare(&conn, &args.sql).map_err(|e| match e {
        GuardError::Refused(refused) => anyhow!(refused),
        GuardError::Sql(e) => sqlite("query failed")(e),
    })?;
    let result = table::collect(&mut stmt).map_err(sqlite("query failed"))?;
    match args.format {
        QueryFormat::Table => crate::out!("{}", result.to_table()),
        QueryFormat::Csv => crate::out!("{}", result.to_csv()?),
        QueryFormat::Json => crate::outln!("{}", result.to_json()?),
    }
    Ok(Exit::Ok)
}
