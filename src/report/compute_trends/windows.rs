//! The output rows of one dense series: the last 30 days, 13 ISO weeks and 12 months,
//! each with its totals, the rolling sums at its last day and the previous period's
//! total. Everything comes from the series itself (at most 13 months and 62 days), so
//! no frame of the whole history is ever built.

use super::Entity;
use crate::calendar::{month_start, months_back};
use crate::report::frame::Nums;

/// One day of a series: CPU, GPU and compute seconds (`None`: unknown).
pub(super) type Day = [Option<f64>; 3];

/// Index of the compute seconds in a [`Day`] (the value windows and changes use).
const COMPUTE: usize = 2;

/// The rolling sums' lengths in days: a row has the sums over the [`SHORT`] and the
/// [`LONG`] days ending on its last day, and over the [`LONG`] days before those.
const SHORT: usize = 7;
const LONG: usize = 30;

/// The periods every series is cut into ([`crate::report::periods`]), with what a
/// row's change compares against.
pub(super) struct Periods {
    shown: crate::report::periods::Periods,
    /// The leading days of the month before that the month of T is compared with.
    month_before_elapsed: (i64, i64),
}

impl Periods {
    pub(super) fn new(today: i64) -> Self {
        let shown = crate::report::periods::Periods::new(today);
        let month_now = shown.month_now;
        let last_month = months_back(today, 1).unwrap_or(month_now - 31);
        Periods {
            shown,
            month_before_elapsed: (
                last_month,
                (last_month + (today - month_now)).min(month_now - 1),
            ),
        }
    }

    /// The first day of the period that contains T, of the kind `order` (0 day,
    /// 1 ISO week, 2 month).
    pub(super) fn current_start(&self, order: i64) -> i64 {
        self.shown.current_start(order)
    }

    /// The last day of the period of kind `order` that starts on `start`, or T when
    /// it is the unfinished one.
    fn end(&self, order: i64, start: i64) -> i64 {
        self.shown.end(order, start)
    }

    /// The days (first, last) of the period a row's change compares with: the day,
    /// week or month before; for the week and the month that contain T (they run only
    /// to T), the same number of leading days of the one before (a month's capped at
    /// its length).
    fn previous(&self, order: i64, start: i64) -> (i64, i64) {
        match order {
            0 => (start - 1, start - 1),
            1 if start == self.shown.week_now => (start - 7, self.shown.today - 7),
            1 => (start - 7, start - 1),
            _ if start == self.shown.month_now => self.month_before_elapsed,
            _ => (month_start(start - 1).unwrap_or(start - 31), start - 1),
        }
    }

    /// Every day the figures of the row of kind `order` starting on `start` read: its
    /// period, its rolling sums and the period its change compares with. They overlap
    /// into one span (first, last).
    pub(super) fn days_read(&self, order: i64, start: i64) -> (i64, i64) {
        let end = self.end(order, start);
        let rolling = end - (2 * LONG - 1) as i64;
        (rolling.min(self.previous(order, start).0), end)
    }
}

/// A dense series: one [`Day`] per calendar day from `first` to T.
pub(super) struct Series<'a> {
    pub kind: Entity,
    pub id: i64,
    pub first: i64,
    pub days: &'a [Day],
}

/// Running sums over a series, so any window's sum is one subtraction.
struct Running {
    /// `sum[i]`: compute seconds of the days before index `i` (unknown as 0).
    sum: Vec<f64>,
    /// `known[i]`: days before index `i` whose compute seconds are known.
    known: Vec<u32>,
}

impl Running {
    fn new(days: &[Day]) -> Self {
        let mut sum = Vec::with_capacity(days.len() + 1);
        let mut known = Vec::with_capacity(days.len() + 1);
        let (mut s, mut k) = (0.0, 0);
        sum.push(s);
        known.push(k);
        for day in days {
            if let Some(v) = day[COMPUTE] {
                s += v;
                k += 1;
            }
            sum.push(s);
            known.push(k);
        }
        Running { sum, known }
    }

    /// The sum over the `len` days ending at index `end` (those of the series), null
    /// when none of them is known.
    fn window(&self, end: usize, len: usize) -> Option<f64> {
        let low = (end + 1).saturating_sub(len);
        (self.known[end + 1] > self.known[low]).then(|| self.sum[end + 1] - self.sum[low])
    }
}

/// Output rows, in output order, before names and texts: entity, period, start day,
/// the three values, the rolling sums and the previous period's compute seconds.
#[derive(Default)]
pub(super) struct Rows {
    pub kind: Vec<i64>,
    pub entity_id: Vec<i64>,
    pub period_order: Vec<i64>,
    pub start: Vec<i64>,
    /// CPU, GPU and compute seconds, rolling 7 and 30 days, rolling 30 days 30 days
    /// earlier, and the previous period's compute seconds.
    pub values: [Nums<f64>; 7],
}

impl Rows {
    /// Adds the rows of one series: a day row for each of the last 30 days, a week row
    /// for each of the last 13 ISO weeks and a month row for each of the last 12
    /// months that the series reaches.
    pub(super) fn add(&mut self, periods: &Periods, series: &Series<'_>) {
        let Some(last) = series.days.len().checked_sub(1) else {
            return;
        };
        let running = Running::new(series.days);
        let first = series.first;
        let today = first + last as i64;
        let index = |day: i64| usize::try_from(day - first).ok();
        // Totals over the series' days in `from ..= to`; unknown where no day is known.
        let total = |from: i64, to: i64| -> Day {
            let mut out = [None; 3];
            let (Some(low), Some(high)) = (index(from.max(first)), index(to.min(today))) else {
                return out;
            };
            for day in series.days.get(low..=high).unwrap_or_default() {
                for (sum, value) in out.iter_mut().zip(day) {
                    if let Some(v) = value {
                        *sum = Some(sum.unwrap_or(0.0) + v);
                    }
                }
            }
            out
        };
        let mut push = |order: i64, start: i64, values: Day, end: usize, prev: Option<f64>| {
            self.kind.push(series.kind.code());
            self.entity_id.push(series.id);
            self.period_order.push(order);
            self.start.push(start);
            let earlier = end.checked_sub(LONG);
            let rolling = [
                running.window(end, SHORT),
                running.window(end, LONG),
                earlier.and_then(|e| running.window(e, LONG)),
                prev,
            ];
            for (col, value) in self
                .values
                .iter_mut()
                .zip(values.into_iter().chain(rolling))
            {
                col.push(value);
            }
        };

        let previous = |order: i64, start: i64| {
            let (from, to) = periods.previous(order, start);
            total(from, to)[COMPUTE]
        };
        for day in (today - (crate::report::periods::DAYS - 1)).max(first)..=today {
            let i = (day - first) as usize;
            push(0, day, series.days[i], i, previous(0, day));
        }
        let mut week = periods.shown.first_week;
        while week <= periods.shown.week_now {
            let end = periods.end(1, week);
            if let Some(i) = index(end) {
                push(1, week, total(week, end), i, previous(1, week));
            }
            week += 7;
        }
        let mut month = periods.shown.first_month;
        while month <= today {
            let end = periods.end(2, month);
            if let Some(i) = index(end) {
                push(2, month, total(month, end), i, previous(2, month));
            }
            month = end + 1;
        }
        debug_assert_eq!(today, periods.shown.today, "every series runs to T");
    }

    /// Frees the key columns (entity, period, start) once the table has read them.
    pub(super) fn release_keys(&mut self) {
        for column in [
            &mut self.kind,
            &mut self.entity_id,
            &mut self.period_order,
            &mut self.start,
        ] {
            *column = Vec::new();
        }
    }
}
