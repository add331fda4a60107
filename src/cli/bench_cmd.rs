//! `orgledger bench`: the speed and memory bars of the design, measured.
//!
//! The sandbox runs as a separate process (so its memory and CPU are not counted
//! as the worker's). Sync: a full sync into a new mirror, then a plain parallel
//! download of exactly the URLs that sync fetched, at the same concurrency (the
//! baseline), then a re-sync of the unchanged world (must write no row). Report:
//! every built-in report over that mirror. Export: the Parquet export of that mirror.
//! Alerts: one evaluation from the mirror, one from a report job's tables. Changes
//! (opt-in): `changes` over 30 days of daily syncs of a world moved by time travel. Faults
//! (opt-in, `bench_faults.rs`): syncs against a service that answers 429. Figures go
//! to stdout, one per line, and as one JSON object at the end.

use crate::api::client::JWT_HEADER;
use crate::api::operation as op;
use crate::api::origin;
use crate::cli::Exit;
use crate::cli::args::{BenchArgs, BenchTarget};
use crate::report::{self, Format, ReportOptions, Thresholds};
use crate::sync::{self, SyncOptions};
use anyhow::{Context, Result, anyhow, bail};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

/// The sandbox child process; killed when dropped.
pub(super) struct SandboxProcess {
    child: Child,
    pub(super) url: String,
    pub(super) jwt: String,
    pub(super) whitelabel_org: i64,
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_sandbox(args: &BenchArgs) -> Result<SandboxProcess> {
    spawn_sandbox_with(args, &[])
}

/// The sandbox of `args` (profile, latency) answering with `faults` too
/// (`429=0.02`, `rps=100`).
pub(super) fn spawn_sandbox_with(args: &BenchArgs, faults: &[String]) -> Result<SandboxProcess> {
    let exe = std::env::current_exe().context("cannot find the orgledger executable")?;
    let profile = format!("{:?}", args.profile).to_lowercase();
    let mut command = Command::new(exe);
    let seed = args.seed.to_string();
    command.args(["-q", "sandbox", "--profile", &profile, "--seed", &seed]);
    let faults: Vec<String> = (args.latency_ms > 0)
        .then(|| format!("latency={}", args.latency_ms))
        .into_iter()
        .chain(faults.iter().cloned())
        .collect();
    if !faults.is_empty() {
        command.args(["--faults", &faults.join(",")]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the sandbox process")?;
    let stdout = child.stdout.take().context("sandbox stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    let info: serde_json::Value =
        serde_json::from_str(&line).with_context(|| format!("sandbox said {line:?}"))?;
    let text = |k: &str| info.get(k).and_then(|v| v.as_str()).map(str::to_string);
    Ok(SandboxProcess {
        url: text("url").context("sandbox url")?,
        jwt: text("jwt").context("sandbox jwt")?,
        whitelabel_org: info
            .get("whitelabelOrganizationId")
            .and_then(|v| v.as_i64())
            .context("sandbox whitelabelOrganizationId")?,
        child,
    })
}

/// CPU seconds (user + system) of this process so far. USER_HZ is 100 on Linux.
pub(crate) fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces) start after ") ".
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map_or(vec![], |(_, rest)| rest.split(' ').collect());
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (tick(11) + tick(12)) / 100.0
}

/// Peak resident memory of this process in MB (VmHWM).
pub(crate) fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Resets the peak-RSS counter so the next reading covers only what follows.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The URLs a sync fetched, rebuilt from what it stored.
fn synced_urls(db: &std::path::Path, wl: i64) -> Result<Vec<String>> {
    let conn = crate::mirror::open_ro(db)?;
    let ids = |sql: &str| -> Result<Vec<i64>> {
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<Vec<i64>, _>>()?)
    };
    let mut urls = vec![
        op::ORGANIZATIONS_PATH.to_string(),
        op::PROJECTS_PATH.to_string(),
        op::USER_PROJECTS_PATH.to_string(),
    ];
    urls.extend(
        ids("SELECT id FROM organizations")?
            .into_iter()
            .map(op::organization_path),
    );
    for user in ids("SELECT DISTINCT user_id FROM organization_members")? {
        urls.push(op::whitelabel_user_path(wl, user));
        urls.push(op::user_organizations_path(user));
    }
    urls.extend(
        ids("SELECT project_id FROM project_info")?
            .into_iter()
            .map(|p| op::project_info_path(p, None)),
    );
    Ok(urls)
}

/// Fetches every URL at `concurrency`, reading and discarding bodies. Returns
/// (seconds, bytes).
async fn baseline(
    base: &str,
    jwt: &str,
    urls: Vec<String>,
    concurrency: usize,
) -> Result<(f64, u64)> {
    let http =
        origin::client_builder(&origin::parse_http_url(base).map_err(|e| anyhow!("{base} {e}"))?)
            .pool_max_idle_per_host(concurrency)
            .build()?;
    let queue = Arc::new(tokio::sync::Mutex::new(urls));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (http, queue, base, jwt) = (
            http.clone(),
            queue.clone(),
            base.to_string(),
            jwt.to_string(),
        );
        workers.spawn(async move {
            let mut bytes = 0u64;
            loop {
                let Some(path) = queue.lock().await.pop() else {
                    break;
                };
                let body = http
                    .get(format!("{base}{path}"))
                    .header(JWT_HEADER, &jwt)
                    .send()
                    .await?
                    .bytes()
                    .await?;
                bytes += body.len() as u64;
            }
            Ok::<u64, reqwest::Error>(bytes)
        });
    }
    let mut total = 0;
    while let Some(done) = workers.join_next().await {
        total += done??;
    }
    Ok((started.elapsed().as_secs_f64(), total))
}

