//! One sync at a time per mirror.
//!
//! SQLite would serialise two writers anyway, but two interleaved syncs would each
//! mark the other's fresh rows as changed and each other's run as aborted. An OS file
//! lock (released by the kernel when the process dies, even by kill -9) makes the
//! second sync refuse at once with a clear message instead.

use crate::mirror::MirrorError;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// Held for the whole sync; dropping it releases the lock.
#[derive(Debug)]
pub struct SyncLock {
    _file: File,
}

/// Takes the sync lock of the mirror at `db`, or says who holds it.
pub fn acquire(db: &Path) -> Result<SyncLock, MirrorError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = PathBuf::from(format!("{}.lock", db.display()));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| MirrorError::Io(path.clone(), e))?;
    match file.try_lock() {
        Ok(()) => Ok(SyncLock { _file: file }),
        Err(TryLockError::WouldBlock) => Err(MirrorError::Busy(db.to_path_buf())),
        Err(TryLockError::Error(e)) => Err(MirrorError::Io(path, e)),
    }
}

/// Whether a process holds the sync lock of the mirror at `db` now. The lock is
/// taken only for the instant of the test and released at once; a sync that
/// starts in that instant tries again (`sync::acquire_lock`), so a probe never
/// makes it refuse.
pub fn held(db: &Path) -> Result<bool, MirrorError> {
    match acquire(db) {
        Ok(lock) => {
            drop(lock);
            Ok(false)
        }
        Err(MirrorError::Busy(_)) => Ok(true),
        Err(e) => Err(e),
    }
}
