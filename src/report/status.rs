//! The status of a usage against its limit, and the percentage printed next to it.
//!
//! The status is decided on the exact numbers (so "14 of 14" is `at_limit` and 14.001
//! of 14 is `exceeded`); the percentage is then rounded to 0.01 *within the status's
//! band*, so a printed figure never contradicts its status: 79.996 % with status `ok`
//! prints 79.99 (not 80.00), 99.996 % with `warning` prints 99.99 (not 100.00) and
//! 100.004 % with `exceeded` prints 100.01.

use crate::report::Thresholds;
use std::ops::Bound;

/// Where a usage stands against its limit, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Over the limit (over `exceeded_pct` of it).
    Exceeded,
    /// Exactly at the limit (at `exceeded_pct` of it): nothing more fits.
    AtLimit,
    /// From `warning_pct` up to, not including, the limit.
    Warning,
    /// Below `warning_pct`.
    Ok,
    /// Usage known, no limit.
    NoLimit,
    /// Usage unknown.
    NoData,
}

impl Status {
    /// Every status, most urgent first.
    pub const ALL: [Status; 6] = [
        Status::Exceeded,
        Status::AtLimit,
        Status::Warning,
        Status::Ok,
        Status::NoLimit,
        Status::NoData,
    ];

    /// The name written in the reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Exceeded => "exceeded",
            Status::AtLimit => "at_limit",
            Status::Warning => "warning",
            Status::Ok => "ok",
            Status::NoLimit => "no_limit",
            Status::NoData => "no_data",
        }
    }

    /// The status a report wrote, if it is one.
    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether a person has to act: warning, at the limit, or over it.
    pub fn needs_action(self) -> bool {
        matches!(self, Status::Exceeded | Status::AtLimit | Status::Warning)
    }
}

/// The colour each row class (a status, a trial's state) is marked with, as
/// `0xRRGGBB`: one list for the HTML page's styles and the workbook's cells.
pub const CLASS_COLOURS: [(&str, u32); 5] = [
    ("exceeded", 0xC6_28_28),
    ("expired", 0xC6_28_28),
    ("at_limit", 0x7B_1F_A2),
    ("warning", 0xE6_8A_00),
    ("expiring", 0xE6_8A_00),
];

/// A usage's status and its percentage of the limit as printed (empty without a
/// positive limit or without usage).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub status: Status,
    pub pct: Option<f64>,
}

/// The status of `used` against `limit` under the thresholds; see the module
/// documentation for the rounding of the percentage.
pub fn judge(used: Option<f64>, limit: Option<f64>, t: &Thresholds) -> Judged {
    let judged = |status, pct| Judged { status, pct };
    let Some(used) = used.filter(|u| !u.is_nan()) else {
        return judged(Status::NoData, None);
    };
    let Some(limit) = limit.filter(|l| !l.is_nan()) else {
        return judged(Status::NoLimit, None);
    };
    if limit <= 0.0 {
        // Nothing is allowed: any use is over; none is fine (not "at" a limit of 0).
        let status = if used > 0.0 {
            Status::Exceeded
        } else {
            Status::Ok
        };
        return judged(status, None);
    }
    let pct = 100.0 * used / limit;
    // Compared on the usage itself, so "14 of 14" is exactly at the limit whatever
    // the division's rounding.
    let full = limit * (t.exceeded_pct / 100.0);
    let status = if used > full {
        Status::Exceeded
    } else if used == full {
        Status::AtLimit
    } else if pct >= t.warning_pct {
        Status::Warning
    } else {
        Status::Ok
    };
    let (w, x) = (t.warning_pct, t.exceeded_pct);
    let printed = match status {
        Status::Exceeded => round_within(pct, Bound::Excluded(x), Bound::Unbounded),
        Status::AtLimit => round_within(x, Bound::Unbounded, Bound::Unbounded),
        Status::Warning => round_within(pct, Bound::Included(w), Bound::Excluded(x)),
        _ => round_within(pct, Bound::Unbounded, Bound::Excluded(w)),
    };
    judged(status, Some(printed))
}

/// Whether a project is flagged (at or over `flag_pct` of its budget), and its
/// percentage rounded within the flag's side of the threshold.
pub fn flag(pct: f64, flag_pct: f64) -> (bool, f64) {
    if pct >= flag_pct {
        (
            true,
            round_within(pct, Bound::Included(flag_pct), Bound::Unbounded),
        )
    } else {
        (
            false,
            round_within(pct, Bound::Unbounded, Bound::Excluded(flag_pct)),
        )
    }
}

/// Hundredths per unit: percentages are printed to 0.01.
const SCALE: f64 = 100.0;

