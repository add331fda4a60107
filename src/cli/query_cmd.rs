//! `orgledger query`: ad-hoc SQL over the mirror, on a read-only connection so a
//! statement that writes is refused by SQLite itself, not by a keyword filter.

use crate::cli::Exit;
use crate::cli::args::{QueryArgs, QueryFormat};
use crate::cli::settings::Settings;
use crate::cli::table;
use crate::mirror;
use anyhow::{Context, Result};

/// Runs the command.
pub fn run(settings: &Settings, args: &QueryArgs) -> Result<Exit> {
    let conn = mirror::open_ro(&settings.db)?;
    mirror::raw::register_functions(&conn).context("cannot register raw_json()")?;
    if let Some(day) = args.as_of {
        mirror::asof::install(&conn, day).context("cannot set up the as-of views")?;
    }
    let result = table::fetch(&conn, &args.sql).map_err(|e| match e {
        rusqlite::Error::SqliteFailure(ref f, _) if f.code == rusqlite::ErrorCode::ReadOnly => {
            anyhow::anyhow!("the query tries to write; `query` is read-only ({e})")
        }
        other => anyhow::anyhow!("query failed: {other}"),
    })?;
    match args.format {
        QueryFormat::Table => print!("{}", result.to_table()),
        QueryFormat::Csv => print!("{}", result.to_csv()?),
        QueryFormat::Json => println!("{}", serde_json::to_string_pretty(&result.to_json())?),
    }
    Ok(Exit::Ok)
}
