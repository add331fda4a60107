//! Dense daily series: one row per entity and calendar day, so a window of `n` rows
//! is `n` days and the row `n` up in the same series is `n` days earlier.

use super::{Entity, VALUES};
use crate::report::dates::{month_start, week_start};
use crate::report::error::{ReportError, pl};
use crate::report::frame;
use polars::prelude::*;
use std::collections::HashMap;

/// How a dense series fills the days it has no row for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fill {
    /// A flow (usage per day): a missing day used nothing.
    Zero,
    /// A level (compute used so far): a missing day keeps the last level.
    Forward,
}

/// Week and month starts of every day from the horizon to T.
pub(super) struct Calendar {
    first: i64,
    months: Vec<i64>,
}

impl Calendar {
    pub(super) fn new(first: i64, last: i64) -> Self {
        let months = (first..=last.max(first))
            .map(|d| month_start(d).unwrap_or(d))
            .collect();
        Calendar { first, months }
    }

    /// Position of `day` in the calendar, if it is in it.
    fn offset(&self, day: i64) -> Option<usize> {
        usize::try_from(day - self.first)
            .ok()
            .filter(|&i| i < self.months.len())
    }

    fn month_start(&self, day: i64) -> i64 {
        usize::try_from(day - self.first)
            .ok()
            .and_then(|i| self.months.get(i).copied())
            .or_else(|| month_start(day))
            .unwrap_or(day)
    }
}

/// Which entity each series number is.
#[derive(Default)]
pub(super) struct SeriesTable {
    series: Vec<i64>,
    kinds: Vec<i64>,
    ids: Vec<i64>,
}

impl SeriesTable {
    /// Appends `other`'s entities, numbered after this table's; returns the number
    /// added to `other`'s series.
    pub(super) fn append(&mut self, other: SeriesTable) -> i64 {
        let offset = self.series.len() as i64;
        self.series.extend(other.series.iter().map(|s| s + offset));
        self.kinds.extend(other.kinds);
        self.ids.extend(other.ids);
        offset
    }

    fn add(&mut self, kind: Entity, id: i64) -> i64 {
        let n = self.series.len() as i64;
        self.series.push(n);
        self.kinds.push(kind.code());
        self.ids.push(id);
        n
    }

    /// `(series, kind, entity_id, entity_name)`.
    pub(super) fn frame(
        &self,
        report: &str,
        users: DataFrame,
        whitelabels: DataFrame,
        organizations: DataFrame,
    ) -> Result<DataFrame, ReportError> {
        let part = |df: DataFrame, kind: Entity, id: &str, name: &str| {
            df.lazy().select([
                lit(kind.code()).alias("kind"),
                col(id).alias("entity_id"),
                col(name).alias("entity_name"),
            ])
        };
        let names = concat(
            [
                part(users, Entity::User, "user_id", "user_name"),
                part(
                    whitelabels,
                    Entity::Whitelabel,
                    "whitelabel_id",
                    "whitelabel_name",
                ),
                part(
                    organizations,
                    Entity::Organization,
                    "organization_id",
                    "organization_name",
                ),
            ],
            UnionArgs::default(),
        )
        .map_err(pl(report, "entity names"))?
        .filter(col("entity_id").is_not_null())
        .unique(Some(cols(["kind", "entity_id"])), UniqueKeepStrategy::First);
        let table = DataFrame::new(
            self.series.len(),
            vec![
                Column::new("series".into(), self.series.clone()),
                Column::new("kind".into(), self.kinds.clone()),
                Column::new("entity_id".into(), self.ids.clone()),
            ],
        )
        .map_err(pl(report, "entity names"))?;
        table
            .lazy()
            .join(
                names,
                [col("kind"), col("entity_id")],
                [col("kind"), col("entity_id")],
                JoinArgs::new(JoinType::Left),
            )
            .collect()
            .map_err(pl(report, "entity names"))
    }
}

