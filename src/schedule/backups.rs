//! The daemon's backups (`[backup]`): after each sync that stored data, a verified
//! copy of the mirror (`crate::mirror::backup`) in one folder, named by its UTC time
//! so names sort by age; past `keep` copies, the oldest are removed, and only once
//! the new one is verified, so a failing backup never costs an older one.

use crate::mirror::backup::{self, Copied};
use crate::mirror::{MirrorError, maintenance};
use std::path::{Path, PathBuf};

/// Where the daemon keeps its backups and how many.
#[derive(Debug, Clone)]
pub struct BackupOptions {
    /// The folder.
    pub dir: PathBuf,
    /// Backups kept (None: all).
    pub keep: Option<usize>,
}

/// What the daemon's backups are called: `orgledger-<UTC time>.db`.
const PREFIX: &str = "orgledger-";
const SUFFIX: &str = ".db";

/// Backs the mirror at `db` up into the folder, then removes the oldest copies
/// beyond `keep`. Returns the copy and the copies removed.
pub fn backup_into(db: &Path, opts: &BackupOptions) -> Result<(Copied, Vec<PathBuf>), MirrorError> {
    create_private_dir(&opts.dir)?;
    let name = format!(
        "{PREFIX}{}{SUFFIX}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
    );
    let copied = backup::backup(db, &opts.dir.join(name))?;
    record_backup(db, &copied);
    let removed = match opts.keep {
        Some(keep) => prune(&opts.dir, keep)?,
        None => Vec::new(),
    };
    Ok((copied, removed))
}

/// Notes the backup in the mirror for `status`.
pub fn record_backup(db: &Path, copied: &Copied) {
    let detail = copied.path.display().to_string();
    maintenance::note(db, maintenance::Kind::Backup, "verified", Some(&detail));
}

/// Creates the folder with mode 0700 (the copies hold personal data).
fn create_private_dir(dir: &Path) -> Result<(), MirrorError> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| MirrorError::Io(dir.to_path_buf(), e))
}

/// Removes the oldest backups of the folder beyond the newest `keep`.
fn prune(dir: &Path, keep: usize) -> Result<Vec<PathBuf>, MirrorError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| MirrorError::Io(dir.to_path_buf(), e))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(PREFIX) && name.ends_with(SUFFIX))
        .collect();
    names.sort();
    let excess = names.len().saturating_sub(keep.max(1));
    let mut removed = Vec::new();
    for name in names.into_iter().take(excess) {
        let path = dir.join(name);
        std::fs::remove_file(&path).map_err(|e| MirrorError::Io(path.clone(), e))?;
        removed.push(path);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_the_newest_and_leaves_other_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "orgledger-20260101T000000.000Z.db",
            "orgledger-20260102T000000.000Z.db",
            "orgledger-20260103T000000.000Z.db",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), "x").expect("write");
        }
        let removed = prune(dir.path(), 2).expect("prune");
        assert_eq!(
            removed,
            vec![dir.path().join("orgledger-20260101T000000.000Z.db")]
        );
        assert!(dir.path().join("notes.txt").exists());
        assert!(
            dir.path()
                .join("orgledger-20260103T000000.000Z.db")
                .exists()
        );
    }
}