/// The figures of a run, printed at the end as one JSON object.
#[derive(Default)]
struct Figures(serde_json::Map<String, serde_json::Value>);

impl Figures {
    fn insert(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.0.insert(key.into(), value.into());
    }

    /// Seconds, megabytes and ratios, to two decimals.
    fn rounded(&mut self, pairs: &[(&str, f64)]) {
        for &(key, v) in pairs {
            self.insert(key, serde_json::json!((v * 100.0).round() / 100.0));
        }
    }
}

/// What the timed steps share: the sandbox, the scratch mirror and the sync's client
/// and options.
struct Bench {
    sandbox: SandboxProcess,
    dir: ScratchDir,
    client: crate::api::client::Client,
    opts: SyncOptions,
    concurrency: usize,
}

/// The first sync, with the CPU time and peak memory it took.
struct FirstSync {
    outcome: sync::SyncOutcome,
    cpu: f64,
    peak: f64,
}

/// Runs the command.
pub async fn run(args: &BenchArgs) -> Result<Exit> {
    if args.target == BenchTarget::Faults {
        let figures = super::bench_faults::run(args).await?;
        crate::outln!("{figures}");
        return Ok(Exit::Ok);
    }
    let bench = prepare(args)?;
    let mut figures = Figures::default();
    figures.insert("profile", format!("{:?}", args.profile).to_lowercase());
    figures.insert("concurrency", bench.concurrency);
    // The report benchmark reads the mirror this sync builds, so the sync always runs.
    let first = first_sync(&bench).await?;
    let wants = |targets: &[BenchTarget]| targets.contains(&args.target);
    if wants(&[BenchTarget::Sync, BenchTarget::All]) {
        measure_sync(&bench, &first, &mut figures).await?;
    }
    if wants(&[BenchTarget::Report, BenchTarget::All]) {
        measure_reports(&bench, &mut figures).await?;
    }
    if wants(&[BenchTarget::Export, BenchTarget::All]) {
        measure_export(&bench, &mut figures).await?;
    }
    if args.target == BenchTarget::Changes {
        measure_changes(&bench, &mut figures).await?;
    }
    if args.target == BenchTarget::History {
        let db = &bench.opts.db;
        let mut growth = super::bench_history::Growth::start(db)?;
        let (client, opts, sandbox) = (&bench.client, &bench.opts, &bench.sandbox);
        sync_days(client, opts, sandbox, args.days, |day| {
            growth.record(db, day)
        })
        .await?;
        figures.insert("history", growth.summary()?);
    }
    if wants(&[BenchTarget::Report, BenchTarget::Export, BenchTarget::All]) {
        measure_alerts(&bench, &mut figures).await?;
    }
    crate::outln!("{}", serde_json::Value::Object(figures.0));
    drop(bench);
    Ok(Exit::Ok)
}

