//! `compute_trends`: compute time per user, per white label and per organization, by
//! day, ISO week and calendar month, with rolling 7- and 30-day sums and the change
//! against the previous period.
//!
//! Users and white labels come from daily metrics (a day's usage); organizations from
//! the mirror's history of project information (the growth of compute used). Each
//! entity's series is made dense (one entry per calendar day, from its first day to
//! the as-of date T: a user whose records stop before T used nothing since) so windows
//! of 7 and 30 entries are 7 and 30 days. Output is bounded: day rows for the last 30
//! days, week rows for the last 13 ISO weeks, month rows for the last 12 months. The
//! day, week and month that contain T are unfinished (`period_complete` false); the
//! week's and month's change compares the same number of leading days of the period
//! before. Rolling sums and changes are computed on the whole series; days older than
//! anything an output row depends on (13 months and 62 days) are never read.
//!
//! Memory stays bounded as the mirror grows: the daily metrics are read one chunk of
//! users at a time (two chunks at once on two connections), each user's series is cut
//! into its output rows at once, and the chunk's rows go out as one batch
//! (`crate::report::batches`) before more are read; only one running sum per white
//! label and day is kept. The organizations' side (history, small) runs on its own
//! connection in another thread. Names, texts and the organization-only column are
//! added to the output rows in one place, `output`.
//!
//! Modules: `read` (the daily metrics), `series` (dense series), `windows` (the output
//! rows of a series: rolling sums and period totals), `output` (the report's table),
//! `digest` (what the page and the summary show: the top users of the last 30 days
//! and the trend windows, gathered as the batches go out).

mod digest;
mod output;
mod read;
mod series;
#[cfg(test)]
mod tests;
mod windows;

pub use digest::{Digest, TopUser, Trend, TrendSeries};

use crate::calendar::{months_back, parse_day};
use crate::report::attention::entity;
use crate::report::batches::Emit;
use crate::report::completeness::{Completeness, People, Source, Sources};
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl, unpanicked};
use crate::report::frame::Kind;
use crate::report::periods::NAMES as PERIODS;
use crate::report::tables::TableError;
use crate::report::{Ctx, daily};
use polars::prelude::*;
use series::{Calendar, UserDays, WhitelabelDays, growth, known};
use std::collections::HashMap;
use windows::{Periods, Rows, Series};

/// The report's name.
pub const NAME: ReportName = ReportName::new("compute_trends");

/// The report: never held whole nor kept; what the page and the summary show of it
/// is its [`Digest`], gathered as its batches go out.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "compute time per user, white label and organization by day, week and month",
    include_str!("../../../queries/compute_trends.sql"),
    COLUMNS,
    build,
)
.complete(row_sources, describe)
.cost(0)
.threads(THREADS);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "entity_type",
    "entity_id",
    "entity_name",
    "period",
    "period_start",
    "period_complete",
    "cpu_seconds",
    "gpu_seconds",
    "compute_seconds",
    "compute_growth_seconds",
    "rolling_7d",
    "rolling_30d",
    "rolling_30d_prev",
    "change_pct",
];

/// The kinds of entity a series belongs to, in output order. Frames carry the kind
/// as its [`Entity::code`] (polars sorts and joins on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entity {
    /// A user: usage per day, from daily metrics.
    User,
    /// A white label: the sum of its users.
    Whitelabel,
    /// An organization: the growth of compute used, from the mirror's history.
    Organization,
}

impl Entity {
    const ALL: [Entity; 3] = [Entity::User, Entity::Whitelabel, Entity::Organization];

    fn code(self) -> i64 {
        self as i64
    }

    /// The `entity_type` written in the report.
    fn name(self) -> &'static str {
        match self {
            Entity::User => "user",
            Entity::Whitelabel => "whitelabel",
            Entity::Organization => "organization",
        }
    }
}

/// The days (first, last) that the row of `period` (`day`, `week`, `month`)
/// starting on the day number `start` reads: its period, its rolling sums and the
/// period its change compares with.
fn days_read(periods: &Periods, period: &str, start: i64) -> Option<(i64, i64)> {
    let order = PERIODS.iter().position(|p| *p == period)?;
    Some(periods.days_read(order as i64, start))
}

/// The days the report looks at: T and the 13 months and 62 days before it.
struct Span {
    horizon: i64,
    today: i64,
    periods: Periods,
}

