//! `storage_trends`: storage per organization and per white label at the end of each
//! day, ISO week and calendar month shown (`crate::report::periods`: the last 30
//! days, 13 weeks and 12 months), with its growth in the period, over the 7 and the
//! 30 days to the period's end, and the change against the level the period started
//! from.
//!
//! An organization's level on a day is the `entitlements` storage figure as the
//! mirror's history had it at the end of that day: its developer profile user's
//! storage where that user has a daily record on or before the day, else the sum of
//! its datasets' `totalFileSize` (each version the mirror kept counts from the day it
//! was observed until the day it was replaced or removed). Days before the mirror's
//! first sync have no level. A white label's level is the sum of its users' storage.
//!
//! A user's storage on a day: `totalStorageSizeBytes` of its latest record on or
//! before T, less the net storage (`daily::Bytes::net_storage`: bytes added less
//! deleted) of its records after that day; none before its first record. The days
//! come from the packed series like every report's (`crate::report::daily`), a
//! chunk of users at a time, and only the levels the rows read are kept: memory
//! follows a chunk and the organizations, not the users' days.

use crate::calendar::{day_text, parse_day};
use crate::report::attention::entity;
use crate::report::batches::Emit;
use crate::report::completeness::{Completeness, People, Source, Sources};
use crate::report::daily::{self, Bytes};
use crate::report::dated;
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl, query_err};
use crate::report::frame::Kind;
use crate::report::periods::{self, Periods};
use crate::report::tables::{Table, TableError};
use crate::report::{Ctx, cols};
use polars::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// The report's name.
pub const NAME: ReportName = ReportName::new("storage_trends");

/// The report: read back by the organization pages (their storage chart).
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "storage per organization and white label by day, week and month: level, growth, change",
    include_str!("../../queries/storage_trends.sql"),
    COLUMNS,
    build,
)
.complete(row_sources, describe)
.kept()
.cost(1);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "entity_type",
    "entity_id",
    "entity_name",
    "period",
    "period_start",
    "period_complete",
    "source",
    "storage_bytes",
    "growth_bytes",
    "growth_7d_bytes",
    "growth_30d_bytes",
    "change_pct",
];

/// The days a row looks back from its period's end for its rolling growths.
const ROLLING: [i64; 2] = [7, 30];

/// Organizations whose rows go out together.
const ORGS_PER_BATCH: usize = 512;

/// Where a level comes from (the `source` column).
const FROM_DATASETS: &str = "datasets";
const FROM_DAILY: &str = "daily_metrics";

fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let periods = Periods::new(ctx.today);
    let needed = Needed::of(&periods);
    let orgs = organizations(ctx)?;
    let dev_users: HashMap<i64, i64> = orgs.iter().filter_map(|o| Some((o.user?, o.id))).collect();
    let people = people_levels(ctx, &needed, &dev_users)?;
    let datasets = dataset_levels(ctx, &needed)?;
    let first = first_day(ctx)?;
    for batch in orgs.chunks(ORGS_PER_BATCH) {
        let mut out = Out::default();
        for org in batch {
            let from_daily = org.user.and_then(|u| people.users.get(&u));
            let from_datasets = datasets.get(&org.id);
            let level = |slot: usize| -> Option<(f64, &'static str)> {
                if needed.days[slot] < first? {
                    return None;
                }
                match from_daily.and_then(|l| l[slot]) {
                    Some(v) => Some((v, FROM_DAILY)),
                    None => Some((from_datasets.map_or(0.0, |l| l[slot]), FROM_DATASETS)),
                }
            };
            out.entity(
                "organization",
                org.id,
                org.name.as_deref(),
                &periods,
                &needed,
                level,
            );
        }
        emit(out.frame(ctx.report())?)?;
    }
    let names = whitelabel_names(ctx)?;
    let mut out = Out::default();
    for (label, levels) in &people.whitelabels {
        let name = names.get(label).and_then(|n| n.as_deref());
        let level = |slot: usize| levels[slot].map(|b| (b.value(), FROM_DAILY));
        out.entity("whitelabel", *label, name, &periods, &needed, level);
    }
    emit(out.frame(ctx.report())?)
}

/// The days whose level some row reads: each period's last day, the day before it
/// starts, and the days its rolling growths look back to; sorted, each once.
struct Needed {
    days: Vec<i64>,
}

impl Needed {
    fn of(periods: &Periods) -> Needed {
        let mut days: Vec<i64> = periods
            .each()
            .flat_map(|(_, start, end)| [end, start - 1, end - ROLLING[0], end - ROLLING[1]])
            .collect();
        days.sort_unstable();
        days.dedup();
        Needed { days }
    }