/// Starts the sandbox and points a sync at a new mirror in a scratch folder.
fn prepare(args: &BenchArgs) -> Result<Bench> {
    let sandbox = spawn_sandbox(args)?;
    let dir = ScratchDir::new()?;
    let concurrency = usize::from(args.concurrency.max(1));
    let client = crate::cli::demo_cmd::sandbox_client(&sandbox.url, &sandbox.jwt, concurrency)?;
    let opts = SyncOptions {
        db: dir.path().join("bench.db"),
        whitelabel_org: Some(sandbox.whitelabel_org),
        has_jwt: true,
        store_secrets: false,
        progress: false,
        forget_removed_after_days: None,
    };
    Ok(Bench {
        sandbox,
        dir,
        client,
        opts,
        concurrency,
    })
}

async fn first_sync(bench: &Bench) -> Result<FirstSync> {
    reset_peak_rss();
    let cpu0 = cpu_seconds();
    let outcome = sync::run(&bench.client, &bench.opts, None).await?;
    let cpu = cpu_seconds() - cpu0;
    let peak = peak_rss_mb();
    if outcome.totals.errors > 0 {
        bail!("the benchmark sync had errors: {}", outcome.summary_line());
    }
    Ok(FirstSync { outcome, cpu, peak })
}

/// The first sync against a plain download of the same URLs, and a re-sync of the
/// unchanged world.
async fn measure_sync(bench: &Bench, first: &FirstSync, figures: &mut Figures) -> Result<()> {
    let FirstSync { outcome, cpu, peak } = first;
    let (cpu, peak) = (*cpu, *peak);
    let sync_s = outcome.elapsed.as_secs_f64();
    let mb = outcome.totals.bytes as f64 / 1e6;
    let urls = synced_urls(&bench.opts.db, bench.sandbox.whitelabel_org)?;
    let (base_s, base_bytes) = baseline(
        &bench.sandbox.url,
        &bench.sandbox.jwt,
        urls,
        bench.concurrency,
    )
    .await?;
    let again = sync::run(&bench.client, &bench.opts, None).await?;
    let rewritten =
        again.totals.rows.inserted + again.totals.rows.updated + again.totals.rows.removed;
    crate::outln!("{}", outcome.summary_line());
    crate::outln!(
        "sync: {sync_s:.2} s; baseline download of the same {} requests: {base_s:.2} s ({:.1} MB); ratio {:.2} (target <= 1.3)",
        outcome.totals.requests,
        base_bytes as f64 / 1e6,
        sync_s / base_s
    );
    crate::outln!(
        "worker CPU: {cpu:.2} s for {mb:.1} MB = {:.2} s per 100 MB (target < 1)",
        cpu / mb * 100.0
    );
    crate::outln!("worker peak memory: {peak:.0} MB (target < 100)");
    crate::outln!(
        "re-sync of the unchanged world: {:.2} s, rows rewritten: {rewritten} (target 0)",
        again.elapsed.as_secs_f64()
    );
    figures.rounded(&[
        ("sync_seconds", sync_s),
        ("baseline_seconds", base_s),
        ("ratio", sync_s / base_s),
        ("megabytes", mb),
        ("cpu_seconds", cpu),
        ("cpu_seconds_per_100mb", cpu / mb * 100.0),
        ("peak_rss_mb", peak),
        ("resync_seconds", again.elapsed.as_secs_f64()),
    ]);
    figures.insert("resync_rows_rewritten", rewritten);
    Ok(())
}