/// Hands the report's rows to `emit` in batches, in output order: each chunk of
/// users' rows as it is read, then the white labels', then the organizations'.
fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let report = ctx.report();
    let today = ctx.today;
    let span = Span {
        horizon: months_back(today, 13).unwrap_or(today - 400) - 62,
        today,
        periods: Periods::new(today),
    };
    let mut names = Names::default();
    let (people, orgs) = std::thread::scope(|scope| {
        let (reading, span) = (ctx.reading(), &span);
        let orgs = scope.spawn(move || reading.run(|ctx| organization_rows(ctx, span)));
        let people = people_rows(ctx, span, &mut names, emit);
        let orgs = unpanicked(report, orgs.join());
        (people, orgs)
    });
    people?;
    let (org_rows, org_names) = orgs?;
    names.add(
        report,
        Entity::Organization,
        &org_names,
        "organization_id",
        "organization_name",
    )?;
    emit(output::table(vec![org_rows], &names, &span.periods).map_err(pl(report, "output rows"))?)
}

/// Entity names by (kind, id); the first name read for an entity wins.
#[derive(Default)]
struct Names(HashMap<(i64, i64), Option<String>>);

impl Names {
    fn add(
        &mut self,
        report: &str,
        kind: Entity,
        df: &DataFrame,
        id: &str,
        name: &str,
    ) -> Result<(), ReportError> {
        let err = || pl(report, "entity names");
        let ids = df.column(id).and_then(|c| c.i64()).map_err(err())?;
        let names = df.column(name).and_then(|c| c.str()).map_err(err())?;
        for (id, name) in ids.iter().zip(names.iter()) {
            if let Some(id) = id {
                self.0
                    .entry((kind.code(), id))
                    .or_insert_with(|| name.map(str::to_string));
            }
        }
        Ok(())
    }

    fn get(&self, kind: i64, id: i64) -> Option<&str> {
        self.0.get(&(kind, id)).and_then(|n| n.as_deref())
    }
}

/// The connections that read the users' days at once, in turn.
const READERS: usize = 2;

/// The threads the job keeps busy: its readers, and its own (the rows and their
/// writing).
pub(crate) const THREADS: usize = READERS + 1;

/// Users' and white labels' output rows, from the daily metrics, handed to `emit`
/// a chunk of users at a time, in chunk order, then the white labels' in one batch;
/// `names` gets the users' and white labels' names.
fn people_rows(
    ctx: &Ctx<'_>,
    span: &Span,
    names: &mut Names,
    emit: &mut Emit<'_>,
) -> Result<(), ReportError> {
    let whitelabel_of = people(ctx, names)?;
    let calendar = Calendar {
        first: span.horizon,
        today: span.today,
    };
    let reader = ChunkReader {
        source: daily::source(ctx)?,
        calendar,
        periods: &span.periods,
        whitelabel_of: &whitelabel_of,
    };
    let [mut sums, second] = user_rows(ctx, &reader, names, emit)?;
    sums.merge(second);
    let mut rows = Rows::default();
    sums.each(|label, first, days| {
        let series = Series {
            kind: Entity::Whitelabel,
            id: label,
            first,
            days,
        };
        rows.add(&span.periods, &series);
    });
    emit(output::table(vec![rows], names, &span.periods).map_err(pl(ctx.report(), "output rows"))?)
}

/// The users' and white labels' names (into `names`), and each user's white label.
fn people(ctx: &Ctx<'_>, names: &mut Names) -> Result<HashMap<i64, i64>, ReportError> {
    let report = ctx.report();
    let users = ctx.read(
        "users",
        &[
            ("user_id", Kind::Int),
            ("user_name", Kind::Text),
            ("whitelabel_id", Kind::Int),
        ],
    )?;
    let whitelabels = ctx.read_whitelabels()?;
    names.add(report, Entity::User, &users, "user_id", "user_name")?;
    let (id, name) = ("whitelabel_id", "whitelabel_name");
    names.add(report, Entity::Whitelabel, &whitelabels, id, name)?;
    whitelabel_lookup(&users).map_err(pl(report, "white label of each user"))
}

