//! The daemon's `/metrics` and `/healthz`, scraped over HTTP while it syncs the
//! sandbox on a schedule of seconds.

use crate::common;
use crate::daemon::{daemon_with, revive, runs, wait_until};
use orgledger_sandbox::Profile;
use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The daemon's stderr, collected line by line as it comes.
struct Log(Arc<Mutex<String>>);

impl Log {
    fn follow(child: &mut Child) -> Log {
        let text = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr piped");
        let sink = text.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut t) = sink.lock() {
                    t.push_str(&line);
                    t.push('\n');
                }
            }
        });
        Log(text)
    }

    fn text(&self) -> String {
        self.0.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The address the daemon says it serves `/metrics` on.
    async fn endpoint(&self) -> String {
        let marker = "serving /metrics and /healthz on http://";
        wait_until(
            "the metrics address in the log",
            Duration::from_secs(20),
            || self.text().contains(marker),
        )
        .await;
        let text = self.text();
        let start = text.find(marker).map(|i| i + marker.len()).unwrap_or(0);
        let addr: String = text[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"')
            .collect();
        format!("http://{addr}")
    }
}

/// The value of one sample line (`name{labels} value`), if present.
pub(crate) fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

pub(crate) async fn get(url: &str) -> (u16, String) {
    match common::http().get(url).send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    }
}

async fn stop(mut child: Child, log: &Log) {
    let (code, _) = common::signal_and_wait(&mut child, "-TERM").await;
    assert_eq!(code, Some(0), "clean exit; stderr:\n{}", log.text());
}

/// Every series a scrape must show before the first sync ends, with its start value
/// (a mirror not created yet: no rows, no sync).
fn start_values() -> Vec<(String, f64)> {
    let mut series = vec![
        ("orgledger_up".to_string(), 1.0),
        (
            format!(
                "orgledger_build_info{{version=\"{}\"}}",
                env!("CARGO_PKG_VERSION")
            ),
            1.0,
        ),
        ("orgledger_sync_requests_total".into(), 0.0),
        ("orgledger_sync_bytes_total".into(), 0.0),
        ("orgledger_sync_duration_seconds_count".into(), 0.0),
        ("orgledger_sync_duration_seconds_sum".into(), 0.0),
        ("orgledger_report_duration_seconds_count".into(), 0.0),
        ("orgledger_last_sync_success_timestamp_seconds".into(), 0.0),
    ];
    let labelled: [(&str, &str, &[&str]); 6] = [
        (
            "orgledger_sync_runs_total",
            "status",
            &["succeeded", "partial", "failed", "aborted", "error"],
        ),
        (
            "orgledger_sync_errors_total",
            "operation",
            &[
                "list-organizations",
                "get-organization",
                "get-whitelabel-user",
                "list-user-organizations",
                "list-projects",
                "get-project-info",
                "list-user-projects",
                "sync",
            ],
        ),
        ("orgledger_report_runs_total", "status", &["ok", "failed"]),
        ("orgledger_export_runs_total", "status", &["ok", "failed"]),
        (
            "orgledger_mirror_rows",
            "table",
            &["organizations", "users", "daily_metrics", "project_info"],
        ),
        (
            "orgledger_alert_outbox_events",
            "state",
            &["pending", "delivered", "failed"],
        ),
    ];
    for (name, label, values) in labelled {
        for value in values {
            series.push((format!("{name}{{{label}=\"{value}\"}}"), 0.0));
        }
    }
    for kind in ["alerts", "report"] {
        for status in ["sent", "pending", "refused"] {
            series.push((
                format!("orgledger_email_messages_total{{kind=\"{kind}\",status=\"{status}\"}}"),
                0.0,
            ));
        }
    }
    series
}

