//! `orgledger backup`: a consistent, verified copy of the mirror
//! (`crate::mirror::backup`), to `--out FILE` or into `[backup] dir`.

use crate::cli::args::BackupArgs;
use crate::cli::settings::Settings;
use crate::cli::{Exit, UsageError};
use crate::file_mode::FileMode;
use crate::mirror::backup::{self, Copied};
use crate::output::destination::Scheme;
use crate::output::{Store, StoreUrl};
use crate::schedule::backups::{self, BackupOptions};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Runs the command.
pub fn run(settings: &Settings, args: &BackupArgs) -> Result<Exit> {
    let db = &settings.db;
    let copied = match &args.out {
        Some(out) => {
            let copied = match crate::cli::dest::split(out.clone())? {
                // The store drives its uploads on a runtime of its own, which
                // cannot run on (or be dropped from) the command's async thread.
                (_, Some(url)) => {
                    std::thread::scope(|s| s.spawn(|| backup_to_store(db, &url)).join())
                        .map_err(|_| anyhow::anyhow!("the upload thread failed"))?
                        .with_context(|| format!("cannot back up {} to {url}", db.display()))?
                }
                (file, None) => backup::backup(db, &file).with_context(|| {
                    format!("cannot back up {} to {}", db.display(), file.display())
                })?,
            };
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

/// Copies and verifies the mirror beside it (where there is room for a copy, as
/// there is for `--out FILE`), then uploads the copy as the object the URL names:
/// one object, which a store shows only once its upload is complete.
fn backup_to_store(db: &Path, url: &StoreUrl) -> Result<Copied> {
    let (parent, name) = url.prefix.rsplit_once('/').unwrap_or(("", &url.prefix));
    if name.is_empty() || url.scheme == Scheme::File && parent.is_empty() {
        return Err(UsageError(format!(
            "backup --out {url} names no file: give the object's name, e.g. {}",
            url.join("orgledger.db")
        ))
        .into());
    }
    let folder = StoreUrl {
        prefix: parent.to_string(),
        ..url.clone()
    };
    let store = Store::open(&folder, FileMode::PRIVATE)?;
    let beside = db.parent().filter(|p| !p.as_os_str().is_empty());
    let staging = tempfile::Builder::new()
        .prefix(".orgledger-backup-")
        .tempdir_in(beside.unwrap_or(Path::new(".")))
        .context("cannot make a folder for the copy beside the mirror")?;
    let mut copied = backup::backup(db, &staging.path().join(name))?;
    store.publish(staging.path(), name, &[], &[])?;
    copied.path = PathBuf::from(url.to_string());
    Ok(copied)
}