async fn measure_reports(bench: &Bench, figures: &mut Figures) -> Result<()> {
    let out = bench.dir.path().join("reports");
    let (times, files, rows) = time_reports(&bench.opts.db, &out).await?;
    let median = times[times.len() / 2];
    let (min, max) = (times[0], times[times.len() - 1]);
    crate::outln!(
        "reports: median {median:.2} s of {} runs (min {min:.2}, max {max:.2}) for {files} files, {rows} rows (target < 2 s)",
        times.len()
    );
    figures.rounded(&[
        ("report_seconds", median),
        ("report_seconds_min", min),
        ("report_seconds_max", max),
    ]);
    let reports = per_report(&bench.opts.db, &out)?;
    let all = reports["all"]["seconds"].as_f64().unwrap_or(f64::NAN);
    let (copy, megabytes) = copy_floor(&bench.opts.db, &bench.dir.path().join("copy"))?;
    crate::outln!(
        "copying the output folder ({megabytes:.0} MB, `cp -r` on the same file system): median {copy:.2} s of {REPORT_RUNS}; all reports take {:.2}x the copy (target <= 1.5x)",
        all / copy
    );
    figures.insert("reports", reports);
    figures.rounded(&[
        ("report_copy_seconds", copy),
        ("report_output_megabytes", megabytes),
        ("report_to_copy_ratio", all / copy),
    ]);
    Ok(())
}

async fn measure_export(bench: &Bench, figures: &mut Figures) -> Result<()> {
    let export = time_export(&bench.opts.db, &bench.dir.path().join("export")).await?;
    crate::outln!(
        "export: median {:.2} s of {} runs (min {:.2}, max {:.2}) for {} files, {} rows, {:.1} MB; peak memory {:.0} MB (target < 10 s)",
        export.median(),
        export.times.len(),
        export.times[0],
        export.times[export.times.len() - 1],
        export.files,
        export.rows,
        export.bytes as f64 / 1e6,
        export.peak_rss_mb
    );
    figures.rounded(&[
        ("export_seconds", export.median()),
        ("export_megabytes", export.bytes as f64 / 1e6),
        ("export_peak_rss_mb", export.peak_rss_mb),
    ]);
    Ok(())
}

async fn measure_changes(bench: &Bench, figures: &mut Figures) -> Result<()> {
    let (seconds, rows) =
        time_changes(&bench.client, &bench.opts, &bench.sandbox, CHANGES_DAYS).await?;
    crate::outln!(
        "changes: median {seconds:.2} s of {CHANGES_RUNS} runs over {CHANGES_DAYS} days of history, {rows} rows (target < 1 s)"
    );
    figures.rounded(&[("changes_seconds", seconds)]);
    figures.insert("changes_rows", rows);
    Ok(())
}

async fn measure_alerts(bench: &Bench, figures: &mut Figures) -> Result<()> {
    let (first, again, events) = time_alerts(&bench.opts.db, bench.dir.path()).await?;
    crate::outln!(
        "alerts: {first:.2} s for the first evaluation ({events} events, from the mirror), {again:.2} s with the report job's tables (target < 1 s beyond the report)"
    );
    figures.rounded(&[
        ("alerts_seconds", first),
        ("alerts_after_report_seconds", again),
    ]);
    figures.insert("alert_events", events);
    Ok(())
}

/// Report runs timed; the median is the figure (one run is at the mercy of whatever
/// else the machine does).
const REPORT_RUNS: usize = 5;

