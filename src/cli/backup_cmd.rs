//! `orgledger backup`: a consistent, verified copy of the mirror
//! (`crate::mirror::backup`), to `--out FILE` or into `[backup] dir`.

use crate::cli::args::BackupArgs;
use crate::cli::settings::Settings;
use crate::cli::{Exit, UsageError};
use crate::mirror::backup::{self, Copied};
use crate::schedule::backups::{self, BackupOptions};
use anyhow::{Context, Result};

/// Runs the command.
pub fn run(settings: &Settings, args: &BackupArgs) -> Result<Exit> {
    let db = &settings.db;
    let copied = match &args.out {
        Some(out) => {
            let copied = backup::backup(db, out)
                .with_context(|| format!("cannot back up {} to {}", db.display(), out.display()))?;
            backups::record_backup(db, &copied);
            copied
        }
        None => backup_into_dir(settings)?,
    };
    crate::outln!(
        "{}: verified copy of {} (schema version {}, {} tables, {} rows)",
        copied.path.display(),
        db.display(),
        copied.version,
        copied.tables,
        copied.rows
    );
    Ok(Exit::Ok)
}

fn backup_into_dir(settings: &Settings) -> Result<Copied> {
    let section = &settings.config.backup;
    let dir = section.dir.clone().ok_or_else(|| {
        UsageError("backup needs --out FILE (or dir = \"FOLDER\" in the config's [backup])".into())
    })?;
    let opts = BackupOptions {
        dir,
        keep: section.keep,
    };
    let (copied, removed) = backups::backup_into(&settings.db, &opts).with_context(|| {
        format!(
            "cannot back up {} into {}",
            settings.db.display(),
            opts.dir.display()
        )
    })?;
    for path in removed {
        crate::outln!("{}: removed (beyond keep)", path.display());
    }
    Ok(copied)
}
