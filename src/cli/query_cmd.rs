//! `orgledger query`: ad-hoc SQL over the mirror, read-only at the SQLite level:
//! the connection is opened read-only and [`mirror::guard`] refuses, as SQLite
//! prepares the statement, anything that would write or reach outside the mirror.

use crate::cli::Exit;
use crate::cli::args::{QueryArgs, QueryFormat};
use crate::cli::settings::Settings;
use crate::cli::table;
use crate::mirror::{self, guard::GuardError, guard::ReadOnlyGuard};
use anyhow::{Context, Result, anyhow};

/// Runs the command.
pub fn run(settings: &Settings, args: &QueryArgs) -> Result<Exit> {
    let mut conn = mirror::open_ro(&settings.db)?;
    mirror::raw::register_functions(&conn).context("cannot register raw_json()")?;
    if let Some(day) = args.as_of {
        mirror::asof::install(&conn, day).context("cannot set up the as-of views")?;
    }
    let guard =
        ReadOnlyGuard::install(&mut conn).context("cannot make the connection read-only")?;
    let mut stmt = guard.prepare(&conn, &args.sql).map_err(|e| match e {
        GuardError::Refused(refused) => anyhow!(refused),
        GuardError::Sql(e) => anyhow!("query failed: {e}"),
    })?;
    let result = table::collect(&mut stmt).map_err(|e| anyhow!("query failed: {e}"))?;
    match args.format {
        QueryFormat::Table => print!("{}", result.to_table()),
        QueryFormat::Csv => print!("{}", result.to_csv()?),
        QueryFormat::Json => println!("{}", serde_json::to_string_pretty(&result.to_json())?),
    }
    Ok(Exit::Ok)
}