    fn slot(&self, day: i64) -> Option<usize> {
        self.days.binary_search(&day).ok()
    }

    fn first(&self) -> i64 {
        self.days.first().copied().unwrap_or(0)
    }
}

/// One organization listed, with its developer profile's user.
struct Org {
    id: i64,
    name: Option<String>,
    user: Option<i64>,
}

fn organizations(ctx: &Ctx<'_>) -> Result<Vec<Org>, ReportError> {
    let df = ctx.read(
        "organizations",
        &[
            ("organization_id", Kind::Int),
            ("organization_name", Kind::Text),
            ("user_id", Kind::Int),
        ],
    )?;
    let t = Table::new(ctx.report(), &df);
    let (ids, names, users) = (
        t.int("organization_id")?,
        t.text("organization_name")?,
        t.int("user_id")?,
    );
    let mut orgs: Vec<Org> = Vec::with_capacity(ids.len());
    for ((id, name), user) in ids.into_iter().zip(names).zip(users) {
        // An organization with two profile users would be listed twice: its first.
        if let Some(id) = id.filter(|id| orgs.last().is_none_or(|o| o.id != *id)) {
            let name = name.map(str::to_string);
            orgs.push(Org { id, name, user });
        }
    }
    Ok(orgs)
}

fn whitelabel_names(ctx: &Ctx<'_>) -> Result<HashMap<i64, Option<String>>, ReportError> {
    let df = ctx.read_whitelabels()?;
    let t = Table::new(ctx.report(), &df);
    let names = t.text("whitelabel_name")?;
    Ok(t.int("whitelabel_id")?
        .into_iter()
        .zip(names)
        .filter_map(|(id, name)| Some((id?, name.map(str::to_string))))
        .collect())
}

/// The first day the mirror holds data for (none before its first sync).
fn first_day(ctx: &Ctx<'_>) -> Result<Option<i64>, ReportError> {
    let first = crate::mirror::coverage::first_day(ctx.conn).map_err(query_err(
        ctx.report(),
        "sync_runs",
        "first sync",
    ))?;
    Ok(first.map(crate::calendar::day_of))
}

/// Each organization's dataset storage on each needed day (0 before its first
/// dataset).
fn dataset_levels(ctx: &Ctx<'_>, needed: &Needed) -> Result<HashMap<i64, Vec<f64>>, ReportError> {
    let df = ctx.read(
        "dataset_events",
        &[
            ("organization_id", Kind::Int),
            ("day", Kind::Day),
            ("delta", Kind::Real),
        ],
    )?;
    let t = Table::new(ctx.report(), &df);
    let (orgs, days, deltas) = (t.int("organization_id")?, t.int("day")?, t.float("delta")?);
    // Each organization's changes by day, then the running level at each needed day.
    let mut changes: HashMap<i64, BTreeMap<i64, f64>> = HashMap::new();
    for ((org, day), delta) in orgs.into_iter().zip(days).zip(deltas) {
        if let (Some(org), Some(day), Some(delta)) = (org, day, delta) {
            *changes.entry(org).or_default().entry(day).or_default() += delta;
        }
    }
    Ok(changes
        .into_iter()
        .map(|(org, by_day)| (org, dated::running_sum(&needed.days, &by_day)))
        .collect())
}

/// The users' storage on each needed day: every developer profile user's own, and
/// each white label's sum over its users.
struct PeopleLevels {
    users: HashMap<i64, Vec<Option<f64>>>,
    whitelabels: BTreeMap<i64, Vec<Option<Bytes>>>,
}

/// A user's latest record on or before T, and its first record.
struct Anchor {
    whitelabel: Option<i64>,
    first_day: i64,
    last_day: i64,
    total: Bytes,
}

