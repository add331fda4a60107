//! The periods a trend report cuts a day-by-day series into, fixed by the as-of
//! date T: a row for each of the last 30 days, the last 13 ISO weeks (Monday to
//! Sunday) and the last 12 calendar months. The week and the month that contain T
//! are unfinished: they run to T. `compute_trends` and `storage_trends` both cut
//! their series here, so their rows line up period for period.

use crate::calendar::{month_start, months_back, week_start};

/// The kinds of period, in output order; a row's `period` column.
pub const NAMES: [&str; 3] = ["day", "week", "month"];

/// Day rows: the last this many days, T included.
pub const DAYS: i64 = 30;

/// Week rows: the last this many ISO weeks, T's included.
pub const WEEKS: i64 = 13;

/// Month rows: the last this many calendar months, T's included.
pub const MONTHS: u32 = 12;

/// The periods of a report as of T.
#[derive(Debug, Clone, Copy)]
pub struct Periods {
    /// T, as a day number.
    pub today: i64,
    /// Monday of the week of T, and of the first week shown.
    pub week_now: i64,
    pub first_week: i64,
    /// First day of the month of T, and of the first month shown.
    pub month_now: i64,
    pub first_month: i64,
}

impl Periods {
    /// The periods of a report as of the day number `today`.
    pub fn new(today: i64) -> Self {
        let week_now = week_start(today);
        Periods {
            today,
            week_now,
            first_week: week_now - 7 * (WEEKS - 1),
            month_now: month_start(today).unwrap_or(today),
            first_month: months_back(today, MONTHS - 1).unwrap_or(today - 335),
        }
    }

    /// The first day of the period that contains T, of the kind `order` (0 day,
    /// 1 ISO week, 2 month).
    pub fn current_start(&self, order: i64) -> i64 {
        match order {
            0 => self.today,
            1 => self.week_now,
            _ => self.month_now,
        }
    }

    /// The last day of the period of kind `order` that starts on `start`, or T when
    /// it is the unfinished one.
    pub fn end(&self, order: i64, start: i64) -> i64 {
        let end = match order {
            0 => start,
            1 => start + 6,
            _ => month_start(start + 31).unwrap_or(start + 31) - 1,
        };
        end.min(self.today)
    }

    /// Every period shown, in output order: `(kind, first day, last day)`, the days
    /// oldest first, then the weeks, then the months.
    pub fn each(&self) -> impl Iterator<Item = (i64, i64, i64)> + '_ {
        let days = (self.today - (DAYS - 1)..=self.today).map(|d| (0, d, d));
        let weeks = (0..WEEKS).map(move |k| {
            let start = self.first_week + 7 * k;
            (1, start, self.end(1, start))
        });
        let months = std::iter::successors(Some(self.first_month), move |&m| {
            let next = self.end(2, m) + 1;
            (next <= self.today).then_some(next)
        })
        .map(move |m| (2, m, self.end(2, m)));
        days.chain(weeks).chain(months)
    }

    /// The first day any row reads: the first month's, less the longest look back
    /// a row takes (`look_back` days before its first day).
    pub fn horizon(&self, look_back: i64) -> i64 {
        self.first_month.min(self.today - (DAYS - 1)) - look_back
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calendar::{date_of, day_of};
    use chrono::NaiveDate;

    #[test]
    fn thirty_days_thirteen_weeks_and_twelve_months_each_running_to_t_at_most() {
        // A Wednesday in the middle of a month.
        let today = day_of(NaiveDate::from_ymd_opt(2026, 11, 18).expect("date"));
        let p = Periods::new(today);
        let all: Vec<(i64, i64, i64)> = p.each().collect();
        let of = |kind| all.iter().filter(|(k, _, _)| *k == kind).count();
        assert_eq!((of(0), of(1), of(2)), (30, 13, 12));
        let text = |d: i64| date_of(d).expect("day").to_string();
        let week: Vec<&(i64, i64, i64)> = all.iter().filter(|(k, _, _)| *k == 1).collect();
        assert_eq!(
            text(week[12].1),
            "2026-11-16",
            "the week of T starts on its Monday"
        );
        assert_eq!(week[12].2, today, "and runs to T");
        assert_eq!(text(week[0].1), "2026-08-24");
        assert_eq!(text(week[0].2), "2026-08-30");
        let month: Vec<&(i64, i64, i64)> = all.iter().filter(|(k, _, _)| *k == 2).collect();
        assert_eq!(
            (text(month[0].1), text(month[0].2)),
            ("2025-12-01".into(), "2025-12-31".into())
        );
        assert_eq!(
            (text(month[11].1), month[11].2),
            ("2026-11-01".into(), today)
        );
        assert!(
            all.iter()
                .all(|&(_, start, end)| start <= end && end <= today)
        );
    }
}
