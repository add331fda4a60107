//! `orgledger changes`: what the mirror saw change between two points of its
//! history, printed or written as `changes.csv` / `changes.json` (offline).

use crate::cause;
use crate::cli::args::{ChangesArgs, QueryFormat};
use crate::cli::settings::Settings;
use crate::cli::table::ResultSet;
use crate::cli::{Exit, UsageError};
use crate::file_mode::FileMode;
use crate::mirror;
use crate::mirror::coverage::{self, CoverageError};
use crate::report::Format;
use crate::report::changes::{self, Change, Point, Query, When};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// Runs the command.
pub fn run(settings: &Settings, args: &ChangesArgs) -> Result<Exit> {
    let conn = mirror::open_ro(&settings.db)?;
    let since = point(&conn, settings, args.since, End::Since)?;
    let until = match args.until {
        Some(when) => point(&conn, settings, when, End::Until)?,
        None => changes::when::latest(&conn, chrono::Utc::now())?,
    };
    if since > until {
        return Err(UsageError(format!(
            "--since {} is after --until {}: a window must end after it starts",
            since.at, until.at
        ))
        .into());
    }
    let extract = crate::report::builtin_extract(changes::NAME.as_str())?;
    let query = Query {
        since,
        until,
        kinds: args.kind.clone().unwrap_or_default(),
        all_fields: args.all_fields,
    };
    let rows = changes::read(&conn, &extract, &query)
        .with_context(|| format!("cannot list the changes in {}", settings.db.display()))?;
    match &args.out {
        Some(dir) => write(dir, &rows, args.format, settings.file_mode(args.file_mode))?,
        None => print(&rows, args.format)?,
    }
    Ok(Exit::Ok)
}

/// The point `when` stands for, once its day passes the rule every date-taking
/// command applies (not before the first sync, not in the future). A `--since`
/// before the first sync is the exception: a window never reaches before the
/// mirror's start, so it reads from there and says something true.
fn point(conn: &rusqlite::Connection, settings: &Settings, when: When, end: End) -> Result<Point> {
    let flag = end.flag();
    if let Some(day) = when.day() {
        let today = chrono::Utc::now().date_naive();
        match coverage::check(conn, &settings.db, day, today) {
            Err(CoverageError::BeforeFirstSync { .. }) if end == End::Since => {}
            checked => checked.context(flag)?,
        }
    }
    when.resolve(conn).context(flag)
}

/// Which end of the window a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Since,
    Until,
}

impl End {
    fn flag(self) -> &'static str {
        match self {
            End::Since => "--since",
            End::Until => "--until",
        }
    }
}

/// Writes the files into `dir` and says where, with the row count.
fn write(dir: &Path, rows: &[Change], format: QueryFormat, mode: FileMode) -> Result<()> {
    mode.create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {}", dir.display(), cause::io(&e)))?;
    let df = changes::frame(rows)?;
    let formats: &[Format] = match format {
        QueryFormat::Csv => &[Format::Csv],
        QueryFormat::Json => &[Format::Json],
        QueryFormat::Table => &[Format::Csv, Format::Json],
    };
    for f in formats {
        let file = crate::render::files::write_report(dir, changes::NAME.as_str(), &df, *f, mode)?;
        crate::outln!("{} ({} changes)", file.path.display(), file.rows);
    }
    Ok(())
}

fn print(rows: &[Change], format: QueryFormat) -> Result<()> {
    let set = ResultSet {
        columns: changes::COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: rows.iter().map(cells).collect(),
    };
    match format {
        QueryFormat::Table if rows.is_empty() => crate::outln!("no changes in this window"),
        QueryFormat::Table => crate::out!("{}", set.to_table()),
        QueryFormat::Csv => crate::out!("{}", set.to_csv()?),
        QueryFormat::Json => crate::outln!("{}", set.to_json()?),
    }
    Ok(())
}

fn cells(c: &Change) -> Vec<Value> {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::from);
    vec![
        Value::from(c.observed_at.clone()),
        Value::from(c.run_id),
        Value::from(c.kind.clone()),
        Value::from(c.entity_type.clone()),
        Value::from(c.entity_id.clone()),
        text(&c.entity_name),
        text(&c.field),
        text(&c.before),
        text(&c.after),
    ]
}