fn people_levels(
    ctx: &Ctx<'_>,
    needed: &Needed,
    dev_users: &HashMap<i64, i64>,
) -> Result<PeopleLevels, ReportError> {
    let anchors = anchors(ctx)?;
    let mut out = PeopleLevels {
        users: HashMap::new(),
        whitelabels: BTreeMap::new(),
    };
    let source = daily::source(ctx)?;
    let days = (needed.first() + 1, ctx.today);
    for range in daily::chunks(ctx)? {
        let mut later = LaterNets::new(needed, &anchors);
        daily::for_each_day(ctx, source, range, days, |user, day, values| {
            later.add(user, day, Bytes::net_storage(values));
        })?;
        let in_range = |user: &i64| {
            range.0.is_none_or(|low| *user >= low) && range.1.is_none_or(|high| *user < high)
        };
        for (user, anchor) in anchors.iter().filter(|(u, _)| in_range(u)) {
            let levels = user_levels(anchor, &later.of(*user), needed);
            if let Some(label) = anchor.whitelabel {
                let sums = out
                    .whitelabels
                    .entry(label)
                    .or_insert_with(|| vec![None; needed.days.len()]);
                for (sum, level) in sums.iter_mut().zip(&levels) {
                    if let Some(level) = level {
                        *sum = Some(sum.unwrap_or_default().plus(*level));
                    }
                }
            }
            if dev_users.contains_key(user) {
                out.users
                    .insert(*user, levels.iter().map(|l| l.map(Bytes::value)).collect());
            }
        }
    }
    Ok(out)
}

/// The users' net storage after each needed day, summed as the records come: a
/// record on day d adds to bucket k, the number of needed days before d, so the net
/// after needed day `slot` is the sum of the buckets past `slot`. A user's records
/// come one after another (the packed series, newest first) or in runs (the rows),
/// so the user being summed is kept apart from the map with its anchor's last day
/// and the last bucket: a lookup per run and a step or two per record, where a
/// search per record took 13 % of the report's CPU over large and keeping and
/// sorting each user's 400 records most of it.
struct LaterNets<'n> {
    needed: &'n Needed,
    anchors: &'n BTreeMap<i64, Anchor>,
    current: Option<Summing>,
    done: HashMap<i64, Vec<Bytes>>,
}

/// The user whose records are coming: its anchor's last day (None: no anchor, its
/// records do not count), the bucket of its last record, and its buckets.
struct Summing {
    user: i64,
    until: Option<i64>,
    bucket: usize,
    buckets: Vec<Bytes>,
}

impl<'n> LaterNets<'n> {
    fn new(needed: &'n Needed, anchors: &'n BTreeMap<i64, Anchor>) -> LaterNets<'n> {
        LaterNets {
            needed,
            anchors,
            current: None,
            done: HashMap::new(),
        }
    }

    /// Adds `user`'s record of `day` unless it is not a user with an anchor or it
    /// comes after the anchor's day.
    fn add(&mut self, user: i64, day: i64, net: Bytes) {
        if self.current.as_ref().is_none_or(|c| c.user != user) {
            self.set_aside();
            self.current = Some(Summing {
                user,
                until: self.anchors.get(&user).map(|a| a.last_day),
                bucket: self.needed.days.len(),
                buckets: self.done.remove(&user).unwrap_or_else(|| self.zero()),
            });
        }
        let Some(c) = &mut self.current else { return };
        if c.until.is_none_or(|until| day > until) {
            return;
        }
        let days = &self.needed.days;
        while c.bucket > 0 && days[c.bucket - 1] >= day {
            c.bucket -= 1;
        }
        while c.bucket < days.len() && days[c.bucket] < day {
            c.bucket += 1;
        }
        c.buckets[c.bucket] = c.buckets[c.bucket].plus(net);
    }

    fn zero(&self) -> Vec<Bytes> {
        vec![Bytes::default(); self.needed.days.len() + 1]
    }

    fn set_aside(&mut self) {
        if let Some(c) = self.current.take().filter(|c| c.until.is_some()) {
            self.done.insert(c.user, c.buckets);
        }
    }

    /// `user`'s buckets (all zero for a user without records in the window).
    fn of(&mut self, user: i64) -> Vec<Bytes> {
        self.set_aside();
        self.done.remove(&user).unwrap_or_else(|| self.zero())
    }
}

/// A user's storage on each needed day, back from its latest record on or before T:
/// that record's total less the net storage of the records after the day
/// ([`LaterNets`]' buckets of the records up to its latest).
fn user_levels(anchor: &Anchor, buckets: &[Bytes], needed: &Needed) -> Vec<Option<Bytes>> {
    let mut levels = vec![None; needed.days.len()];
    let mut after = Bytes::default();
    for (slot, &day) in needed.days.iter().enumerate().rev() {
        after = after.plus(buckets[slot + 1]);
        if day < anchor.first_day {
            break;
        }
        levels[slot] = Some(anchor.total.plus(after.negated()));
    }
    levels
}