/// Scrapes while the service is down, so the daemon's first sync cannot end yet:
/// every series is there with its start value, and no run had finished.
async fn assert_start_values(base: &str, db: &std::path::Path) {
    let text = get(&format!("{base}/metrics")).await.1;
    let finished = common::count_or_zero(
        db,
        "SELECT COUNT(*) FROM sync_runs WHERE finished_at IS NOT NULL",
    );
    assert_eq!(finished, 0, "the scrape came before the first sync ended");
    for (series, start) in start_values() {
        assert_eq!(
            sample(&text, &series),
            Some(start),
            "{series} at {start} from the start:\n{text}"
        );
    }
    for histogram in [
        "orgledger_sync_duration_seconds",
        "orgledger_report_duration_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {histogram} histogram")),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_there_from_the_start_and_count_two_syncs_and_a_report_over_http() {
    let sb = common::sandbox(Profile::Tiny).await;
    // The service is down when the daemon starts: its first sync keeps retrying.
    assert_eq!(
        common::admin_post(&sb, "/sandbox/outage?seconds=120").await,
        200
    );
    let (dir, db) = common::scratch();
    let mut child = daemon_with(
        &sb,
        &db,
        &dir.path().join("reports"),
        "*/2 * * * * *",
        "*/3 * * * * *",
        &["--listen", "127.0.0.1:0"],
    );
    let log = Log::follow(&mut child);
    let base = log.endpoint().await;
    assert_start_values(&base, &db).await;
    assert_eq!(common::admin_delete(&sb, "/sandbox/outage").await, 200);
    wait_until("two syncs", Duration::from_secs(40), || {
        runs(&db, "succeeded") >= 2
    })
    .await;
    let url = format!("{base}/metrics");
    let mut text = String::new();
    for _ in 0..50 {
        text = get(&url).await.1;
        let syncs = sample(&text, "orgledger_sync_runs_total{status=\"succeeded\"}");
        let reports = sample(&text, "orgledger_report_runs_total{status=\"ok\"}");
        if syncs.unwrap_or(0.0) >= 2.0 && reports.unwrap_or(0.0) >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let value =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"));
    let syncs = value("orgledger_sync_runs_total{status=\"succeeded\"}");
    assert!(syncs >= 2.0, "{text}");
    assert!(
        value("orgledger_sync_duration_seconds_count") >= syncs,
        "every sync is in the histogram:\n{text}"
    );
    assert!(
        text.contains("# TYPE orgledger_sync_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("orgledger_sync_duration_seconds_bucket{le=\"+Inf\"}"),
        "{text}"
    );
    assert!(
        value("orgledger_sync_requests_total") >= 2.0 * 3.0,
        "{text}"
    );
    assert!(value("orgledger_sync_bytes_total") > 0.0, "{text}");
    let now = chrono::Utc::now().timestamp() as f64;
    let last = value("orgledger_last_sync_success_timestamp_seconds");
    assert!((now - last).abs() < 60.0, "last success {last}, now {now}");
    let orgs = common::count(
        &common::open(&db),
        "SELECT COUNT(*) FROM organizations WHERE removed_at IS NULL",
    );
    assert_eq!(
        value("orgledger_mirror_rows{table=\"organizations\"}"),
        orgs as f64
    );
    assert!(
        value("orgledger_report_runs_total{status=\"ok\"}") >= 1.0,
        "{text}"
    );
    assert!(
        value("orgledger_report_duration_seconds_count") >= 1.0,
        "{text}"
    );
    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 200, "{body}");
    stop(child, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_fails_while_the_service_is_down_and_recovers() {
    let sb = common::sandbox(Profile::Tiny).await;
    let addr = sb.info.url.trim_start_matches("http://").to_string();
    let (dir, db) = common::scratch();
    let config = dir.path().join("orgledger.toml");
    std::fs::write(&config, "[daemon]\nstale_after_periods = 2\n").expect("config");
    let mut child = daemon_with(
        &sb,
        &db,
        &dir.path().join("reports"),
        "*/2 * * * * *",
        "0 0 0 1 1 *",
        &[
            "--listen",
            "127.0.0.1:0",
            "--config",
            config.to_str().expect("utf-8"),
        ],
    );
    let log = Log::follow(&mut child);
    let health = format!("{}/healthz", log.endpoint().await);
    wait_until("a first sync", Duration::from_secs(30), || {
        runs(&db, "succeeded") >= 1
    })
    .await;
    assert_eq!(get(&health).await.0, 200);

    sb.shutdown().await;
    let mut last = (0, String::new());
    for _ in 0..150 {
        last = get(&health).await;
        if last.0 == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        last.0, 503,
        "unhealthy while the service is down: {}",
        last.1
    );
    assert!(last.1.contains("more than 2 sync periods"), "{}", last.1);
    wait_until("a failed sync", Duration::from_secs(30), || {
        runs(&db, "failed") >= 1
    })
    .await;

    let revived = revive(&addr).await;
    for _ in 0..150 {
        last = get(&health).await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(last.0, 200, "healthy again after a sync: {}", last.1);
    let metrics = get(&health.replace("/healthz", "/metrics")).await.1;
    assert!(
        sample(&metrics, "orgledger_sync_runs_total{status=\"failed\"}").unwrap_or(0.0) >= 1.0,
        "failed syncs are counted:\n{metrics}"
    );
    stop(child, &log).await;
    revived.shutdown().await;
}
