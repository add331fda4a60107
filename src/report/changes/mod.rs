//! The change log: what the mirror saw change between two points of its history
//! (`orgledger changes`, and the `changes` report over the 7 days up to the as-of
//! date).
//!
//! The kinds come from `queries/changes.sql` (LAG over each document's versions);
//! `--all-fields` adds the statements of [`all_fields`]. This module binds the
//! window, merges and orders the rows, and turns them into a frame for the report
//! files.

mod all_fields;
pub mod kinds;
pub mod when;

use crate::report::batches::Emit;
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, SqlSite, pl, query_err};
use crate::report::sql::Extract;
use polars::prelude::{Column, DataFrame, IntoColumn, NamedFrom, Series};
use rusqlite::Connection;
use rusqlite::types::Value;

pub use kinds::{FIELD_CHANGED, KINDS, KindFilter};
pub use when::{Point, When, WhenError};

/// The report's name (and its SQL file's).
pub const NAME: ReportName = ReportName::new("changes");

/// The report: read back by the pages and `index.html`.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "what changed in the mirror over the week before the as-of date",
    include_str!("../../../queries/changes.sql"),
    &COLUMNS,
    build,
)
.kept()
.cost(3);

/// The columns, in order.
pub const COLUMNS: [&str; 9] = [
    "observed_at",
    "run_id",
    "kind",
    "entity_type",
    "entity_id",
    "entity_name",
    "field",
    "before",
    "after",
];

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// When the mirror saw it (the sync run's server time).
    pub observed_at: String,
    /// The sync run that saw it.
    pub run_id: i64,
    /// The entity's type (`organization`, `member`, `user`, `project`, `trial`).
    pub entity_type: String,
    /// Its id (`organization_id/user_id` for a member).
    pub entity_id: String,
    /// The kind, e.g. `limit.changed`.
    pub kind: String,
    /// The column that changed, when one did.
    pub field: Option<String>,
    /// Its name (members: `user in organization`; trials: the organization).
    pub entity_name: Option<String>,
    /// The value before.
    pub before: Option<String>,
    /// The value after.
    pub after: Option<String>,
}

/// What to list.
#[derive(Debug, Clone)]
pub struct Query {
    /// Changes after this point...
    pub since: Point,
    /// ...up to and including this one.
    pub until: Point,
    /// Which kinds to keep.
    pub kinds: KindFilter,
    /// Also `field.changed` rows for the columns no kind covers.
    pub all_fields: bool,
}

/// The changes of `query`, in time order (then by entity, kind and field). The
/// window never starts before the mirror's first sync ([`when::baseline`]).
pub fn read(
    conn: &Connection,
    extract: &Extract,
    query: &Query,
) -> Result<Vec<Change>, ReportError> {
    let since = match when::baseline(conn)? {
        Some(first) if first > query.since => first,
        _ => query.since.clone(),
    };
    let params = [
        (":since_at", Value::Text(since.at.clone())),
        (":since_run", Value::Integer(since.run)),
        (":until_at", Value::Text(query.until.at.clone())),
        (":until_run", Value::Integer(query.until.run)),
    ];
    let mut rows = Vec::new();
    if since >= query.until {
        return Ok(rows);
    }
    crate::mirror::moves::install_archived(conn).map_err(query_err(
        NAME.as_str(),
        "the mirror's history",
        "archived versions",
    ))?;
    let site = |part: &str| SqlSite::boxed(&extract.report, &extract.origin, part);
    run(
        conn,
        extract.part("main")?,
        &params,
        &site("main"),
        &mut rows,
    )?;
    if query.all_fields || query.kinds.names_field_changed() {
        let generated = SqlSite::boxed(
            NAME.as_str(),
            "generated from the mirror's columns",
            "all_fields",
        );
        for sql in all_fields::statements() {
            run(conn, &sql, &params, &generated, &mut rows)?;
        }
    }
    rows.retain(|c| query.kinds.keeps(&c.kind));
    // Field order of `Change` is the listing order.
    rows.sort();
    Ok(rows)
}

/// Runs one statement and appends its rows.
fn run(
    conn: &Connection,
    sql: &str,
    params: &[(&str, Value)],
    site: &SqlSite,
    out: &mut Vec<Change>,
) -> Result<(), ReportError> {
    let failed = |cause| ReportError::Query {
        site: Box::new(site.clone()),
        cause,
    };
    let mut stmt = conn.prepare(sql).map_err(failed)?;
    for i in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(i).unwrap_or("?").to_string();
        let Some((_, value)) = params.iter().find(|(n, _)| *n == name) else {
            let available: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
            return Err(ReportError::UnknownParam {
                site: Box::new(site.clone()),
                param: name,
                available: available.join(", "),
            });
        };
        stmt.raw_bind_parameter(i, value).map_err(failed)?;
    }
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(failed)? {
        out.push(Change {
            observed_at: row.get(0).map_err(failed)?,
            run_id: row.get(1).map_err(failed)?,
            kind: row.get(2).map_err(failed)?,
            entity_type: row.get(3).map_err(failed)?,
            entity_id: row.get(4).map_err(failed)?,
            entity_name: row.get(5).map_err(failed)?,
            field: row.get(6).map_err(failed)?,
            before: row.get(7).map_err(failed)?,
            after: row.get(8).map_err(failed)?,
        });
    }
    Ok(())
}

/// The rows as a frame with [`COLUMNS`], for the report files and the page.
pub fn frame(changes: &[Change]) -> Result<DataFrame, ReportError> {
    let text = |name: &str, f: &dyn Fn(&Change) -> Option<&str>| -> Column {
        let values: Vec<Option<&str>> = changes.iter().map(f).collect();
        Series::new(name.into(), values).into_column()
    };
    let run_ids: Vec<i64> = changes.iter().map(|c| c.run_id).collect();
    let columns = vec![
        text("observed_at", &|c| Some(c.observed_at.as_str())),
        Series::new("run_id".into(), run_ids).into_column(),
        text("kind", &|c| Some(c.kind.as_str())),
        text("entity_type", &|c| Some(c.entity_type.as_str())),
        text("entity_id", &|c| Some(c.entity_id.as_str())),
        text("entity_name", &|c| c.entity_name.as_deref()),
        text("field", &|c| c.field.as_deref()),
        text("before", &|c| c.before.as_deref()),
        text("after", &|c| c.after.as_deref()),
    ];
    DataFrame::new(changes.len(), columns).map_err(pl(NAME.as_str(), "building the change log"))
}

/// The `changes` report: the 7 days up to the as-of date (from the end of day
/// T − 7 to the end of day T), every named kind.
fn build(ctx: &crate::report::Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let since_day = ctx.as_of - chrono::Duration::days(7);
    let query = Query {
        since: Point::end_of_day(since_day),
        until: Point::end_of_day(ctx.as_of),
        kinds: KindFilter::default(),
        all_fields: false,
    };
    emit(frame(&read(ctx.conn, ctx.extract, &query)?)?)
}

crate::report::tables::report_table! {
    /// `changes`: one row per change the mirror saw.
    Changes = NAME {
        observed_at: text,
        kind: text,
        entity_type: text,
        entity_id: text,
        entity_name: text,
        field: text,
        before: text,
        after: text,
    }
}
