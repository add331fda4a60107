//! What the page and the summary show of `compute_trends`, gathered batch by batch
//! as the rows go out, so neither holds the table: the top users of the last 30
//! days, and the three trend windows (every white label's series, the users with
//! the most compute time). A user's rows all come in one batch (a user's series is
//! cut into its rows at once), so a user is ranked when its batch passes.

use super::ComputeTrends;
use crate::report::ReportError;
use polars::prelude::DataFrame;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

/// Users kept for each ranking: the page charts ten, the summary names five.
pub const TOP_USERS: usize = 10;

/// The trend windows: the period, and how the page describes it.
const WINDOWS: [(&str, &str); 3] = [
    ("day", "last 30 days, one bar per day"),
    (
        "week",
        "last 13 weeks (about 90 days), one bar per ISO week",
    ),
    (
        "month",
        "last 12 months (about 365 days), one bar per month",
    ),
];

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

/// Most compute first, ties by id: the one ranking of the top users.
fn by_last_30d(a: &TopUser, b: &TopUser) -> Ordering {
    b.last_30d.total_cmp(&a.last_30d).then(a.id.cmp(&b.id))
}

/// One line (or bar series) of a trend chart.
#[derive(Debug, Clone)]
pub struct TrendSeries {
    pub entity_type: String,
    pub entity_id: Option<i64>,
    pub name: String,
    /// (index into [`Trend::starts`], compute seconds).
    pub points: Vec<(usize, f64)>,
    pub total: f64,
}

/// One window of the compute trends: day rows (30 days), week rows (13 weeks,
/// about 90 days) or month rows (12 months, about 365 days).
#[derive(Debug, Clone)]
pub struct Trend {
    pub period: &'static str,
    pub window: &'static str,
    /// The period starts on the x axis, oldest first.
    pub starts: Vec<String>,
    /// The white labels' totals, largest first.
    pub whitelabels: Vec<TrendSeries>,
    /// The users with the most compute time in the window, most first; the day
    /// window ranks them as the top users of the last 30 days are ranked.
    pub users: Vec<TrendSeries>,
}

/// A series being gathered: its period starts as text until every start is known.
#[derive(Debug, Clone)]
struct Gathered {
    entity_type: String,
    entity_id: Option<i64>,
    name: String,
    points: Vec<(String, f64)>,
    total: f64,
    /// The user's top-users figure, for the day window's ranking.
    rank: Option<TopUser>,
}

/// Largest total first, ties by id.
fn by_total(a: &Gathered, b: &Gathered) -> Ordering {
    b.total
        .total_cmp(&a.total)
        .then(a.entity_id.cmp(&b.entity_id))
}

/// The day window's order: the ranked users as the top users, then the others by
/// total.
fn by_rank(a: &Gathered, b: &Gathered) -> Ordering {
    match (&a.rank, &b.rank) {
        (Some(x), Some(y)) => by_last_30d(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => by_total(a, b),
    }
}

/// One window being gathered.
#[derive(Debug, Default)]
struct Window {
    starts: BTreeSet<String>,
    whitelabels: Vec<Gathered>,
    users: Vec<Gathered>,
}

/// The digest of `compute_trends`; see the module.
#[derive(Debug, Default)]
pub struct Digest {
    top: Vec<TopUser>,
    windows: [Window; 3],
}

impl Digest {
    /// Takes in one batch of the report's rows, in output order.
    pub fn add(&mut self, df: &DataFrame) -> Result<(), ReportError> {
        let t = ComputeTrends::read(df)?;
        let ranks = latest_day_rows(&t);
        let top = ranks.values().cloned();
        self.top.extend(top);
        self.top.sort_by(by_last_30d);
        self.top.truncate(TOP_USERS);
        for (w, (period, _)) in self.windows.iter_mut().zip(WINDOWS) {
            w.add(&t, period, &ranks);
        }
        Ok(())
    }

    /// Every user with a 30-day figure, most compute first (ties by id), up to
    /// [`TOP_USERS`].
    pub fn top_users(&self) -> &[TopUser] {
        &self.top
    }

    /// The three trend windows.
    pub fn trends(&self) -> Vec<Trend> {
        self.windows
            .iter()
            .zip(WINDOWS)
            .map(|(w, (period, window))| w.finish(period, window))
            .collect()
    }
}

/// A digest is gathered by attaching it to the report's batches as they go out.
impl crate::report::Sink for Digest {
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        self.add(batch)
    }
}

