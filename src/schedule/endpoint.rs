//! `GET /metrics` and `GET /healthz` of the daemon (`--listen`), on a small axum
//! server that stops with the daemon.

use crate::schedule::health::Health;
use crate::shutdown::Shutdown;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use std::net::SocketAddr;
use std::sync::Arc;

/// What the routes read.
struct Endpoint {
    metrics: PrometheusHandle,
    health: Arc<Health>,
}

/// The address could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} for /metrics and /healthz: {}; choose another address with --listen or [daemon] listen", crate::cause::io(.cause))]
pub struct ListenError {
    /// The address asked for.
    pub addr: SocketAddr,
    /// The reason.
    pub cause: std::io::Error,
}

/// Binds `addr` and serves until `stop`; returns the bound address (port 0 picks one).
pub async fn serve(
    addr: SocketAddr,
    metrics: PrometheusHandle,
    health: Arc<Health>,
    stop: Shutdown,
) -> Result<SocketAddr, ListenError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|cause| ListenError { addr, cause })?;
    let bound = listener
        .local_addr()
        .map_err(|cause| ListenError { addr, cause })?;
    let app = Router::new()
        .route("/metrics", get(metrics_route))
        .route("/healthz", get(health_route))
        .with_state(Arc::new(Endpoint { metrics, health }));
    tokio::spawn(async move {
        let mut stop = stop;
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                stop.recv().await;
            })
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the /metrics server stopped");
        }
    });
    Ok(bound)
}

async fn metrics_route(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        endpoint.metrics.render(),
    )
}

async fn health_route(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    // Opening the mirror is blocking file I/O.
    let health = endpoint.health.clone();
    let verdict = tokio::task::spawn_blocking(move || health.check())
        .await
        .unwrap_or_else(|e| Err(format!("the health check failed: {e}")));
    match verdict {
        Ok(text) => (StatusCode::OK, text + "\n"),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason + "\n"),
    }
}
