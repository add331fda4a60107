//! Reading the packed daily series (`crate::mirror::daily_series`) in place of a
//! report's SQL section over `daily_metrics`: one row per user instead of one per
//! user and day.
//!
//! The series hold exactly the live rows of `main.daily_metrics`, so they stand for
//! a section only when the section is the shipped one (a user's own SQL may compute
//! anything), the as-of views read the main tables (no run observed the service after
//! the cut-off, `crate::mirror::asof`), every sync since they were filled kept them
//! (a build from before them writes the rows alone), and every user's days could be
//! packed. Each
//! reader here works the figures out as its shipped section does, and a test
//! compares both reads over a synced world (`tests/it/packed_series.rs`).

use crate::mirror::asof;
use crate::mirror::daily_series::{self, VALUES, Value};
use crate::report::Ctx;
use crate::report::error::{ReportError, SqlSite};
use crate::report::sql::{Extract, embedded};

/// Where errors of these reads point: the table, and what was being read.
fn site(ctx: &Ctx<'_>, what: &str) -> Box<SqlSite> {
    SqlSite::boxed(&ctx.extract.report, "main.daily_series", what)
}

/// Whether the section `part` of the report's SQL can be read from the packed series.
pub(crate) fn usable(ctx: &Ctx<'_>, part: &str) -> Result<bool, ReportError> {
    let report = &ctx.extract.report;
    let shipped = embedded(report).map(|text| Extract::parse(report, String::new(), text));
    let shipped_part = shipped.as_ref().and_then(|e| e.part(part).ok());
    if shipped_part.is_none() || shipped_part != ctx.extract.part(part).ok() {
        return Ok(false);
    }
    let query_err = |cause| ReportError::Query {
        site: site(ctx, "whether the series stand for the rows"),
        cause,
    };
    let history = asof::history_current_at(ctx.conn, &asof::cutoff(ctx.as_of));
    if history.map_err(query_err)? {
        return Ok(false);
    }
    daily_series::complete(ctx.conn).map_err(query_err)
}

/// Hands each day from `first_day` to `last_day` of the users `low..=high` to `each`
/// as `(user, day, values)`, users in id order and each user's days newest first
/// (older days are not decoded). Returns the days handed over.
pub(crate) fn for_each_day(
    ctx: &Ctx<'_>,
    (low, high): (i64, i64),
    (first_day, last_day): (i64, i64),
    mut each: impl FnMut(i64, i64, &[Value; VALUES]),
) -> Result<usize, ReportError> {
    let query_err = |cause| ReportError::Query {
        site: site(ctx, "series"),
        cause,
    };
    let mut stmt = ctx
        .conn
        .prepare_cached(
            "SELECT user_id, series FROM main.daily_series \
             WHERE user_id BETWEEN ?1 AND ?2 AND series IS NOT NULL ORDER BY user_id",
        )
        .map_err(query_err)?;
    let mut rows = stmt.query((low, high)).map_err(query_err)?;
    let mut count = 0;
    while let Some(row) = rows.next().map_err(query_err)? {
        let user: i64 = row.get(0).map_err(query_err)?;
        let unreadable = |why: String| ReportError::BadValue {
            site: site(ctx, "series"),
            column: "series".into(),
            value: format!("user {user}: {why}"),
            expected: "a packed daily series",
        };
        let series = row.get_ref(1).map_err(query_err)?;
        let series = series
            .as_blob()
            .map_err(|_| unreadable("not a blob".into()))?;
        daily_series::decode(user, series, first_day, |day, values| {
            if day <= last_day {
                each(user, day, values);
                count += 1;
            }
        })
        .map_err(|bad| unreadable(bad.why))?;
    }
    Ok(count)
}
