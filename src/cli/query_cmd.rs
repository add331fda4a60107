//! `orgledger query`: ad-hoc SQL over the mirror, read-only at the SQLite level:
//! the connection is opened read-only and [`mirror::guard`] refuses, as SQLite
//! prepares the statement, anything that would write or reach outside the mirror.

use crate::cause;
use crate::cli::Exit;
use crate::cli::args::{QueryArgs, QueryFormat};
use crate::cli::settings::Settings;
use crate::cli::table;
use crate::mirror::{self, guard::GuardError, guard::ReadOnlyGuard};
use anyhow::{Result, anyhow};

/// Runs the command.
pub fn run(settings: &Settings, args: &QueryArgs) -> Result<Exit> {
    let mut conn = mirror::open_ro(&settings.db)?;
    // SQLite's causes are rendered by `cause::sqlite`: as an anyhow source,
    // rusqlite's chain would say its message twice.
    let sqlite =
        |doing: &'static str| move |e: rusqlite::Error| anyhow!("{doing}: {}", cause::sqlite(&e));
    mirror::raw::register_functions(&conn).map_err(sqlite("cannot register raw_json()"))?;
    if let Some(day) = args.as_of {
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
        QueryFormat::Table => print!("{}", result.to_table()),
        QueryFormat::Csv => print!("{}", result.to_csv()?),
        QueryFormat::Json => println!("{}", result.to_json()?),
    }
    Ok(Exit::Ok)
}
