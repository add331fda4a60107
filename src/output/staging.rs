//! The folder a set of files waits in before it goes to an object store: beside the
//! mirror (`<mirror>.staging/<pid>-<random>/`, both folders 0700), not in the shared
//! temporary folder. It goes when the run ends; a run killed before that leaves its
//! folder, and the next run that stages beside the same mirror removes every folder
//! whose process is gone: no crash leaves report or export data behind past the
//! next run, and it stays where the mirror's own protection is.

use crate::file_mode::FileMode;
use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One run's staging folder, removed when dropped.
pub struct Staging {
    dir: tempfile::TempDir,
}

impl Staging {
    /// A new folder beside the mirror `db`, after removing the folders of runs
    /// that ended without removing theirs.
    pub fn beside(db: &Path) -> std::io::Result<Staging> {
        let parent = root(db);
        FileMode::PRIVATE.create_dir_all(&parent)?;
        clear_dead(&parent);
        let prefix = format!("{}-", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        builder.permissions(Permissions::from_mode(FileMode::PRIVATE.dir_bits()));
        let dir = builder.tempdir_in(&parent)?;
        Ok(Staging { dir })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `<mirror>.staging`, in the mirror's folder.
pub fn root(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".staging");
    db.with_file_name(name)
}

/// Removes the folders of processes that no longer run (best effort: one that
/// cannot be removed now is tried again by the next run).
fn clear_dead(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.split('-').next()?.parse::<u32>().ok());
        if pid.is_some_and(|pid| !running(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` runs; where that cannot be told, it is taken to run (its
/// folder stays).
fn running(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_clears_the_folders_of_runs_that_died_and_removes_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("mirror.db");
        let parent = root(&db);
        std::fs::create_dir_all(parent.join("4000000000-dead")).expect("a dead run's folder");
        std::fs::write(parent.join("4000000000-dead/entitlements.csv"), "x").expect("a file");
        let live = parent.join(format!("{}-alive", std::process::id()));
        std::fs::create_dir_all(&live).expect("a running process's folder");
        let staging = Staging::beside(&db).expect("staging");
        assert!(
            !parent.join("4000000000-dead").exists(),
            "a dead run's folder is gone"
        );
        assert!(live.exists(), "a running process's folder stays");
        let own = staging.path().to_path_buf();
        assert!(own.starts_with(&parent) && own.is_dir());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&own)
            .expect("its folder")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(staging);
        assert!(!own.exists(), "its own folder goes when the run ends");
    }
}