/// Makes each entity's series dense: one row per calendar day from its first day to
/// its last (or to `until`), filling gaps per `fill`. Input is sorted by
/// (entity_id, day); rows of the same day are merged (added for flows, the last kept
/// for levels). Each entity gets a series number in `table`; the output carries it
/// with the day's week and month start.
#[allow(clippy::too_many_arguments)]
pub(super) fn densify(
    report: &str,
    df: &DataFrame,
    values: &[&str],
    fill: Fill,
    until: Option<i64>,
    kind: Entity,
    calendar: &Calendar,
    table: &mut SeriesTable,
) -> Result<DataFrame, ReportError> {
    let err = || pl(report, "filling calendar gaps");
    let (ids, days, input) = inputs(df, values).map_err(err())?;
    let mut out = Dense::new(df.height(), values.len());
    let mut prev: Option<(i64, i64, i64)> = None; // (series, entity, day)
    for r in 0..df.height() {
        let (Some(id), Some(day)) = (ids.get(r), days.get(r)) else {
            continue;
        };
        let series = match prev {
            Some((series, pid, pday)) if pid == id => {
                if day <= pday {
                    out.merge(fill, &input, r);
                    continue;
                }
                for gap in pday + 1..day {
                    out.gap(fill, series, gap, calendar);
                }
                series
            }
            Some((series, _, pday)) => {
                if let Some(end) = until {
                    for gap in pday + 1..=end {
                        out.gap(fill, series, gap, calendar);
                    }
                }
                table.add(kind, id)
            }
            None => table.add(kind, id),
        };
        out.push(series, day, calendar);
        for (col, values) in out.values.iter_mut().zip(&input) {
            col.push(values.get(r));
        }
        prev = Some((series, id, day));
    }
    if let (Some((series, _, pday)), Some(end)) = (prev, until) {
        for gap in pday + 1..=end {
            out.gap(fill, series, gap, calendar);
        }
    }
    out.frame(values).map_err(err())
}

/// White label series: the sum of their users' days (an unknown value counts as
/// nothing), dense from a white label's first day with a user record to T (the
/// calendar's last day), as its users' series run on in zeros to T.
///
/// Days are added straight into one slot per (white label, calendar day): no
/// group-by over the million-row input, and the result is dense already.
pub(super) fn whitelabel_days(
    report: &str,
    users: &DataFrame,
    whitelabel_of: &HashMap<i64, i64>,
    calendar: &Calendar,
    table: &mut SeriesTable,
) -> Result<DataFrame, ReportError> {
    let err = || pl(report, "summing white label days");
    let (ids, days, input) = inputs(users, &VALUES).map_err(err())?;
    let mut labels: Vec<i64> = whitelabel_of.values().copied().collect();
    labels.sort_unstable();
    labels.dedup();
    let width = calendar.months.len();
    let end_offset = width.saturating_sub(1);
    let mut sums = vec![0.0; labels.len() * width * VALUES.len()];
    let mut spans: Vec<Option<(usize, usize)>> = vec![None; labels.len()];
    // Rows come grouped by user: look each user's white label up once.
    let mut last: Option<(i64, Option<usize>)> = None;
    for r in 0..users.height() {
        let (Some(user), Some(day)) = (ids.get(r), days.get(r)) else {
            continue;
        };
        let label = match last {
            Some((u, label)) if u == user => label,
            _ => {
                let label = whitelabel_of
                    .get(&user)
                    .and_then(|w| labels.binary_search(w).ok());
                last = Some((user, label));
                label
            }
        };
        let (Some(w), Some(d)) = (label, calendar.offset(day)) else {
            continue;
        };
        let slot = (w * width + d) * VALUES.len();
        for (k, values) in input.iter().enumerate() {
            sums[slot + k] += values.get(r).unwrap_or(0.0);
        }
        spans[w] = Some((spans[w].map_or(d, |(a, _)| a.min(d)), end_offset));
    }
    let rows = spans.iter().flatten().map(|(a, b)| b - a + 1).sum();
    let mut out = Dense::new(rows, VALUES.len());
    for (w, span) in spans.iter().enumerate() {
        let Some((first, end)) = *span else { continue };
        let series = table.add(Entity::Whitelabel, labels[w]);
        for d in first..=end {
            out.push(series, calendar.first + d as i64, calendar);
            let slot = (w * width + d) * VALUES.len();
            for (k, col) in out.values.iter_mut().enumerate() {
                col.push(Some(sums[slot + k]));
            }
        }
    }
    out.frame(&VALUES).map_err(err())
}

