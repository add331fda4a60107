//! `orgledger bench faults`: what 429 answers and a failing service cost a sync.
//! Sandboxes of the same world and latency: one without faults (the fault-free
//! time, the median of its runs), one that answers a share of all requests 429 at
//! random (each run's time against its bound: the fault-free time, 1.2 s per 429
//! the sandbox counted, and 1 s), one that allows N requests a second (the pace
//! the sync kept against N), and one that fails in several ways at once (`--mix`:
//! each run's time and their spread). Every run syncs into a new mirror; the 429s
//! are the sandbox's count (`GET /sandbox/stats`), not the client's.

use super::bench_cmd::{SandboxProcess, ScratchDir, spawn_sandbox_with};
use crate::api::client::JWT_HEADER;
use crate::api::origin;
use crate::cli::args::BenchArgs;
use crate::sync::{self, SyncOptions};
use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};
use std::time::Instant;

/// What a random 429 may cost beyond its `Retry-After` of 1 s.
const PER_429: f64 = 1.2;
/// What the run may cost beyond its fault-free time and its 429s.
const SLACK: f64 = 1.0;

/// One timed sync: seconds, requests the sandbox received and answered 429.
struct Timed {
    seconds: f64,
    requests: u64,
    limited: u64,
    status: &'static str,
}

/// Requests the sandbox received and answered 429 so far.
async fn stats(sandbox: &SandboxProcess) -> Result<(u64, u64)> {
    let http = origin::client_for(&sandbox.url).map_err(|e| anyhow!("{e}"))?;
    let bytes = http
        .get(format!("{}/sandbox/stats", sandbox.url))
        .header(JWT_HEADER, &sandbox.jwt)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .context("the sandbox did not say its figures")?
        .bytes()
        .await
        .context("the sandbox's figures were cut off")?;
    let body: Value =
        serde_json::from_slice(&bytes).context("the sandbox's figures are not JSON")?;
    let field = |name: &str| {
        body.get(name)
            .and_then(Value::as_u64)
            .with_context(|| format!("the sandbox's figures lack {name}"))
    };
    Ok((field("requests")?, field("rateLimited")?))
}

