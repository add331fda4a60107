//! `orgledger export`: the mirror as Parquet files (offline).

use crate::cli::Exit;
use crate::cli::args::ExportArgs;
use crate::cli::settings::Settings;
use crate::export::{self, ExportOptions, Since};
use anyhow::Result;

/// Default export folder.
pub const DEFAULT_OUT: &str = "export";

/// Export options from flags and config.
pub fn options(settings: &Settings, args: &ExportArgs) -> Result<ExportOptions> {
    let cfg = &settings.config.export;
    let (out, store) = crate::cli::dest::resolve(args.out.as_ref(), cfg.out.as_ref(), DEFAULT_OUT)?;
    let incremental = cfg.incremental.unwrap_or(false).then_some(Since::Previous);
    let since = args.since.or(if args.as_of.is_none() && !args.history {
        incremental
    } else {
        None
    });
    Ok(ExportOptions {
        db: settings.db.clone(),
        out,
        store,
        since,
        as_of: args.as_of,
        tables: if args.tables.is_empty() {
            cfg.tables.clone().unwrap_or_default()
        } else {
            args.tables.clone()
        },
        history: since.is_none() && (args.history || cfg.history.unwrap_or(false)),
        file_mode: settings.file_mode(args.file_mode),
    })
}

/// Runs the command.
pub fn run(settings: &Settings, args: &ExportArgs) -> Result<Exit> {
    let opts = options(settings, args)?;
    let started = std::time::Instant::now();
    let outcome = export::run(&opts)?;
    for file in &outcome.files {
        crate::outln!("{:>9} rows  {}/{}", file.rows, outcome.location, file.file);
    }
    let what = if opts.since.is_some() {
        "history up to sync run"
    } else {
        "sync run"
    };
    crate::outln!(
        "{} rows in {} files ({what} {}) in {}, {:.1} s",
        outcome.rows(),
        outcome.files.len(),
        outcome
            .run_id
            .map_or("none".to_string(), |id| id.to_string()),
        outcome.location,
        started.elapsed().as_secs_f64()
    );
    if let Some(published) = &outcome.published {
        crate::outln!("{published}");
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(config: &str) -> Settings {
        let cli = crate::cli::args::Cli::try_parse_from(["orgledger", "export"]).expect("cli");
        let mut settings = Settings::from_cli(&cli).expect("settings");
        settings.config = toml::from_str(config).expect("config");
        settings
    }

    #[test]
    fn config_out_may_be_a_store_and_incremental_continues_after_the_last_run() {
        let s = settings("[export]\nout = \"s3://bucket/ledger\"\nincremental = true\n");
        let opts = options(&s, &ExportArgs::default()).expect("options");
        let url = opts.store.as_ref().map(ToString::to_string);
        assert_eq!(url.as_deref(), Some("s3://bucket/ledger"));
        assert_eq!(opts.since, Some(Since::Previous));
        // The state (or every version) when asked for explicitly.
        let history = ExportArgs {
            history: true,
            ..ExportArgs::default()
        };
        let opts = options(&s, &history).expect("options");
        assert_eq!((opts.since, opts.history), (None, true));
        let s = settings("[export]\nout = \"ftp://host/x\"\n");
        let err = options(&s, &ExportArgs::default()).expect_err("unknown scheme");
        assert!(
            err.downcast_ref::<crate::cli::UsageError>().is_some(),
            "{err}"
        );
    }
}