/// Builds every built-in report over `db` [`REPORT_RUNS`] times; returns the sorted
/// wall times in seconds, the files and the rows of one run.
async fn time_reports(
    db: &std::path::Path,
    out: &std::path::Path,
) -> Result<(Vec<f64>, usize, usize)> {
    let mut times = Vec::with_capacity(REPORT_RUNS);
    let (mut files, mut rows) = (0, 0);
    for _ in 0..REPORT_RUNS {
        let opts = ReportOptions {
            db: db.to_path_buf(),
            names: Vec::new(),
            as_of: chrono::Utc::now().date_naive(),
            formats: vec![Format::Csv, Format::Json],
            out_root: out.to_path_buf(),
            queries_dir: None,
            redact_pii: false,
            thresholds: Thresholds::default(),
            file_mode: crate::file_mode::FileMode::PRIVATE,
            store: None,
            memory_per_table: crate::report::kept::MEMORY_PER_TABLE,
        };
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || crate::render::run(&opts)).await??;
        times.push(started.elapsed().as_secs_f64());
        files = outcome.files.len();
        rows = outcome.files.iter().map(|f| f.rows).sum();
    }
    times.sort_by(f64::total_cmp);
    Ok((times, files, rows))
}

/// Today (UTC), the as-of date of the benchmark's report runs.
fn today() -> String {
    chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string()
}

/// `orgledger report` as of today over `db` into `out` in `formats`, saying its
/// resources in its last (JSON) log line.
fn report_command(
    exe: &std::path::Path,
    db: &std::path::Path,
    out: &std::path::Path,
    formats: &str,
) -> Command {
    let mut command = Command::new(exe);
    command.args(["-v", "--log-format", "json", "report", "--as-of", &today()]);
    command.args(["--format", formats]);
    command.arg("--db").arg(db).arg("--out").arg(out);
    command.env_remove("RUST_LOG");
    command
}

/// The page-cache write floor of a report run: every report (CSV and JSON) written
/// into `out` once, then its folder copied with `cp -r` to a new folder beside it
/// [`REPORT_RUNS`] times. Returns the median copy time and the folder's size in MB.
fn copy_floor(db: &std::path::Path, out: &std::path::Path) -> Result<(f64, f64)> {
    let exe = std::env::current_exe().context("cannot find the orgledger executable")?;
    let run = report_command(&exe, db, out, "csv,json")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("cannot run orgledger report")?;
    if !run.success() {
        bail!("orgledger report failed: {run}");
    }
    let folder = out.join(today());
    let bytes: u64 = std::fs::read_dir(&folder)
        .with_context(|| format!("cannot read {}", folder.display()))?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let mut times = Vec::with_capacity(REPORT_RUNS);
    for i in 0..REPORT_RUNS {
        let to = out.join(format!("copy-{i}"));
        let started = Instant::now();
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&folder)
            .arg(&to)
            .status()
            .context("cannot run cp")?;
        times.push(started.elapsed().as_secs_f64());
        if !copied.success() {
            bail!("cp -r {} failed: {copied}", folder.display());
        }
        std::fs::remove_dir_all(&to).with_context(|| format!("cannot remove {}", to.display()))?;
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], bytes as f64 / 1e6))
}