/// `runs` syncs, each into a new mirror, against one sandbox.
async fn timed_syncs(args: &BenchArgs, faults: &[String], runs: u32) -> Result<Vec<Timed>> {
    let sandbox = spawn_sandbox_with(args, faults)?;
    let dir = ScratchDir::new()?;
    let concurrency = usize::from(args.concurrency.max(1));
    let client = crate::cli::demo_cmd::sandbox_client(&sandbox.url, &sandbox.jwt, concurrency)?;
    let mut timed = Vec::new();
    for run in 1..=runs {
        let opts = SyncOptions {
            db: dir.path().join(format!("faults-{run}.db")),
            whitelabel_org: Some(sandbox.whitelabel_org),
            has_jwt: true,
            store_secrets: false,
            progress: false,
            forget_removed_after_days: None,
        };
        let (requests0, limited0) = stats(&sandbox).await?;
        let started = Instant::now();
        let outcome = sync::run(&client, &opts, None).await?;
        let seconds = started.elapsed().as_secs_f64();
        let (requests, limited) = stats(&sandbox).await?;
        timed.push(Timed {
            seconds,
            requests: requests - requests0,
            limited: limited - limited0,
            status: outcome.status.as_str(),
        });
    }
    Ok(timed)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn round(v: f64) -> Value {
    json!((v * 100.0).round() / 100.0)
}

/// Runs the benchmark; prints a line per run and returns the figures.
pub async fn run(args: &BenchArgs) -> Result<Value> {
    let runs = args.runs.max(1);
    let profile = format!("{:?}", args.profile).to_lowercase();
    let latency = args.latency_ms;
    let clean = timed_syncs(args, &[], runs.min(3)).await?;
    let clean_s = median(clean.iter().map(|t| t.seconds).collect());
    crate::outln!(
        "{profile}, seed {}, latency {latency} ms: fault-free sync {clean_s:.2} s (median of {}), {} requests",
        args.seed,
        clean.len(),
        clean.first().map_or(0, |t| t.requests)
    );
    let mut figures = json!({
        "profile": profile,
        "seed": args.seed,
        "latency_ms": latency,
        "concurrency": args.concurrency,
        "clean_seconds": round(clean_s),
    });
    if args.random_429 > 0.0 {
        figures["random_429"] = random_429(args, clean_s).await?;
    }
    if args.limit_rps > 0 {
        figures["limit"] = limit(args, clean_s).await?;
    }
    if let Some(mix) = &args.mix {
        figures["mix"] = mixed(args, mix).await?;
    }
    Ok(figures)
}

/// Syncs against random 429s, each against its bound.
async fn random_429(args: &BenchArgs, clean_s: f64) -> Result<Value> {
    let share = args.random_429;
    let random = timed_syncs(args, &[format!("429={share}")], args.runs.max(1)).await?;
    let mut rows = Vec::new();
    let mut within = 0;
    for (i, t) in random.iter().enumerate() {
        let bound = clean_s + PER_429 * t.limited as f64 + SLACK;
        let holds = t.seconds <= bound;
        within += usize::from(holds);
        crate::outln!(
            "429={share} run {}: {:.2} s, {} requests, {} answered 429, bound {bound:.2} s: {} ({})",
            i + 1,
            t.seconds,
            t.requests,
            t.limited,
            if holds { "within" } else { "OVER" },
            t.status
        );
        rows.push(json!({
            "seconds": round(t.seconds), "requests": t.requests, "rate_limited": t.limited,
            "bound_seconds": round(bound), "status": t.status,
        }));
    }
    crate::outln!(
        "429={share}: {within} of {} runs within fault-free + {PER_429} s per 429 + {SLACK} s",
        random.len()
    );
    Ok(json!({"share": share, "runs": rows, "within_bound": within}))
}

/// One sync against a limit of `--limit-rps`: the pace it kept.
async fn limit(args: &BenchArgs, clean_s: f64) -> Result<Value> {
    let limit = args.limit_rps;
    let limited = timed_syncs(args, &[format!("rps={limit}")], 1).await?;
    let mut figures = Value::Null;
    for t in &limited {
        let accepted = (t.requests - t.limited) as f64;
        let pace = accepted / t.seconds;
        let ideal = (accepted / f64::from(limit)).max(clean_s);
        crate::outln!(
            "rps={limit}: {:.2} s, {} requests, {} answered 429 ({:.1} %), {pace:.1} accepted/s; {:.2}x the ideal {ideal:.2} s ({})",
            t.seconds,
            t.requests,
            t.limited,
            t.limited as f64 / t.requests.max(1) as f64 * 100.0,
            t.seconds / ideal,
            t.status
        );
        figures = json!({
            "rps": limit, "seconds": round(t.seconds), "requests": t.requests,
            "rate_limited": t.limited, "accepted_per_second": round(pace),
            "ratio_to_ideal": round(t.seconds / ideal), "status": t.status,
        });
    }
    Ok(figures)
}

/// Syncs against a service failing in several ways at once: each one's time, and
/// the fastest, the median and the slowest.
async fn mixed(args: &BenchArgs, mix: &str) -> Result<Value> {
    let timed = timed_syncs(args, &[mix.to_string()], args.runs.max(1)).await?;
    let mut rows = Vec::new();
    for (i, t) in timed.iter().enumerate() {
        crate::outln!(
            "{mix} run {}: {:.2} s, {} requests, {} answered 429 ({})",
            i + 1,
            t.seconds,
            t.requests,
            t.limited,
            t.status
        );
        rows.push(json!({
            "seconds": round(t.seconds), "requests": t.requests, "rate_limited": t.limited,
            "status": t.status,
        }));
    }
    let seconds: Vec<f64> = timed.iter().map(|t| t.seconds).collect();
    let (fastest, slowest) = seconds
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
    let middle = median(seconds);
    crate::outln!(
        "{mix}: {} runs, {fastest:.2} s fastest, {middle:.2} s median, {slowest:.2} s slowest",
        timed.len()
    );
    Ok(json!({
        "faults": mix, "runs": rows, "fastest_seconds": round(fastest),
        "median_seconds": round(middle), "slowest_seconds": round(slowest),
    }))
}