/// The columns of a sparse series: entity ids, days, and the values.
type Inputs<'a> = (
    Input<'a, Int64Type>,
    Input<'a, Int64Type>,
    Vec<Input<'a, Float64Type>>,
);

fn inputs<'a>(df: &'a DataFrame, values: &[&str]) -> PolarsResult<Inputs<'a>> {
    let values = values
        .iter()
        .map(|v| Input::of(df, v))
        .collect::<PolarsResult<_>>()?;
    Ok((Input::of(df, "entity_id")?, Input::of(df, "day")?, values))
}

/// A numeric input column: borrowed as a slice when it has no nulls (no copy),
/// collected otherwise.
enum Input<'a, T: PolarsNumericType> {
    Dense(&'a [T::Native]),
    Sparse(Vec<Option<T::Native>>),
}

impl<'a, T: PolarsNumericType> Input<'a, T> {
    fn of(df: &'a DataFrame, name: &str) -> PolarsResult<Self> {
        let ca: &ChunkedArray<T> = df.column(name)?.as_materialized_series().unpack::<T>()?;
        Ok(match ca.cont_slice() {
            Ok(slice) => Input::Dense(slice),
            Err(_) => Input::Sparse(ca.iter().collect()),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<T::Native> {
        match self {
            Input::Dense(v) => v.get(i).copied(),
            Input::Sparse(v) => v.get(i).copied().flatten(),
        }
    }
}

/// The columns of a dense series being built.
struct Dense {
    series: Vec<i64>,
    day: Vec<i64>,
    week: Vec<i64>,
    month: Vec<i64>,
    values: Vec<frame::Nums<f64>>,
}

impl Dense {
    fn new(capacity: usize, width: usize) -> Self {
        Dense {
            series: Vec::with_capacity(capacity),
            day: Vec::with_capacity(capacity),
            week: Vec::with_capacity(capacity),
            month: Vec::with_capacity(capacity),
            values: (0..width)
                .map(|_| frame::Nums::with_capacity(capacity))
                .collect(),
        }
    }

    /// The key columns of a new row (its values are pushed by the caller).
    fn push(&mut self, series: i64, day: i64, calendar: &Calendar) {
        self.series.push(series);
        self.day.push(day);
        self.week.push(week_start(day));
        self.month.push(calendar.month_start(day));
    }

    /// A day without a record.
    fn gap(&mut self, fill: Fill, series: i64, day: i64, calendar: &Calendar) {
        self.push(series, day, calendar);
        for col in &mut self.values {
            let value = match fill {
                Fill::Zero => Some(0.0),
                Fill::Forward => col.last(),
            };
            col.push(value);
        }
    }

    /// A second row for the same day: flows add up, levels keep the latest.
    fn merge(&mut self, fill: Fill, input: &[Input<'_, Float64Type>], r: usize) {
        for (col, values) in self.values.iter_mut().zip(input) {
            let merged = match (fill, col.last(), values.get(r)) {
                (Fill::Zero, Some(a), Some(b)) => Some(a + b),
                (Fill::Zero, a, None) => a,
                (_, _, b) => b,
            };
            col.set_last(merged);
        }
    }

    fn frame(self, names: &[&str]) -> PolarsResult<DataFrame> {
        let height = self.series.len();
        let mut columns = vec![
            Column::new("series".into(), self.series),
            Column::new("day".into(), self.day),
            Column::new("week_start".into(), self.week),
            Column::new("month_start".into(), self.month),
        ];
        for (name, values) in names.iter().zip(self.values) {
            columns.push(values.into_column(name));
        }
        DataFrame::new(height, columns)
    }
}
