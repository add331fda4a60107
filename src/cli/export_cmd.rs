//! `orgledger export`: the mirror as Parquet files (offline).

use crate::cli::Exit;
use crate::cli::args::ExportArgs;
use crate::cli::settings::Settings;
use crate::export::{self, ExportOptions};
use anyhow::Result;
use std::path::PathBuf;

/// Default export folder.
pub const DEFAULT_OUT: &str = "export";

/// Export options from flags and config.
pub fn options(settings: &Settings, args: &ExportArgs) -> ExportOptions {
    let cfg = &settings.config.export;
    ExportOptions {
        db: settings.db.clone(),
        out: args
            .out
            .clone()
            .or_else(|| cfg.out.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OUT)),
        as_of: args.as_of,
        tables: if args.tables.is_empty() {
            cfg.tables.clone().unwrap_or_default()
        } else {
            args.tables.clone()
        },
        history: args.history || cfg.history.unwrap_or(false),
        file_mode: settings.file_mode(args.file_mode),
    }
}

/// Runs the command.
pub fn run(settings: &Settings, args: &ExportArgs) -> Result<Exit> {
    let opts = options(settings, args);
    let started = std::time::Instant::now();
    let outcome = export::run(&opts)?;
    for file in &outcome.files {
        crate::outln!(
            "{:>9} rows  {}",
            file.rows,
            outcome.dir.join(&file.file).display()
        );
    }
    crate::outln!(
        "{} rows in {} files (sync run {}) in {}, {:.1} s",
        outcome.rows(),
        outcome.files.len(),
        outcome
            .run_id
            .map_or("none".to_string(), |id| id.to_string()),
        outcome.dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(Exit::Ok)
}
