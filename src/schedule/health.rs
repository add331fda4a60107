//! The daemon's health: fine while the last sync that stored data is at most a few
//! sync periods old and the mirror opens.
//!
//! Age is counted from the later of the mirror's last such sync and the daemon's
//! start, so a daemon that was just (re)started has its few periods to sync before
//! it reports itself unhealthy: used as a liveness probe, `/healthz` does not make
//! an orchestrator restart it in a loop while the first scheduled sync is hours away.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// What `/healthz` checks.
pub struct Health {
    db: PathBuf,
    /// Longest acceptable age of the last sync that stored data.
    limit: Duration,
    /// The limit in sync periods (for the message).
    periods: u32,
    /// The later of the daemon's start and the last sync that stored data.
    since: Mutex<SystemTime>,
}

impl Health {
    /// Health of the mirror `db`, with a sync due every `period`; unhealthy after
    /// `periods` periods without a sync that stored data.
    pub fn new(db: PathBuf, period: Duration, periods: u32) -> Health {
        Health {
            db,
            limit: period.saturating_mul(periods.max(1)),
            periods: periods.max(1),
            since: Mutex::new(SystemTime::now()),
        }
    }

    /// A sync stored data just now.
    pub fn synced(&self) {
        if let Ok(mut since) = self.since.lock() {
            *since = SystemTime::now();
        }
    }

    /// Ok with a short status, or the reason the daemon is unhealthy.
    pub fn check(&self) -> Result<String, String> {
        let since = self
            .since
            .lock()
            .map(|s| *s)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let age = SystemTime::now()
            .duration_since(since)
            .unwrap_or(Duration::ZERO);
        crate::mirror::open_ro(&self.db)
            .map_err(|e| format!("the mirror cannot be opened: {e}"))?;
        if age > self.limit {
            return Err(format!(
                "no sync has stored data for {} s, more than {} sync periods ({} s)",
                age.as_secs(),
                self.periods,
                self.limit.as_secs()
            ));
        }
        Ok(format!(
            "ok: last sync that stored data (or the daemon's start) {} s ago",
            age.as_secs()
        ))
    }
}

/// When the mirror's last sync that stored data finished, if it has one (the
/// metrics start from it).
pub fn last_success(db: &std::path::Path) -> Option<SystemTime> {
    let conn = crate::mirror::open_ro(db).ok()?;
    let text: Option<String> = conn
        .query_row(
            "SELECT MAX(finished_at) FROM sync_runs WHERE status IN ('succeeded','partial')",
            [],
            |r| r.get(0),
        )
        .ok()?;
    let at = chrono::DateTime::parse_from_rfc3339(&text?).ok()?;
    let millis = u64::try_from(at.timestamp_millis()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_mirror_and_an_old_sync_are_unhealthy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("m.db");
        let health = Health::new(db.clone(), Duration::from_secs(60), 3);
        let why = health.check().expect_err("no mirror");
        assert!(why.contains("cannot be opened"), "{why}");
        crate::mirror::open_rw(&db).expect("create mirror");
        assert!(health.check().is_ok());
        let stale = Health::new(db, Duration::ZERO, 2);
        std::thread::sleep(Duration::from_millis(20));
        let why = stale.check().expect_err("stale");
        assert!(why.contains("more than 2 sync periods"), "{why}");
    }
}
