//! Whole-service conditions: an outage (503 for every API request) and a
//! requests-per-second limit (429 with `Retry-After`).

use crate::common::{Api, sandbox};
use orgledger_sandbox::{HardCases, Profile};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_window_answers_503_then_the_service_returns() {
    let sb = sandbox(Profile::Tiny, HardCases::None, "outage=0..2").await;
    let api = Api::new(&sb);
    for path in ["/v1/api/organizations", "/v1/api/projects"] {
        let r = api.get(path).await;
        assert_eq!(r.status, 503, "{path}");
        assert_eq!(r.json["success"], false);
        assert!(r.retry_after.is_some());
    }
    assert_eq!(
        api.get("/sandbox/health").await.status,
        200,
        "admin routes stay up"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(api.get("/v1/api/organizations").await.status, 200);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_window_later_in_the_run_leaves_the_start_alone() {
    let sb = sandbox(Profile::Tiny, HardCases::None, "outage=3600..3660").await;
    let api = Api::new(&sb);
    assert_eq!(api.get("/v1/api/organizations").await.status, 200);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_route_starts_and_ends_an_outage_now() {
    let sb = sandbox(Profile::Tiny, HardCases::None, "").await;
    let api = Api::new(&sb);
    assert_eq!(api.get("/v1/api/projects").await.status, 200);
    let started = api.post("/sandbox/outage?seconds=60").await;
    assert_eq!(started.status, 200, "{:?}", started.json);
    assert_eq!(api.get("/v1/api/projects").await.status, 503);
    assert_eq!(api.delete("/sandbox/outage").await.status, 200);
    assert_eq!(api.get("/v1/api/projects").await.status, 200);
    assert_eq!(api.post("/sandbox/outage?seconds=1").await.status, 200);
    assert_eq!(api.get("/v1/api/projects").await.status, 503);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        api.get("/v1/api/projects").await.status,
        200,
        "it ends by itself"
    );
    for bad in ["0", "-5", "soon", "86401"] {
        let r = api.post(&format!("/sandbox/outage?seconds={bad}")).await;
        assert_eq!(r.status, 400, "{bad}");
    }
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_route_needs_the_white_label_jwt() {
    let sb = sandbox(Profile::Tiny, HardCases::None, "").await;
    let r = crate::common::http()
        .post(format!("{}/sandbox/outage?seconds=60", sb.info.url))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 401);
    let stats = crate::common::http()
        .get(format!("{}/sandbox/stats", sb.info.url))
        .send()
        .await
        .expect("request");
    assert_eq!(stats.status().as_u16(), 401, "the counts need the JWT too");
    assert_eq!(Api::new(&sb).get("/v1/api/projects").await.status, 200);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_rate_limit_get_429_with_retry_after() {
    let sb = sandbox(Profile::Tiny, HardCases::None, "rps=5").await;
    let api = Api::new(&sb);
    let mut statuses = Vec::new();
    let mut retry = None;
    for _ in 0..12 {
        let r = api.get("/v1/api/organizations").await;
        if r.status == 429 {
            retry = r.retry_after.clone();
        }
        statuses.push(r.status);
    }
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!((5..=10).contains(&ok), "{statuses:?}");
    assert!(limited >= 2, "{statuses:?}");
    assert_eq!(retry.as_deref(), Some("1"));
    let stats = api.get("/sandbox/stats").await;
    assert_eq!(stats.status, 200, "{:?}", stats.json);
    assert_eq!(stats.json["requests"], 12, "admin routes are not counted");
    assert_eq!(stats.json["rateLimited"], limited);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        api.get("/v1/api/organizations").await.status,
        200,
        "a new second"
    );
    sb.shutdown().await;
}
