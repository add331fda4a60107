//! The "top compute users, last 30 days" ranking, read from the report's table by
//! the terminal summary and the HTML page alike.

use crate::report::ReportError;
use crate::report::tables::ComputeTrends;
use polars::prelude::DataFrame;
use std::collections::HashMap;

/// One user's compute time over the last 30 days.
#[derive(Debug, Clone, PartialEq)]
pub struct TopUser {
    pub id: i64,
    pub name: Option<String>,
    /// `rolling_30d` of the user's latest day row: the 30 days up to T.
    pub last_30d: f64,
    /// `rolling_30d_prev` of that row: the 30 days before those, when known.
    pub prev_30d: Option<f64>,
}

/// Every user with a 30-day figure, most compute first (ties by id).
pub fn top_users(df: &DataFrame) -> Result<Vec<TopUser>, ReportError> {
    let t = ComputeTrends::read(df)?;
    let (kind, period, start) = (&t.entity_type, &t.period, &t.period_start);
    let (id, name) = (&t.entity_id, &t.entity_name);
    let (last30, prev30) = (&t.rolling_30d, &t.rolling_30d_prev);
    let mut latest: HashMap<i64, usize> = HashMap::new();
    for r in 0..t.height() {
        if kind[r] == Some("user")
            && period[r] == Some("day")
            && let Some(user) = id[r]
        {
            let newer = latest.get(&user).is_none_or(|&old| start[r] > start[old]);
            if newer {
                latest.insert(user, r);
            }
        }
    }
    let mut users: Vec<TopUser> = latest
        .into_iter()
        .filter_map(|(user, r)| {
            Some(TopUser {
                id: user,
                name: name[r].map(str::to_string),
                last_30d: last30[r]?,
                prev_30d: prev30[r],
            })
        })
        .collect();
    users.sort_by(|a, b| b.last_30d.total_cmp(&a.last_30d).then(a.id.cmp(&b.id)));
    Ok(users)
}
