//! The `storage` section from the packed daily series (`crate::report::packed`),
//! worked out as the shipped section does: for every user the mirror knows (white
//! label users and organization members) with days in the last 30, the storage bytes
//! added minus deleted (a missing figure counts 0), summed over the last 7 days
//! (NULL without a day there) and the last 30.

use crate::mirror::daily_series::{STORAGE_ADDED, STORAGE_DELETED, Value};
use crate::report::error::{ReportError, SqlSite, pl};
use crate::report::{Ctx, packed};
use polars::prelude::*;
use std::collections::HashSet;

/// One user's sums while their days are read.
struct Sums {
    user: i64,
    last_7: Option<i128>,
    last_30: i128,
}

/// The section's frame: `user_id`, `storage_delta_7d`, `storage_delta_30d`, by user.
pub(super) fn read(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let known = known_users(ctx)?;
    let today = ctx.today;
    let mut done: Vec<Sums> = Vec::new();
    let mut current: Option<Sums> = None;
    let users = (i64::MIN, i64::MAX);
    packed::for_each_day(ctx, users, (today - 29, today), |user, day, values| {
        if !known.contains(&user) {
            return;
        }
        if current.as_ref().is_none_or(|s| s.user != user) {
            done.extend(current.take());
            current = Some(Sums {
                user,
                last_7: None,
                last_30: 0,
            });
        }
        let int = |v: Value| match v {
            Value::Int(n) => i128::from(n),
            Value::Null | Value::Real(_) => 0,
        };
        let delta = int(values[STORAGE_ADDED]) - int(values[STORAGE_DELETED]);
        if let Some(sums) = current.as_mut() {
            sums.last_30 += delta;
            if day > today - 7 {
                sums.last_7 = Some(sums.last_7.unwrap_or(0) + delta);
            }
        }
    })?;
    done.extend(current);
    frame(&done).map_err(pl(ctx.report(), "storage from the packed series"))
}

/// The users the section counts: white label users and organization members.
fn known_users(ctx: &Ctx<'_>) -> Result<HashSet<i64>, ReportError> {
    let query_err = |cause| ReportError::Query {
        site: SqlSite::boxed(ctx.report(), "users, organization_members", "storage"),
        cause,
    };
    let mut stmt = ctx
        .conn
        .prepare("SELECT id FROM users UNION SELECT user_id FROM organization_members")
        .map_err(query_err)?;
    let ids = stmt
        .query_map([], |row| row.get::<_, Option<i64>>(0))
        .map_err(query_err)?;
    let mut known = HashSet::new();
    for id in ids {
        known.extend(id.map_err(query_err)?);
    }
    Ok(known)
}

/// Sums as whole numbers of bytes, handed over as reals like the section's SUMs.
fn frame(sums: &[Sums]) -> PolarsResult<DataFrame> {
    let users: Vec<i64> = sums.iter().map(|s| s.user).collect();
    let last_7: Vec<Option<f64>> = sums.iter().map(|s| s.last_7.map(|n| n as f64)).collect();
    let last_30: Vec<f64> = sums.iter().map(|s| s.last_30 as f64).collect();
    DataFrame::new(
        sums.len(),
        vec![
            Column::new("user_id".into(), users),
            Column::new("storage_delta_7d".into(), last_7),
            Column::new("storage_delta_30d".into(), last_30),
        ],
    )
}
