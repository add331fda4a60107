//! Report retention: report folders are named by their as-of date; folders older
//! than the kept window are deleted. Anything not named like a date is left alone.

use chrono::NaiveDate;
use std::path::Path;

/// Deletes `<out>/<YYYY-MM-DD>` folders older than `keep_days` before `today`.
/// Returns the folders removed.
pub fn prune(out: &Path, today: NaiveDate, keep_days: u32) -> std::io::Result<Vec<String>> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(removed);
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(day) = NaiveDate::parse_from_str(&name, "%Y-%m-%d") else {
            continue;
        };
        if entry.file_type()?.is_dir() && (today - day).num_days() >= i64::from(keep_days) {
            std::fs::remove_dir_all(entry.path())?;
            removed.push(name);
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_recent_days_and_foreign_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["2026-01-01", "2026-01-09", "2026-01-10", "notes"] {
            std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        let today = NaiveDate::from_ymd_opt(2026, 1, 10).expect("date");
        let removed = prune(dir.path(), today, 2).expect("prune");
        assert_eq!(removed, vec!["2026-01-01".to_string()]);
        assert!(dir.path().join("2026-01-09").exists());
        assert!(dir.path().join("notes").exists());
    }
}