/// The users' output rows, handed to `emit` a chunk of users at a time in chunk
/// order; returns the white labels' daily sums, of the first half of the chunks
/// and of the second.
///
/// Two readers on connections of their own take the chunks in turn (chunk `i` is
/// reader `i % 2`'s), each at most one chunk ahead of the writing, so memory holds
/// a few chunks whatever the number of users. The white labels' sums add the users
/// in chunk order, the two halves apart, then the two: the same additions in the
/// same order whichever reader read a chunk.
fn user_rows(
    ctx: &Ctx<'_>,
    reader: &ChunkReader<'_>,
    names: &Names,
    emit: &mut Emit<'_>,
) -> Result<[WhitelabelDays; 2], ReportError> {
    let report = ctx.report();
    let chunks = daily::chunks(ctx)?;
    let half = chunks.len() / 2;
    let labels: Vec<i64> = reader.whitelabel_of.values().copied().collect();
    let mut sums = [
        WhitelabelDays::new(reader.calendar, labels.clone()),
        WhitelabelDays::new(reader.calendar, labels),
    ];
    std::thread::scope(|scope| -> Result<(), ReportError> {
        let mut readers = Vec::new();
        let mut inboxes = Vec::new();
        for k in 0..READERS {
            // A chunk is handed over, not queued: each reader is at most one chunk
            // ahead of the writing.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(0);
            let mine: Vec<daily::IdRange> =
                chunks.iter().copied().skip(k).step_by(READERS).collect();
            let own = ctx.reading();
            readers.push(scope.spawn(move || own.run(|ctx| reader.chunks(ctx, &mine, &tx))));
            inboxes.push(rx);
        }
        let mut written = Ok(());
        for i in 0..chunks.len() {
            // A reader that failed stops sending; its error comes from its join.
            let Ok(chunk) = inboxes[i % READERS].recv() else {
                break;
            };
            for (label, first, days) in &chunk.whitelabel_days {
                sums[usize::from(i >= half)].add(*label, *first, days);
            }
            written = output::table(vec![chunk.rows], names, reader.periods)
                .map_err(pl(report, "output rows"))
                .and_then(&mut *emit);
            if written.is_err() {
                break;
            }
        }
        // The readers' sends fail once the inboxes are gone, so they stop.
        drop(inboxes);
        for reader in readers {
            unpanicked(report, reader.join())?;
        }
        written
    })?;
    Ok(sums)
}

/// One chunk of users, read: its output rows, and the days of its users that belong
/// to a white label (`(white label, first day, days)`, in the order read; an
/// unknown value counts as nothing in a sum, so it is 0 here).
struct Chunk {
    rows: Rows,
    whitelabel_days: Vec<(i64, i64, Vec<[f64; 3]>)>,
}

/// What a reader of chunks needs.
struct ChunkReader<'a> {
    source: daily::Source,
    calendar: Calendar,
    periods: &'a Periods,
    whitelabel_of: &'a HashMap<i64, i64>,
}