/// Time, peak memory and CPU of each built-in report, and of all of them together,
/// each run on its own in a child process `orgledger report` ([`REPORT_RUNS`] times).
/// The child says its own peak (VmHWM) and CPU in its last debug log line: that is
/// exactly what a user's `orgledger report NAME` needs (as `/usr/bin/time -f %M`
/// shows it). Neither a peak reset in this process (it would start from what this
/// process still holds after the sync) nor the child's `wait4` figure (Linux carries
/// the parent's peak into a spawned child) would be. Prints one line per report;
/// returns the figures as JSON.
fn per_report(db: &std::path::Path, out: &std::path::Path) -> Result<serde_json::Value> {
    let exe = std::env::current_exe().context("cannot find the orgledger executable")?;
    let round = |v: f64| serde_json::json!((v * 100.0).round() / 100.0);
    let mut figures = serde_json::Map::new();
    // Each report alone, all of them, all but the newest (what adding it cost),
    // all of them with `index.html` and the organization pages (`--format html`),
    // and all of them in every format.
    let newest = report::storage_trends::NAME.as_str();
    let but_newest: Vec<&str> = report::builtin_names().filter(|n| *n != newest).collect();
    let runs = report::builtin_names()
        .map(|name| (name.to_string(), vec![name], "csv,json"))
        .chain([
            ("all".to_string(), Vec::new(), "csv,json"),
            (format!("all_but_{newest}"), but_newest, "csv,json"),
            ("all_with_pages".to_string(), Vec::new(), "csv,json,html"),
            (
                "all_formats".to_string(),
                Vec::new(),
                "csv,json,parquet,html,xlsx",
            ),
        ]);
    for (label, names, formats) in runs {
        let (mut times, mut peak, mut cpu) = (Vec::with_capacity(REPORT_RUNS), 0.0f64, 0.0f64);
        for _ in 0..REPORT_RUNS {
            let mut command = report_command(&exe, db, out, formats);
            command.args(&names);
            let started = Instant::now();
            let run = command
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .context("cannot run orgledger report")?;
            times.push(started.elapsed().as_secs_f64());
            if !run.status.success() {
                bail!("orgledger report {label} failed: {}", run.status);
            }
            let (p, c) = String::from_utf8_lossy(&run.stderr)
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .find_map(|log| {
                    Some((
                        log.get("peak_rss_mb")?.as_f64()?,
                        log.get("cpu_seconds")?.as_f64()?,
                    ))
                })
                .with_context(|| format!("orgledger report {label} did not say its resources"))?;
            peak = peak.max(p);
            cpu = cpu.max(c);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        crate::outln!(
            "report {label}: median {median:.2} s of {REPORT_RUNS} runs, peak memory {peak:.0} MB, CPU {cpu:.2} s (the most of a run; own process each)"
        );
        figures.insert(
            label,
            serde_json::json!({"seconds": round(median), "peak_rss_mb": round(peak), "cpu_seconds": round(cpu)}),
        );
    }
    Ok(serde_json::Value::Object(figures))
}

/// Days of history `bench changes` builds, one sync per day.
const CHANGES_DAYS: u32 = 30;
/// `changes` runs timed (the median is the figure).
const CHANGES_RUNS: usize = 5;

/// Builds `days` of history (the sandbox's clock moves one day, then a sync), then
/// times `orgledger changes --since run:1` over it in a child process, as a user runs
/// it. Returns the median seconds and the rows it listed.
async fn time_changes(
    client: &crate::api::client::Client,
    opts: &SyncOptions,
    sandbox: &SandboxProcess,
    days: u32,
) -> Result<(f64, usize)> {
    sync_days(client, opts, sandbox, days, |_| Ok(())).await?;
    let exe = std::env::current_exe().context("cannot find the orgledger executable")?;
    let (mut times, mut rows) = (Vec::with_capacity(CHANGES_RUNS), 0);
    for _ in 0..CHANGES_RUNS {
        let started = Instant::now();
        let run = Command::new(&exe)
            .args(["-q", "--db"])
            .arg(&opts.db)
            // The sandbox's clock runs ahead of the wall clock: `--until`'s default
            // is then the last history sync.
            .args(["changes", "--since", "run:1", "--format", "csv"])
            .stderr(Stdio::inherit())
            .output()
            .context("cannot run orgledger changes")?;
        times.push(started.elapsed().as_secs_f64());
        if !run.status.success() {
            bail!("orgledger changes failed: {}", run.status);
        }
        rows = run
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
            .saturating_sub(1);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], rows))
}

