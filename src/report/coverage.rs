//! Which as-of dates the mirror can answer for: from the day of its first finished
//! sync run, up to today or the day of its last run, whichever is later (a sandbox
//! whose clock was moved forward observes days after today). A date before the
//! first sync would give reports of zeros that read like "all clear"; a date after
//! both would present old data as the future. Both are refused.

use crate::report::ReportError;
use crate::report::dates::{date_of, parse_day};
use chrono::NaiveDate;
use rusqlite::Connection;
use std::path::Path;

/// Checks `as_of` against the finished sync runs of the mirror; `today` is the
/// current UTC date.
pub fn check(
    conn: &Connection,
    db: &Path,
    as_of: NaiveDate,
    today: NaiveDate,
) -> Result<(), ReportError> {
    let (first, last): (Option<String>, Option<String>) = conn
        .query_row(
            "SELECT MIN(observed_at), MAX(observed_at) FROM sync_runs \
             WHERE status IN ('succeeded','partial')",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(|source| ReportError::Runs {
            db: db.to_path_buf(),
            cause: Box::new(source.into()),
        })?;
    let day = |text: Option<String>| text.as_deref().and_then(parse_day).and_then(date_of);
    let (Some(first), Some(last)) = (day(first), day(last)) else {
        return Err(ReportError::NoSync {
            db: db.to_path_buf(),
        });
    };
    if as_of < first {
        return Err(ReportError::BeforeFirstSync {
            db: db.to_path_buf(),
            as_of,
            first,
        });
    }
    if as_of > today.max(last) {
        return Err(ReportError::FutureAsOf {
            db: db.to_path_buf(),
            as_of,
            today,
            last,
        });
    }
    Ok(())
}