/// `value` rounded to the nearest 0.01, then moved to the nearest multiple of 0.01
/// inside the band when rounding took it out.
pub fn round_within(value: f64, low: Bound<f64>, high: Bound<f64>) -> f64 {
    if !value.is_finite() {
        return value;
    }
    let mut k = (value * SCALE).round();
    match low {
        Bound::Included(b) if k < (b * SCALE).ceil() => k = (b * SCALE).ceil(),
        Bound::Excluded(b) if k <= (b * SCALE).floor() => k = (b * SCALE).floor() + 1.0,
        _ => {}
    }
    match high {
        Bound::Included(b) if k > (b * SCALE).floor() => k = (b * SCALE).floor(),
        Bound::Excluded(b) if k >= (b * SCALE).ceil() => k = (b * SCALE).ceil() - 1.0,
        _ => {}
    }
    k / SCALE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(used: f64, limit: f64) -> (&'static str, Option<f64>) {
        let j = judge(Some(used), Some(limit), &Thresholds::default());
        (j.status.as_str(), j.pct)
    }

    #[test]
    fn just_under_the_warning_threshold_prints_below_it_and_stays_ok() {
        // 79.996 % rounds to 80.00 to the nearest hundredth: printed 79.99 next to ok.
        assert_eq!(at(79_996.0, 100_000.0), ("ok", Some(79.99)));
        // 79.994 % is not moved.
        assert_eq!(at(79_994.0, 100_000.0), ("ok", Some(79.99)));
        assert_eq!(at(79_990.0, 100_000.0), ("ok", Some(79.99)));
        // Exactly 80 % is the first warning percentage.
        assert_eq!(at(80.0, 100.0), ("warning", Some(80.0)));
        assert_eq!(at(80_004.0, 100_000.0), ("warning", Some(80.0)));
    }

    #[test]
    fn just_under_the_limit_prints_below_100_and_stays_warning() {
        // 99.996 % rounds to 100.00 to the nearest hundredth: printed 99.99 next to warning.
        assert_eq!(at(99_996.0, 100_000.0), ("warning", Some(99.99)));
        assert_eq!(at(99_994.0, 100_000.0), ("warning", Some(99.99)));
    }

    #[test]
    fn exactly_at_the_limit_is_at_limit_and_over_it_is_exceeded() {
        assert_eq!(at(14.0, 14.0), ("at_limit", Some(100.0)));
        // One part in 10⁶ over: printed 100.01, never 100.00 next to exceeded.
        assert_eq!(at(1_000_001.0, 1_000_000.0), ("exceeded", Some(100.01)));
        assert_eq!(at(15.0, 14.0), ("exceeded", Some(107.14)));
        // Inexact divisions still compare exactly: 0.3 of 0.3 is at the limit.
        assert_eq!(at(0.1 + 0.2, 0.1 + 0.2), ("at_limit", Some(100.0)));
    }

    #[test]
    fn unknowns_and_zero_limits() {
        let t = Thresholds::default();
        assert_eq!(judge(None, Some(5.0), &t).status, Status::NoData);
        assert_eq!(judge(Some(5.0), None, &t).status, Status::NoLimit);
        assert_eq!(
            judge(Some(1.0), Some(0.0), &t),
            Judged {
                status: Status::Exceeded,
                pct: None
            }
        );
        assert_eq!(judge(Some(0.0), Some(0.0), &t).status, Status::Ok);
    }

    #[test]
    fn other_thresholds_move_the_bands() {
        let t = Thresholds {
            warning_pct: 50.0,
            exceeded_pct: 90.0,
            ..Thresholds::default()
        };
        let j = |u: f64| {
            let j = judge(Some(u), Some(1000.0), &t);
            (j.status.as_str(), j.pct)
        };
        assert_eq!(j(499.99), ("ok", Some(49.99)));
        assert_eq!(j(899.99), ("warning", Some(89.99)));
        assert_eq!(j(900.0), ("at_limit", Some(90.0)));
        assert_eq!(j(900.01), ("exceeded", Some(90.01)));
    }

    #[test]
    fn project_flag_never_contradicts_its_percentage() {
        assert_eq!(flag(79.996, 80.0), (false, 79.99));
        assert_eq!(flag(80.0, 80.0), (true, 80.0));
        assert_eq!(flag(80.004, 80.0), (true, 80.0));
        assert_eq!(flag(12.345_6, 80.0), (false, 12.35));
    }

    #[test]
    fn status_names_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert!(Status::AtLimit.needs_action());
        assert!(!Status::Ok.needs_action());
    }
}
