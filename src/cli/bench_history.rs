//! `orgledger bench history`: what a day of syncs costs on disk. After each daily
//! sync of a world moved on by time travel, the mirror's bytes in use (its B-tree
//! pages, so free pages an earlier day left are not counted) and what each table,
//! with its indexes, added since the day before.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes in use per table (indexes counted with their table), from SQLite's
/// `dbstat` view.
fn bytes_by_table(db: &Path) -> Result<BTreeMap<String, i64>> {
    let conn = crate::mirror::open_ro(db)?;
    let mut stmt = conn.prepare(
        "SELECT COALESCE(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d \
         LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1",
    )?;
    let sizes = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot measure {}", db.display()))?;
    Ok(sizes)
}

/// The sizes after the first sync and after each day since.
pub struct Growth {
    first: BTreeMap<String, i64>,
    last: BTreeMap<String, i64>,
    days: u32,
}

fn total(sizes: &BTreeMap<String, i64>) -> i64 {
    sizes.values().sum()
}

fn kb(bytes: i64) -> f64 {
    bytes as f64 / 1e3
}

/// Per table, what `now` holds beyond `before`, largest first, tables that did not
/// grow left out.
fn added(before: &BTreeMap<String, i64>, now: &BTreeMap<String, i64>) -> Vec<(String, i64)> {
    let mut grown: Vec<(String, i64)> = now
        .iter()
        .map(|(t, n)| (t.clone(), n - before.get(t).copied().unwrap_or(0)))
        .filter(|(_, d)| *d != 0)
        .collect();
    grown.sort_by_key(|(t, d)| (-d, t.clone()));
    grown
}

impl Growth {
    /// Measures the mirror after the first sync.
    pub fn start(db: &Path) -> Result<Self> {
        let first = bytes_by_table(db)?;
        crate::outln!(
            "after the first sync: {:.1} MB in use",
            kb(total(&first)) / 1e3
        );
        Ok(Growth {
            last: first.clone(),
            first,
            days: 0,
        })
    }

    /// Measures the mirror after day `day`'s sync and prints what it added.
    pub fn record(&mut self, db: &Path, day: u32) -> Result<()> {
        let now = bytes_by_table(db)?;
        let top: Vec<String> = added(&self.last, &now)
            .into_iter()
            .take(4)
            .map(|(t, d)| format!("{t} {:+.1} kB", kb(d)))
            .collect();
        crate::outln!(
            "day {day:>3}: {:.2} MB in use ({:+.1} kB: {})",
            kb(total(&now)) / 1e3,
            kb(total(&now) - total(&self.last)),
            top.join(", ")
        );
        self.last = now;
        self.days = day;
        Ok(())
    }

    /// Prints and returns the averages: bytes added per day, in all and by table.
    pub fn summary(&self) -> Result<serde_json::Value> {
        let days = i64::from(self.days.max(1));
        let per_day = (total(&self.last) - total(&self.first)) / days;
        let by_table: serde_json::Map<String, serde_json::Value> = added(&self.first, &self.last)
            .into_iter()
            .map(|(t, d)| (t, serde_json::Value::from(d / days)))
            .collect();
        crate::outln!(
            "history: {:.1} MB after the first sync, {:.1} MB after {} days: {:.1} kB a day",
            kb(total(&self.first)) / 1e3,
            kb(total(&self.last)) / 1e3,
            self.days,
            kb(per_day)
        );
        Ok(serde_json::json!({
            "days": self.days,
            "first_sync_bytes": total(&self.first),
            "final_bytes": total(&self.last),
            "bytes_per_day": per_day,
            "bytes_per_day_by_table": by_table,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lists_the_tables_that_grew_largest_first() {
        let before = BTreeMap::from([("a".to_string(), 10), ("b".to_string(), 10)]);
        let now = BTreeMap::from([
            ("a".to_string(), 10),
            ("b".to_string(), 30),
            ("c".to_string(), 50),
        ]);
        assert_eq!(
            added(&before, &now),
            vec![("c".to_string(), 50), ("b".to_string(), 20)]
        );
    }
}
