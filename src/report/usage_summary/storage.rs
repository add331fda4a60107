//! Net storage change per user: for every user the mirror knows (white label users
//! and organization members) with days in the last 30, the storage bytes added minus
//! deleted (a missing figure counts 0), summed over the last 7 days (unknown without
//! a day there) and the last 30. Defined here, once, over the users' daily figures
//! (`crate::report::daily`), whichever source they come from.

use super::{WINDOWS, storage_column};
use crate::report::Ctx;
use crate::report::daily::{self, Bytes};
use crate::report::error::{ReportError, pl, query_err};
use polars::prelude::*;
use std::collections::{BTreeMap, HashSet};

/// The frame `user_id` and one `storage_delta_<w>d` per window `w` of
/// [`super::WINDOWS`] (the last `w` days, T included), by user.
pub(super) fn read(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let known = known_users(ctx)?;
    let today = ctx.today;
    let longest = WINDOWS.iter().copied().max().unwrap_or(0);
    let source = daily::source(ctx)?;
    let mut sums: BTreeMap<i64, [Option<Bytes>; WINDOWS.len()]> = BTreeMap::new();
    let days = (today - (longest - 1), today);
    daily::for_each_day(ctx, source, (None, None), days, |user, day, values| {
        if !known.contains(&user) {
            return;
        }
        let delta = Bytes::net_storage(values);
        let user_sums = sums.entry(user).or_default();
        for (sum, window) in user_sums.iter_mut().zip(WINDOWS) {
            if day > today - window {
                *sum = Some(sum.unwrap_or_default().plus(delta));
            }
        }
    })?;
    frame(&sums).map_err(pl(ctx.report(), "storage per user"))
}

/// The users the sums count: white label users and organization members.
fn known_users(ctx: &Ctx<'_>) -> Result<HashSet<i64>, ReportError> {
    let err = query_err(ctx.report(), "users, organization_members", "storage");
    let mut stmt = ctx
        .conn
        .prepare("SELECT id FROM users UNION SELECT user_id FROM organization_members")
        .map_err(&err)?;
    let ids = stmt
        .query_map([], |row| row.get::<_, Option<i64>>(0))
        .map_err(&err)?;
    let mut known = HashSet::new();
    for id in ids {
        known.extend(id.map_err(&err)?);
    }
    Ok(known)
}

fn frame(sums: &BTreeMap<i64, [Option<Bytes>; WINDOWS.len()]>) -> PolarsResult<DataFrame> {
    let users: Vec<i64> = sums.keys().copied().collect();
    let mut columns = vec![Column::new("user_id".into(), users)];
    for (i, window) in WINDOWS.iter().enumerate() {
        let values: Vec<Option<f64>> = sums.values().map(|s| s[i].map(Bytes::value)).collect();
        columns.push(Column::new(storage_column(*window).into(), values));
    }
    DataFrame::new(sums.len(), columns)
}