/// Every white label user with a daily record on or before T, by id.
fn anchors(ctx: &Ctx<'_>) -> Result<BTreeMap<i64, Anchor>, ReportError> {
    let df = ctx.read(
        "users",
        &[
            ("user_id", Kind::Int),
            ("whitelabel_id", Kind::Int),
            ("first_day", Kind::Day),
            ("last_day", Kind::Day),
            ("total_bytes", Kind::Real),
        ],
    )?;
    let t = Table::new(ctx.report(), &df);
    let (users, labels) = (t.int("user_id")?, t.int("whitelabel_id")?);
    let (firsts, lasts, totals) = (
        t.int("first_day")?,
        t.int("last_day")?,
        t.float("total_bytes")?,
    );
    let mut out = BTreeMap::new();
    for r in 0..t.height() {
        let (Some(user), Some(first_day), Some(last_day)) = (users[r], firsts[r], lasts[r]) else {
            continue;
        };
        let anchor = Anchor {
            whitelabel: labels[r],
            first_day,
            last_day,
            total: Bytes::of(totals[r]),
        };
        out.insert(user, anchor);
    }
    Ok(out)
}

/// Output rows being gathered, column by column.
#[derive(Default)]
struct Out {
    entity_type: Vec<&'static str>,
    entity_id: Vec<i64>,
    entity_name: Vec<Option<String>>,
    period: Vec<&'static str>,
    period_start: Vec<Option<String>>,
    period_complete: Vec<bool>,
    source: Vec<&'static str>,
    /// Level, growth, growth over 7 and over 30 days, change in %.
    values: [Vec<Option<f64>>; 5],
}

impl Out {
    /// The rows of one entity whose level on the needed day of slot `i` is
    /// `level(i)` (with where it comes from): a row per period whose last day has
    /// a level.
    fn entity(
        &mut self,
        kind: &'static str,
        id: i64,
        name: Option<&str>,
        periods: &Periods,
        needed: &Needed,
        level: impl Fn(usize) -> Option<(f64, &'static str)>,
    ) {
        let at = |day: i64| needed.slot(day).and_then(&level);
        for (order, start, end) in periods.each() {
            let Some((now, source)) = at(end) else {
                continue;
            };
            let since = |day: i64| at(day).map(|(before, _)| now - before);
            let before = at(start - 1).map(|(b, _)| b);
            let growth = since(start - 1);
            let change = before
                .zip(growth)
                .filter(|(b, _)| *b > 0.0)
                .map(|(b, g)| 100.0 * g / b);
            self.entity_type.push(kind);
            self.entity_id.push(id);
            self.entity_name.push(name.map(str::to_string));
            self.period.push(periods::NAMES[order as usize]);
            self.period_start.push(day_text(start));
            self.period_complete
                .push(start < periods.current_start(order));
            self.source.push(source);
            let row = [
                Some(now),
                growth,
                since(end - ROLLING[0]),
                since(end - ROLLING[1]),
                change,
            ];
            for (column, value) in self.values.iter_mut().zip(row) {
                column.push(value);
            }
        }
    }

    fn frame(self, report: &str) -> Result<DataFrame, ReportError> {
        let height = self.entity_id.len();
        let mut columns = vec![
            Column::new(COLUMNS[0].into(), self.entity_type),
            Column::new(COLUMNS[1].into(), self.entity_id),
            Column::new(COLUMNS[2].into(), self.entity_name),
            Column::new(COLUMNS[3].into(), self.period),
            Column::new(COLUMNS[4].into(), self.period_start),
            Column::new(COLUMNS[5].into(), self.period_complete),
            Column::new(COLUMNS[6].into(), self.source),
        ];
        for (name, values) in COLUMNS[7..].iter().zip(self.values) {
            columns.push(Column::new((*name).into(), values));
        }
        let mut df = DataFrame::new(height, columns).map_err(pl(report, "output rows"))?;
        let bytes = COLUMNS[7..11].iter().map(|c| (*c, 3));
        let rounding: Vec<(&str, i32)> = bytes.chain([(COLUMNS[11], 2)]).collect();
        cols::round_columns(report, &mut df, &rounding)?;
        Ok(df)
    }
}

/// The completeness of each row (`crate::report::completeness`): an organization's
/// level comes with its document (its datasets, as `entitlements`' storage); a white
/// label's from its users' daily metrics, flagged when a record collided on a day
/// the row reads or a user could not be read.
fn row_sources<'a>(
    complete: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    let t = Table::new(NAME.as_str(), df);
    let (kind, id) = (t.text("entity_type")?, t.int("entity_id")?);
    let (period, start) = (t.text("period")?, t.text("period_start")?);
    let periods = Periods::new(complete.today());
    Ok(Box::new((0..df.height()).map(move |r| {
        if kind[r] == Some("organization") {
            return Some(Source::Document(id[r]));
        }
        let read = id[r].zip(days_read(&periods, period[r]?, start[r]?));
        let collided =
            read.and_then(|(id, days)| complete.daily_source(People::Whitelabel, id, days));
        Some(collided.unwrap_or(Source::Whitelabel))
    })))
}

