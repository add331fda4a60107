//! `orgledger demo`: the whole product in one command. Starts the sandbox in this
//! process on a free port, syncs once per simulated day while advancing the
//! sandbox's clock, then writes every report for the last day and prints what a
//! person would want to know first.

use crate::api::Client;
use crate::api::client::{ClientConfig, Credentials, JWT_HEADER};
use crate::api::origin;
use crate::api::secret::Secret;
use crate::cause;
use crate::cli::Exit;
use crate::cli::args::DemoArgs;
use crate::cli::settings::{Settings, command_line};
use crate::file_mode::FileMode;
use crate::report::{Format, ReportOptions, Thresholds};
use crate::sandbox::{self, FaultSpec, SandboxHandle, SandboxOptions};
use crate::sync::{self, SyncOptions};
use anyhow::{Context, Result, anyhow, bail};
use std::path::PathBuf;
use std::time::Instant;

/// Moves the sandbox clock forward through its admin route, as a test or an
/// operator would.
pub async fn advance(handle: &SandboxHandle, days: u32) -> Result<()> {
    let url = format!("{}/sandbox/advance?days={days}", handle.info.url);
    let response = origin::client_for(&url)
        .map_err(|e| anyhow!("POST {url}: {e}"))?
        .post(&url)
        .header(JWT_HEADER, &handle.info.jwt)
        .send()
        .await
        .map_err(|e| anyhow!("POST {url}: {}", cause::chain(&e.without_url())))?;
    if !response.status().is_success() {
        bail!("POST {url}: HTTP {}", response.status());
    }
    Ok(())
}

/// A client for a sandbox at `url` with its white label admin JWT (sees everything).
pub fn sandbox_client(url: &str, jwt: &str, concurrency: usize) -> Result<Client> {
    let creds = Credentials {
        api_key: None,
        jwt: Some(Secret::new(jwt)),
    };
    let mut cfg = ClientConfig::new(url, creds);
    cfg.concurrency = concurrency.max(1);
    Ok(Client::new(cfg)?)
}

/// Runs the command.
pub async fn run(settings: &Settings, args: &DemoArgs) -> Result<Exit> {
    let started = Instant::now();
    let today = chrono::Utc::now().date_naive();
    let start_date = today - chrono::Days::new(u64::from(args.days));
    let handle = sandbox::start(SandboxOptions {
        addr: "127.0.0.1:0".parse()?,
        profile: args.profile,
        seed: args.seed,
        start_date: Some(start_date),
        faults: FaultSpec::default(),
        ..SandboxOptions::default()
    })
    .await
    .context("cannot start the sandbox")?;
    // The demo keeps its own mirror so it never touches a real one.
    let db: PathBuf = if settings.db == std::path::Path::new(crate::cli::settings::DEFAULT_DB) {
        args.out.join("demo.db")
    } else {
        settings.db.clone()
    };
    FileMode::PRIVATE
        .create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    // Each demo is a new world; history from an earlier demo would mix two worlds.
    for path in std::iter::once(db.clone()).chain(crate::mirror::sidecar_paths(&db)) {
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove the old demo mirror {}", path.display()))?;
        }
    }
    let client = sandbox_client(&handle.info.url, &handle.info.jwt, 8)?;
    let opts = SyncOptions {
        db: db.clone(),
        whitelabel_org: Some(handle.info.whitelabel_organization_id),
        has_jwt: true,
        store_secrets: false,
        progress: false,
        forget_removed_after_days: None,
    };
    eprintln!(
        "sandbox at {} ({:?} world, seed {})",
        handle.info.url, args.profile, args.seed
    );
    for day in 0..=args.days {
        if day > 0 {
            advance(&handle, 1).await?;
        }
        let outcome = sync::run(&client, &opts, None).await.context("demo sync")?;
        eprintln!("day {day:>3}/{}: {}", args.days, outcome.summary_line());
    }
    handle.shutdown().await;
    let report_opts = ReportOptions {
        db: db.clone(),
        names: Vec::new(),
        as_of: today,
        formats: vec![Format::Csv, Format::Json, Format::Html],
        out_root: args.out.clone(),
        queries_dir: None,
        redact_pii: false,
        thresholds: Thresholds::default(),
        file_mode: FileMode::PRIVATE,
        store: None,
        memory_per_table: crate::report::kept::MEMORY_PER_TABLE,
    };
    let outcome = tokio::task::spawn_blocking(move || crate::render::run(&report_opts)).await??;
    // The summary ends its last line itself: one blank line before the totals.
    crate::outln!("{}", crate::render::summary(&outcome));
    crate::outln!(
        "{} report files and {} organization pages (orgs/) in {} (mirror: {}); done in {:.1} s",
        outcome.files.len(),
        outcome.pages.len(),
        outcome.dir.display(),
        db.display(),
        started.elapsed().as_secs_f64()
    );
    crate::outln!("{}", next_steps(&db));
    Ok(Exit::Ok)
}

/// The demo's last line: the commands that look into its mirror, ready to paste
/// (`status` alone would read ./orgledger.db, not the demo's).
fn next_steps(db: &std::path::Path) -> String {
    let with_db = |rest: &str| command_line([("--db", db)], rest);
    format!(
        "look inside: {}   or: {}",
        with_db("status"),
        with_db("query \"SELECT name, limit_total_storage FROM organizations LIMIT 5\"")
    )
}
