//! The two ends of a change window: `WHEN` as the user writes it, and the point of
//! the mirror's history it stands for.
//!
//! A point is a (time, run) pair: a change belongs to the state at a point when its
//! (observed_at, run_id) is not after it. A date or timestamp takes every run that
//! observed up to that time; `run:N` takes run N and the runs before it that observed
//! the same second.

use crate::mirror::MirrorError;
use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::{Connection, OptionalExtension};

/// A point of the mirror's history as written on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// `YYYY-MM-DD`: the end of that day, UTC (as `--as-of` reads it).
    Day(NaiveDate),
    /// An RFC 3339 timestamp.
    At(DateTime<Utc>),
    /// `run:N`: the state after sync run N.
    Run(i64),
}

impl std::str::FromStr for When {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("run:") {
            return n
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .map(When::Run)
                .ok_or_else(|| {
                    format!("`{s}`: a run is `run:N` with N a sync run id (see `orgledger status`)")
                });
        }
        if crate::calendar::looks_like_day(s) {
            return crate::calendar::parse_calendar_day(s).map(When::Day);
        }
        DateTime::parse_from_rfc3339(s)
            .map(|t| When::At(t.with_timezone(&Utc)))
            .map_err(|_| {
                format!(
                    "`{s}` is not a point in time; write YYYY-MM-DD (the end of that day, UTC), \
                     an RFC 3339 timestamp such as 2026-06-01T12:00:00Z, or run:N"
                )
            })
    }
}

/// A resolved point: changes with (observed_at, run_id) ≤ (`at`, `run`) belong to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Point {
    /// Mirror timestamp text.
    pub at: String,
    /// Run id; `i64::MAX` takes every run that observed at `at`.
    pub run: i64,
}

impl Point {
    /// The end of `day`, UTC: mirror timestamps have millisecond precision, so its
    /// last millisecond.
    pub fn end_of_day(day: NaiveDate) -> Point {
        let end = day
            .and_hms_milli_opt(23, 59, 59, 999)
            .map(|t| t.and_utc())
            .unwrap_or_default();
        Point::time(end)
    }

    /// Every run up to and including the time `t`.
    pub fn time(t: DateTime<Utc>) -> Point {
        Point {
            at: crate::mirror::time_text(t),
            run: i64::MAX,
        }
    }
}

/// Why a point could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum WhenError {
    /// `run:N` names a run the mirror does not have, or one that never observed the
    /// service (it failed before its first answer).
    #[error(
        "run:{run}: the mirror has no sync run {run} that observed the service (see `orgledger status`)"
    )]
    UnknownRun {
        /// The run asked for.
        run: i64,
    },
    /// Reading `sync_runs` failed.
    #[error(transparent)]
    Mirror(#[from] MirrorError),
}

impl When {
    /// The calendar day (UTC) of a date or a timestamp; `None` for a run, which
    /// the mirror checks itself.
    pub fn day(self) -> Option<NaiveDate> {
        match self {
            When::Day(day) => Some(day),
            When::At(t) => Some(t.date_naive()),
            When::Run(_) => None,
        }
    }

    /// The point of history this stands for.
    pub fn resolve(self, conn: &Connection) -> Result<Point, WhenError> {
        match self {
            When::Day(day) => Ok(Point::end_of_day(day)),
            When::At(t) => Ok(Point::time(t)),
            When::Run(run) => {
                let at: Option<String> = conn
                    .query_row(
                        "SELECT observed_at FROM sync_runs WHERE id = ?1 AND observed_at IS NOT NULL",
                        [run],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(MirrorError::from)?;
                at.map(|at| Point { at, run })
                    .ok_or(WhenError::UnknownRun { run })
            }
        }
    }
}

/// The default end of a window: now, or the last run when its time is later. A
/// run's time is the service's clock, which may be ahead of this machine's: a
/// window that ends now would then end before the runs it should reach.
pub fn latest(conn: &Connection, now: DateTime<Utc>) -> Result<Point, MirrorError> {
    let now = Point::time(now);
    let last: Option<String> = conn.query_row(
        "SELECT MAX(observed_at) FROM sync_runs WHERE observed_at IS NOT NULL",
        [],
        |r| r.get(0),
    )?;
    Ok(match last {
        Some(at) if at > now.at => Point { at, run: i64::MAX },
        _ => now,
    })
}

/// The state the mirror starts from: after the first run that stored organizations.
/// Everything that run stored was already there, not added, so a window never
/// reaches before it.
pub fn baseline(conn: &Connection) -> Result<Option<Point>, MirrorError> {
    Ok(conn
        .query_row(
            "SELECT r.observed_at, r.id FROM sync_runs r \
              WHERE r.observed_at IS NOT NULL AND r.id = ( \
                SELECT MIN(run_id) FROM ( \
                  SELECT MIN(run_id) AS run_id FROM main.organizations \
                  UNION ALL SELECT MIN(run_id) FROM main.organizations_history))",
            [],
            |r| {
                Ok(Point {
                    at: r.get(0)?,
                    run: r.get(1)?,
                })
            },
        )
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_reads_dates_timestamps_and_runs() {
        assert_eq!(
            "2026-06-03".parse::<When>(),
            Ok(When::Day(
                NaiveDate::from_ymd_opt(2026, 6, 3).unwrap_or_default()
            ))
        );
        let at: When = "2026-06-03T10:00:00+02:00".parse().unwrap_or(When::Run(0));
        assert_eq!(
            at,
            When::At("2026-06-03T08:00:00Z".parse().unwrap_or_default())
        );
        assert_eq!("run:12".parse::<When>(), Ok(When::Run(12)));
        for bad in ["run:", "run:-1", "yesterday", "2026-13-01", "06/03/2026"] {
            assert!(bad.parse::<When>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_day_ends_at_its_last_millisecond() {
        let conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        let day = When::Day(NaiveDate::from_ymd_opt(2026, 2, 28).unwrap_or_default());
        let point = day.resolve(&conn).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(point.at, "2026-02-28T23:59:59.999Z");
        assert_eq!(point.run, i64::MAX);
    }
}