/// The days a row's figures read: from its rolling look back (or the day before
/// its period, whichever is first) to its period's last day.
fn days_read(periods: &Periods, period: &str, start: &str) -> Option<(i64, i64)> {
    let order = periods::NAMES.iter().position(|p| *p == period)? as i64;
    let start = parse_day(start)?;
    let end = periods.end(order, start);
    Some(((end - ROLLING[1]).min(start - 1), end))
}

/// An incomplete row in the attention list: its organization or white label.
fn describe<'a>(df: &'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError> {
    let t = Table::new(NAME.as_str(), df);
    let (kind, id, name) = (
        t.text("entity_type")?,
        t.int("entity_id")?,
        t.text("entity_name")?,
    );
    Ok(Box::new(move |r| {
        format!("{} storage", entity(kind[r].unwrap_or("?"), id[r], name[r]))
    }))
}

crate::report::tables::report_table! {
    /// `storage_trends`: one row per (entity, period, period start).
    StorageTrends = NAME {
        entity_type: text,
        entity_id: int,
        entity_name: text,
        period: text,
        period_start: text,
        storage_bytes: float,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: i64) -> Bytes {
        Bytes::of(Some(n as f64))
    }

    fn anchor(first_day: i64, last_day: i64, total: i64) -> Anchor {
        Anchor {
            whitelabel: None,
            first_day,
            last_day,
            total: bytes(total),
        }
    }

    fn levels(anchor: &Anchor, later: &mut LaterNets<'_>, user: i64) -> Vec<Option<f64>> {
        user_levels(anchor, &later.of(user), later.needed)
            .into_iter()
            .map(|l| l.map(Bytes::value))
            .collect()
    }

    #[test]
    fn a_user_s_storage_goes_back_from_its_latest_record_through_the_net_of_later_ones() {
        // Records on days 10..=14: net +5, +7, -2, +1, +3; the latest (day 14) holds
        // 100 bytes in all.
        let needed = Needed {
            days: vec![8, 9, 10, 12, 14, 16],
        };
        let anchors = BTreeMap::from([(1, anchor(10, 14, 100)), (2, anchor(11, 11, 0))]);
        let newest_first = [(14, 3), (13, 1), (12, -2), (11, 7), (10, 5)];
        // As the packed series give them: newest first, one user after another.
        let mut later = LaterNets::new(&needed, &anchors);
        for (day, net) in newest_first {
            later.add(1, day, bytes(net));
        }
        // Day 12: 100 - 3 - 1 = 96; day 10: 96 + 2 - 7 = 91; before the first
        // record, nothing; after the latest, its total.
        let expected = [None, None, Some(91.0), Some(96.0), Some(100.0), Some(100.0)];
        assert_eq!(levels(&anchors[&1], &mut later, 1), expected);
        // As rows may come: in any order, in runs with other users' between, with
        // a user that has no anchor and a record past the anchor's last day.
        let mut later = LaterNets::new(&needed, &anchors);
        for (i, (day, net)) in [(12, -2), (10, 5), (14, 3), (11, 7), (13, 1)]
            .into_iter()
            .enumerate()
        {
            later.add(1, day, bytes(net));
            later.add(2 + i as i64 % 2, 11, bytes(1_000));
            later.add(2, 15, bytes(50));
        }
        later.add(1, 15, bytes(1_000_000));
        assert_eq!(levels(&anchors[&1], &mut later, 1), expected);
        let buckets = later.of(2);
        assert_eq!(
            buckets[3].value(),
            3_000.0,
            "day 11 comes after three needed days"
        );
        assert_eq!(buckets.iter().map(|b| b.value()).sum::<f64>(), 3_000.0);
        assert!(later.of(3).iter().all(|b| b.value() == 0.0), "no anchor");
    }

    #[test]
    fn the_needed_days_hold_every_period_end_start_and_look_back_once() {
        let periods = Periods::new(20_000);
        let needed = Needed::of(&periods);
        assert!(
            needed.days.windows(2).all(|w| w[0] < w[1]),
            "sorted, each once"
        );
        for (_, start, end) in periods.each() {
            for day in [end, start - 1, end - 7, end - 30] {
                assert!(needed.slot(day).is_some(), "day {day}");
            }
        }
        assert_eq!(needed.days.last(), Some(&20_000));
    }
}
