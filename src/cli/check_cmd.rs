//! `orgledger check`: is the mirror sound? One line per finding on stdout, exit 1
//! when there is any; a short summary and exit 0 when there is none. The outcome is
//! noted in the mirror for `status`.

use crate::cli::Exit;
use crate::cli::args::CheckArgs;
use crate::cli::settings::Settings;
use crate::mirror::{self, check, maintenance};
use anyhow::{Context, Result};

/// Runs the command.
pub fn run(settings: &Settings, _args: &CheckArgs) -> Result<Exit> {
    if mirror::path::inspect(&settings.db)? == mirror::path::Found::Nothing {
        return Err(mirror::MirrorError::Missing(settings.db.clone()).into());
    }
    // Opening read-write upgrades an older mirror in place, as `status` does.
    let conn = mirror::open_rw(&settings.db)?;
    let report = check::run(&conn, &settings.db)
        .with_context(|| format!("cannot check the mirror {}", settings.db.display()))?;
    let outcome = match report.findings.len() {
        0 => "sound".to_string(),
        n => format!("{n} findings"),
    };
    drop(conn);
    maintenance::note(&settings.db, maintenance::Kind::Check, &outcome, None);
    for line in &report.findings {
        crate::outln!("{line}");
    }
    if report.findings.is_empty() {
        crate::outln!(
            "{}: sound (integrity and foreign keys ok; {} current rows hashed, {} history rows in order)",
            settings.db.display(),
            report.rows_hashed,
            report.history_rows
        );
        Ok(Exit::Ok)
    } else {
        eprintln!("error: {}: {outcome} (above)", settings.db.display());
        Ok(Exit::Failure)
    }
}
