//! `orgledger restore FILE`: puts a backup in the mirror's place
//! (`crate::mirror::backup::restore`), never while a sync runs.

use crate::cli::Exit;
use crate::cli::args::RestoreArgs;
use crate::cli::settings::Settings;
use crate::mirror::{backup, lock};
use anyhow::{Context, Result};

/// Runs the command.
pub fn run(settings: &Settings, args: &RestoreArgs) -> Result<Exit> {
    let db = &settings.db;
    // Held until the new mirror is in place: no sync starts on a half-swapped mirror.
    let _lock = lock::acquire(db)?;
    let (copied, kept) = backup::restore(&args.file, db)
        .with_context(|| format!("cannot restore {} as {}", args.file.display(), db.display()))?;
    crate::outln!(
        "{}: restored from {} (schema version {}, {} rows)",
        db.display(),
        args.file.display(),
        copied.version,
        copied.rows
    );
    if let Some(kept) = kept {
        crate::outln!("the replaced mirror is kept as {}", kept.display());
    }
    Ok(Exit::Ok)
}
