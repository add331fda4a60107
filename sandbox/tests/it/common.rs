//! Starting a sandbox and calling it.

use chrono::NaiveDate;
use orgledger_sandbox::{HardCases, Profile, SandboxHandle, SandboxOptions, start};
use serde_json::Value;

/// The clock start of every test world.
pub fn start_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 4, 10).unwrap_or_default()
}

/// A sandbox of `profile` (seed 42) with the given hard cases and fault spec.
pub async fn sandbox(profile: Profile, hard_cases: HardCases, faults: &str) -> SandboxHandle {
    start(SandboxOptions {
        profile,
        seed: 42,
        start_date: Some(start_date()),
        hard_cases,
        faults: faults.parse().expect("fault spec"),
        ..SandboxOptions::default()
    })
    .await
    .expect("sandbox starts")
}

/// One answer: status, `Retry-After` (if any) and the body as JSON (`Null` if not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub json: Value,
}

/// An HTTP client. In a workspace build reqwest has the product's TLS features, which
/// need a crypto provider installed before a client is built.
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A client holding the white label JWT of a sandbox.
pub struct Api {
    http: reqwest::Client,
    url: String,
    jwt: String,
}

impl Api {
    pub fn new(sb: &SandboxHandle) -> Self {
        Self {
            http: http(),
            url: sb.info.url.clone(),
            jwt: sb.info.jwt.clone(),
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(reqwest::Method::GET, path).await
    }

    pub async fn post(&self, path: &str) -> Reply {
        self.send(reqwest::Method::POST, path).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(reqwest::Method::DELETE, path).await
    }

    async fn send(&self, method: reqwest::Method, path: &str) -> Reply {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.url))
            .header("x-jwt-token", &self.jwt)
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = resp.bytes().await.expect("body");
        Reply {
            status,
            retry_after,
            json: serde_json::from_slice(&body).unwrap_or(Value::Null),
        }
    }
}