impl ChunkReader<'_> {
    /// Reads `chunks` in order, sending each one's rows; stops early when nobody
    /// takes them any more.
    fn chunks(
        &self,
        ctx: &Ctx<'_>,
        chunks: &[daily::IdRange],
        out: &std::sync::mpsc::SyncSender<Chunk>,
    ) -> Result<(), ReportError> {
        let mut days = UserDays::new(self.calendar);
        for &range in chunks {
            read::read_chunk(
                ctx,
                self.source,
                range,
                self.calendar.first,
                |user, day, values| days.add(user, day, values),
            )?;
            let mut chunk = Chunk {
                rows: Rows::default(),
                whitelabel_days: Vec::new(),
            };
            days.drain(|user, first, days| {
                chunk.rows.add(
                    self.periods,
                    &Series {
                        kind: Entity::User,
                        id: user,
                        first,
                        days,
                    },
                );
                if let Some(&label) = self.whitelabel_of.get(&user) {
                    chunk.whitelabel_days.push((label, first, known(days)));
                }
            });
            if out.send(chunk).is_err() {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Organizations' output rows, with the `organizations` section (for names).
fn organization_rows(ctx: &Ctx<'_>, span: &Span) -> Result<(Rows, DataFrame), ReportError> {
    let report = ctx.report();
    let organizations = ctx.read(
        "organizations",
        &[
            ("organization_id", Kind::Int),
            ("organization_name", Kind::Text),
        ],
    )?;
    let events = ctx.read(
        "org_events",
        &[
            ("organization_id", Kind::Int),
            ("day", Kind::Day),
            ("delta", Kind::Real),
        ],
    )?;
    let levels = levels(report, events, span)?;
    Ok((level_rows(report, &levels, span)?, organizations))
}

/// The level of compute used of each organization at the end of each day with a
/// change, by organization and day (history older than the horizon folds into one
/// starting level).
fn levels(report: &str, events: DataFrame, span: &Span) -> Result<DataFrame, ReportError> {
    let err = |step| pl(report, step);
    let (horizon, today) = (span.horizon, span.today);
    let levels = events
        .lazy()
        .filter(
            col("organization_id")
                .is_not_null()
                .and(col("day").is_not_null())
                .and(col("day").lt_eq(lit(today))),
        )
        .with_column(
            when(col("day").lt(lit(horizon)))
                .then(lit(horizon - 1))
                .otherwise(col("day"))
                .alias("day"),
        )
        .group_by([col("organization_id").alias("entity_id"), col("day")])
        .agg([col("delta").sum()])
        .sort(["entity_id", "day"], SortMultipleOptions::default());
    levels
        .with_column(
            col("delta")
                .cum_sum(false)
                .over([col("entity_id")])
                .map_err(err("accumulating levels"))?
                .alias("level"),
        )
        .collect()
        .map_err(err("accumulating organization levels"))
}

/// Each organization's output rows from its levels ([`levels`]).
fn level_rows(report: &str, levels: &DataFrame, span: &Span) -> Result<Rows, ReportError> {
    let err = |step| pl(report, step);
    let (horizon, today) = (span.horizon, span.today);
    let ids = levels
        .column("entity_id")
        .and_then(|c| c.i64())
        .map_err(err("levels"))?;
    let days = levels
        .column("day")
        .and_then(|c| c.i64())
        .map_err(err("levels"))?;
    let values = levels
        .column("level")
        .and_then(|c| c.f64())
        .map_err(err("levels"))?;
    let calendar = Calendar {
        first: horizon - 1,
        today,
    };
    let mut rows = Rows::default();
    let mut series: Vec<(i64, Option<f64>)> = Vec::new();
    let mut flush = |id: i64, series: &mut Vec<(i64, Option<f64>)>| {
        if let Some((first, days)) = growth(calendar, series) {
            rows.add(
                &span.periods,
                &Series {
                    kind: Entity::Organization,
                    id,
                    first,
                    days: &days,
                },
            );
        }
        series.clear();
    };
    let mut current = None;
    for ((id, day), level) in ids.iter().zip(days.iter()).zip(values.iter()) {
        let (Some(id), Some(day)) = (id, day) else {
            continue;
        };
        if let Some(done) = current.filter(|&c| c != id) {
            flush(done, &mut series);
        }
        current = Some(id);
        series.push((day, level));
    }
    if let Some(id) = current {
        flush(id, &mut series);
    }
    Ok(rows)
}

/// user id → white label id, from the `users` section.
fn whitelabel_lookup(users: &DataFrame) -> PolarsResult<HashMap<i64, i64>> {
    let ids = users.column("user_id")?.i64()?;
    let whitelabels = users.column("whitelabel_id")?.i64()?;
    Ok(ids
        .iter()
        .zip(whitelabels.iter())
        .filter_map(|(u, w)| Some((u?, w?)))
        .collect())
}

/// The completeness of each row (`crate::report::completeness`): an organization's
/// compute, or the collided days a user's or white label's row reads (a row built
/// from a day whose data is in doubt is flagged; one that reads none has the
/// columns empty).
fn row_sources<'a>(
    complete: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    // Read from the columns as they are, not copied into vectors: the report has 2.2
    // million rows over an xlarge mirror.
    let column = |name: &str| {
        df.column(name).map_err(|_| TableError {
            report: NAME.to_string(),
            column: name.to_string(),
            problem: "is missing".to_string(),
        })
    };
    let wrong = |name: &str| TableError {
        report: NAME.to_string(),
        column: name.to_string(),
        problem: "is not of the job's type".to_string(),
    };
    let text = |name: &str| column(name)?.str().map_err(|_| wrong(name));
    let id = column("entity_id")?.i64().map_err(|_| wrong("entity_id"))?;
    let (kind, period, start) = (text("entity_type")?, text("period")?, text("period_start")?);
    let periods = Periods::new(complete.today());
    Ok(Box::new(
        kind.iter()
            .zip(id.iter())
            .zip(period.iter().zip(start.iter()))
            .map(move |((kind, id), (period, start))| {
                if kind == Some(Entity::Organization.name()) {
                    return Some(Source::OrganizationCompute(id));
                }
                if complete.no_collided_days() {
                    return None;
                }
                let people = match kind? {
                    k if k == Entity::User.name() => People::User,
                    k if k == Entity::Whitelabel.name() => People::Whitelabel,
                    _ => return None,
                };
                let days = days_read(&periods, period?, parse_day(start?)?)?;
                complete.daily_source(people, id?, days)
            }),
    ))
}

crate::report::tables::report_table! {
    /// `compute_trends`: one row per (entity, period, period start).
    ComputeTrends = NAME {
        entity_type: text,
        entity_id: int,
        entity_name: text,
        period: text,
        period_start: text,
        compute_seconds: float,
        rolling_30d: float,
        rolling_30d_prev: float,
    }
}

/// An incomplete row in the attention list: its user, white label or organization.
fn describe<'a>(df: &'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError> {
    let t = ComputeTrends::read(df)?;
    let (kind, id, name) = (t.entity_type, t.entity_id, t.entity_name);
    Ok(Box::new(move |r| {
        entity(kind[r].unwrap_or("?"), id[r], name[r])
    }))
}
