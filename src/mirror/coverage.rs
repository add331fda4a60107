//! Which as-of dates the mirror can answer for: from the day of its first finished
//! sync run, up to today or the day of its last run, whichever is later (a sandbox
//! whose clock was moved forward observes days after today). A date before the
//! first sync would give reports of zeros that read like "all clear"; a date after
//! both would present old data as the future. Both are refused.

use crate::calendar::{date_of, parse_day};
use chrono::NaiveDate;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// An as-of date the mirror cannot answer for. Reports, `export`, `query` and
/// `changes` all refuse it with these words.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    /// The mirror has no finished sync run: there is nothing to report.
    #[error("the mirror {} has no finished sync run yet; run `orgledger sync` first", .db.display())]
    NoSync {
        /// The mirror file.
        db: PathBuf,
    },
    /// The as-of date is before the first finished sync: the mirror knows nothing
    /// of that day (a report would show zeros that look like "all clear").
    #[error(
        "no data as of {as_of}: the mirror {} holds data from {first} on (its first finished sync); \
         choose an as-of date on or after {first}", .db.display()
    )]
    BeforeFirstSync {
        /// The mirror file.
        db: PathBuf,
        /// The as-of date asked for.
        as_of: NaiveDate,
        /// The day of the first finished sync.
        first: NaiveDate,
    },
    /// The as-of date is after today and after the last day the mirror observed.
    #[error(
        "the as-of date {as_of} is in the future: today is {today} (UTC) and the mirror {} \
         was last synced on {last}; a report shows a day that has passed or is under way", .db.display()
    )]
    FutureAsOf {
        /// The mirror file.
        db: PathBuf,
        /// The as-of date asked for.
        as_of: NaiveDate,
        /// Today's date (UTC).
        today: NaiveDate,
        /// The day of the last finished sync.
        last: NaiveDate,
    },
    /// The sync runs could not be read.
    #[error("cannot read the sync runs of {}: {}", .db.display(), crate::cause::sqlite(.cause))]
    Runs {
        /// The mirror file.
        db: PathBuf,
        /// SQLite's reason.
        cause: rusqlite::Error,
    },
}

/// The days of the mirror's first and last finished sync runs (None before any).
fn days(conn: &Connection) -> rusqlite::Result<Option<(NaiveDate, NaiveDate)>> {
    let (first, last): (Option<String>, Option<String>) = conn.query_row(
        "SELECT MIN(observed_at), MAX(observed_at) FROM main.sync_runs \
         WHERE status IN ('succeeded','partial')",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let day = |text: Option<String>| text.as_deref().and_then(parse_day).and_then(date_of);
    Ok(day(first).zip(day(last)))
}

/// The first day the mirror can answer for (the day of its first finished sync).
pub fn first_day(conn: &Connection) -> rusqlite::Result<Option<NaiveDate>> {
    Ok(days(conn)?.map(|(first, _)| first))
}

impl CoverageError {
    /// Whether the command line asked for the date (a usage error, exit 2): one
    /// before the first sync or in the future, not a mirror without a sync.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            CoverageError::BeforeFirstSync { .. } | CoverageError::FutureAsOf { .. }
        )
    }
}

/// Checks `as_of` against the finished sync runs of the mirror; `today` is the
/// current UTC date.
pub fn check(
    conn: &Connection,
    db: &Path,
    as_of: NaiveDate,
    today: NaiveDate,
) -> Result<(), CoverageError> {
    let span = days(conn).map_err(|cause| CoverageError::Runs {
        db: db.to_path_buf(),
        cause,
    })?;
    let Some((first, last)) = span else {
        return Err(CoverageError::NoSync {
            db: db.to_path_buf(),
        });
    };
    if as_of < first {
        return Err(CoverageError::BeforeFirstSync {
            db: db.to_path_buf(),
            as_of,
            first,
        });
    }
    if as_of > today.max(last) {
        return Err(CoverageError::FutureAsOf {
            db: db.to_path_buf(),
            as_of,
            today,
            last,
        });
    }
    Ok(())
}