/// Each user's latest day row of the batch, as a top user (those with a 30-day
/// figure).
fn latest_day_rows(t: &ComputeTrends<'_>) -> HashMap<i64, TopUser> {
    let (kind, period, start) = (&t.entity_type, &t.period, &t.period_start);
    let mut latest: HashMap<i64, usize> = HashMap::new();
    for r in 0..t.height() {
        if kind[r] == Some("user")
            && period[r] == Some("day")
            && let Some(user) = t.entity_id[r]
        {
            let newer = latest.get(&user).is_none_or(|&old| start[r] > start[old]);
            if newer {
                latest.insert(user, r);
            }
        }
    }
    latest
        .into_iter()
        .filter_map(|(user, r)| {
            Some((
                user,
                TopUser {
                    id: user,
                    name: t.entity_name[r].map(str::to_string),
                    last_30d: t.rolling_30d[r]?,
                    prev_30d: t.rolling_30d_prev[r],
                },
            ))
        })
        .collect()
}

impl Window {
    /// The batch's series of this window (rows with a start and a finite compute
    /// time); the users are ranked with those of earlier batches and cut to the top.
    /// A series' points become text only once it is kept: most users' are not.
    fn add(&mut self, t: &ComputeTrends<'_>, period: &str, ranks: &HashMap<i64, TopUser>) {
        let (kind, id, name, start) = (
            &t.entity_type,
            &t.entity_id,
            &t.entity_name,
            &t.period_start,
        );
        let mut index: HashMap<(&str, Option<i64>), usize> = HashMap::new();
        // A series' rows of one period are consecutive: the last one is the usual hit.
        let mut last: Option<((&str, Option<i64>), usize)> = None;
        let mut series: Vec<(Gathered, Vec<(usize, f64)>)> = Vec::new();
        for r in 0..t.height() {
            let (Some(k @ ("user" | "whitelabel")), Some(day), Some(v)) = (
                kind[r],
                start[r],
                t.compute_seconds[r].filter(|v| v.is_finite()),
            ) else {
                continue;
            };
            if t.period[r] != Some(period) {
                continue;
            }
            if !self.starts.contains(day) {
                self.starts.insert(day.to_string());
            }
            let key = (k, id[r]);
            let s = match last {
                Some((seen, s)) if seen == key => s,
                _ => {
                    let s = *index.entry(key).or_insert_with(|| {
                        let rank = id[r].and_then(|u| ranks.get(&u)).filter(|_| k == "user");
                        series.push((
                            Gathered {
                                entity_type: k.to_string(),
                                entity_id: id[r],
                                name: name[r].unwrap_or("?").to_string(),
                                points: Vec::new(),
                                total: 0.0,
                                rank: rank.cloned(),
                            },
                            Vec::new(),
                        ));
                        series.len() - 1
                    });
                    last = Some((key, s));
                    s
                }
            };
            series[s].1.push((r, v));
            series[s].0.total += v;
        }
        let order = if period == "day" { by_rank } else { by_total };
        let (labels, mut users): (Vec<_>, Vec<_>) = series
            .into_iter()
            .partition(|(g, _)| g.entity_type == "whitelabel");
        users.sort_by(|a, b| order(&a.0, &b.0));
        users.truncate(TOP_USERS);
        let text = |(mut g, rows): (Gathered, Vec<(usize, f64)>)| {
            g.points = rows
                .into_iter()
                .filter_map(|(r, v)| Some((start[r]?.to_string(), v)))
                .collect();
            g
        };
        self.whitelabels.extend(labels.into_iter().map(text));
        self.users.extend(users.into_iter().map(text));
        self.users.sort_by(order);
        self.users.truncate(TOP_USERS);
    }

    fn finish(&self, period: &'static str, window: &'static str) -> Trend {
        let starts: Vec<String> = self.starts.iter().cloned().collect();
        let indexed = |g: &Gathered| {
            let mut points: Vec<(usize, f64)> = g
                .points
                .iter()
                .filter_map(|(start, v)| Some((starts.binary_search(start).ok()?, *v)))
                .collect();
            points.sort_by_key(|(i, _)| *i);
            TrendSeries {
                entity_type: g.entity_type.clone(),
                entity_id: g.entity_id,
                name: g.name.clone(),
                points,
                total: g.total,
            }
        };
        let mut whitelabels: Vec<&Gathered> = self.whitelabels.iter().collect();
        whitelabels.sort_by(|a, b| by_total(a, b));
        Trend {
            period,
            window,
            whitelabels: whitelabels.into_iter().map(indexed).collect(),
            users: self.users.iter().map(indexed).collect(),
            starts,
        }
    }
}