/// Moves the sandbox's world on by a day and syncs, `days` times; `after` sees the
/// mirror after each day's sync.
pub(super) async fn sync_days(
    client: &crate::api::client::Client,
    opts: &SyncOptions,
    sandbox: &SandboxProcess,
    days: u32,
    mut after: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    let http = origin::client_for(&sandbox.url).map_err(|e| anyhow!("{e}"))?;
    for day in 1..=days {
        http.post(format!("{}/sandbox/advance?days=1", sandbox.url))
            .header(JWT_HEADER, &sandbox.jwt)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("the sandbox did not move to day {day}"))?;
        let outcome = sync::run(client, opts, None).await?;
        if outcome.totals.errors > 0 {
            bail!(
                "the history sync of day {day} had errors: {}",
                outcome.summary_line()
            );
        }
        after(day)?;
    }
    Ok(())
}

/// Export runs timed (the median is the figure).
const EXPORT_RUNS: usize = 3;

/// What the export benchmark measured.
struct ExportFigures {
    /// Sorted wall times, seconds.
    times: Vec<f64>,
    files: usize,
    rows: usize,
    bytes: u64,
    /// The worker's peak resident memory during the exports.
    peak_rss_mb: f64,
}

impl ExportFigures {
    fn median(&self) -> f64 {
        self.times[self.times.len() / 2]
    }
}

/// Exports every table of `db` to Parquet [`EXPORT_RUNS`] times.
async fn time_export(db: &std::path::Path, out: &std::path::Path) -> Result<ExportFigures> {
    let opts = crate::export::ExportOptions {
        db: db.to_path_buf(),
        out: out.to_path_buf(),
        as_of: None,
        tables: Vec::new(),
        history: false,
        file_mode: crate::file_mode::FileMode::PRIVATE,
        store: None,
        since: None,
    };
    let mut figures = ExportFigures {
        times: Vec::with_capacity(EXPORT_RUNS),
        files: 0,
        rows: 0,
        bytes: 0,
        peak_rss_mb: 0.0,
    };
    reset_peak_rss();
    for _ in 0..EXPORT_RUNS {
        let opts = opts.clone();
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || crate::export::run(&opts)).await??;
        figures.times.push(started.elapsed().as_secs_f64());
        figures.files = outcome.files.len();
        figures.rows = outcome.rows();
        figures.bytes = outcome.files.iter().map(|f| f.bytes).sum();
    }
    figures.peak_rss_mb = peak_rss_mb();
    figures.times.sort_by(f64::total_cmp);
    Ok(figures)
}

/// Alerts over `db` (events appended to a scratch JSON Lines file): the first
/// evaluation builds its own tables and stores every crossing; the second is the
/// daemon's path, handed the tables of a report run. Returns both times in seconds
/// and the first run's events.
async fn time_alerts(db: &std::path::Path, dir: &std::path::Path) -> Result<(f64, f64, usize)> {
    let today = chrono::Utc::now().date_naive();
    let mut opts = crate::alerts::AlertOptions::new(db, today);
    opts.jsonl = Some(crate::alerts::Jsonl::File(dir.join("alerts.jsonl")));
    let started = Instant::now();
    let first = crate::alerts::run(&opts, None).await?;
    let first_s = started.elapsed().as_secs_f64();
    let mut ropts = ReportOptions::new(db, today);
    ropts.out_root = dir.join("alert-reports");
    let outcome = tokio::task::spawn_blocking(move || crate::render::run(&ropts)).await??;
    let started = Instant::now();
    crate::alerts::run(&opts, Some(outcome.tables)).await?;
    Ok((first_s, started.elapsed().as_secs_f64(), first.events.len()))
}

/// A scratch folder under the system temp dir, removed when dropped.
pub(super) struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    pub(super) fn new() -> Result<Self> {
        let path = std::env::temp_dir().join(format!("orgledger-bench-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(ScratchDir(path))
    }

    pub(super) fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
