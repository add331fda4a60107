//! The HTTP client: one async method per operation of the interface.
//!
//! Each call takes a concurrency permit (so a sync never has more than N requests
//! in flight), waits for its rate-limit slot, sends the credentials, reads the body
//! up to a size limit, decodes it once into the operation's typed response and
//! checks the envelope. Transient failures are retried with backoff; the result
//! carries the raw body (so fields the models do not name are kept) and the
//! server's `Date` (the sync's observation time).

use crate::api::error::ApiError;
use crate::api::models::{
    ApiResponse, CreateProjectRequest, CreateProjectResponse, OrganizationIdList,
    OrganizationLinkList, OrganizationListResponse, OrganizationResponse, ProjectInfoResponse,
    ProjectListResponse, WhitelabelUserResponse,
};
use crate::api::operation::{self as op, Operation};
use crate::api::outage::{Gate, OutagePolicy, Phase, Turn, span};
use crate::api::pacing::{Backoff, RateLimiter};
use crate::api::secret::Secret;
use crate::api::throttle::Throttle;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Header carrying an API key.
pub const API_KEY_HEADER: &str = "x-api-key";
/// Header carrying a JWT (the one the real platform uses).
pub const JWT_HEADER: &str = "x-jwt-token";

/// The credentials a client sends. At least one must be set.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Organization or project API key.
    pub api_key: Option<Secret>,
    /// User JWT; widens list operations and is required by list-user-organizations.
    pub jwt: Option<Secret>,
}

impl Credentials {
    /// Whether neither credential is set.
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.jwt.is_none()
    }
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Service base address, e.g. `https://studio.example.com` (paths start with `/v1/api`).
    pub base_url: String,
    /// What to authenticate with.
    pub credentials: Credentials,
    /// Timeout of one attempt, connection to last byte.
    pub timeout: Duration,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Requests per second at most (None = no cap).
    pub rps: Option<f64>,
    /// Retry policy.
    pub backoff: Backoff,
    /// Largest body accepted, in bytes.
    pub max_body_bytes: u64,
    /// When the service counts as down and how long that is waited out.
    pub outage: OutagePolicy,
}

impl ClientConfig {
    /// Defaults for a base URL and credentials.
    pub fn new(base_url: impl Into<String>, credentials: Credentials) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            credentials,
            timeout: Duration::from_secs(60),
            concurrency: 8,
            rps: None,
            backoff: Backoff::default(),
            max_body_bytes: 256 * 1024 * 1024,
            outage: OutagePolicy::default(),
        }
    }
}

/// A decoded response with what the mirror needs besides the model.
#[derive(Debug)]
pub struct Fetched<T> {
    /// The typed response (envelope already checked).
    pub value: T,
    /// The body as received.
    pub raw: Vec<u8>,
    /// The server's `Date` header, when it sent a valid one.
    pub server_time: Option<DateTime<Utc>>,
    /// Attempts it took (1 = first try).
    pub attempts: u32,
}

/// Requests and bytes, counted across all calls of a client (retries included).
#[derive(Debug, Default)]
pub struct Traffic {
    /// HTTP requests sent.
    pub requests: AtomicU64,
    /// Body bytes received.
    pub bytes: AtomicU64,
}

/// The API client. Cheap to clone; clones share permits, rate limit and counters.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    cfg: Arc<ClientConfig>,
    permits: Arc<Semaphore>,
    limiter: Option<Arc<RateLimiter>>,
    throttle: Arc<Throttle>,
    traffic: Arc<Traffic>,
    gate: Arc<Gate>,
}

/// A failed call with the number of attempts made.
#[derive(Debug)]
pub struct Failure {
    /// The last error.
    pub error: ApiError,
    /// Attempts made.
    pub attempts: u32,
}

impl Client {
    /// Builds a client. Fails on a base URL that is not http(s) or a TLS setup error.
    pub fn new(cfg: ClientConfig) -> Result<Self, ApiError> {
        if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
            return Err(ApiError::Setup(format!(
                "base URL {:?} must start with http:// or https://",
                cfg.base_url
            )));
        }
        // reqwest is built without a default crypto provider (ring builds faster
        // than aws-lc); installing twice is harmless, so the result is ignored.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(Duration::from_secs(10).min(cfg.timeout))
            .pool_max_idle_per_host(cfg.concurrency.max(1))
            .user_agent(concat!("orgledger/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Setup(e.to_string()))?;
        let limiter = cfg
            .rps
            .filter(|rps| *rps > 0.0)
            .map(|rps| Arc::new(RateLimiter::new(rps)));
        Ok(Client {
            http,
            permits: Arc::new(Semaphore::new(cfg.concurrency.max(1))),
            limiter,
            throttle: Arc::new(Throttle::default()),
            traffic: Arc::new(Traffic::default()),
            gate: Arc::new(Gate::new(cfg.outage)),
            cfg: Arc::new(cfg),
        })
    }

    /// Requests and bytes so far.
    pub fn traffic(&self) -> &Traffic {
        &self.traffic
    }

    /// Requests in flight at most.
    pub fn concurrency(&self) -> usize {
        self.cfg.concurrency.max(1)
    }

    /// Whether the service is taken to be up, down (requests wait) or given up on.
    pub fn outage(&self) -> &Gate {
        &self.gate
    }

    /// The pace learnt from the service's 429 answers.
    pub fn throttle(&self) -> &Throttle {
        &self.throttle
    }

    /// The retry policy.
    pub fn backoff(&self) -> Backoff {
        self.cfg.backoff
    }

    /// The same client (permits, rate limit, counters shared) with another retry
    /// policy: the sync's second pass over documents that failed.
    pub fn with_backoff(&self, backoff: Backoff) -> Client {
        let mut cfg = (*self.cfg).clone();
        cfg.backoff = backoff;
        Client {
            cfg: Arc::new(cfg),
            ..self.clone()
        }
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.cfg.base_url
    }

    /// `get-organization`: all information about one organization.
    pub async fn get_organization(
        &self,
        org_id: i64,
    ) -> Result<Fetched<OrganizationResponse>, Failure> {
        self.get(Operation::GetOrganization, op::organization_path(org_id))
            .await
    }

    /// `get-whitelabel-user`: one white label user with trials and daily metrics.
    pub async fn get_whitelabel_user(
        &self,
        org_id: i64,
        user_id: i64,
    ) -> Result<Fetched<WhitelabelUserResponse>, Failure> {
        self.get(
            Operation::GetWhitelabelUser,
            op::whitelabel_user_path(org_id, user_id),
        )
        .await
    }

    /// `list-organizations`: organizations of the caller.
    pub async fn list_organizations(&self) -> Result<Fetched<OrganizationListResponse>, Failure> {
        self.get(
            Operation::ListOrganizations,
            op::ORGANIZATIONS_PATH.to_string(),
        )
        .await
    }

    /// `list-organizations`, reading only the organizations' ids (discovery).
    pub async fn list_organization_ids(&self) -> Result<Fetched<OrganizationIdList>, Failure> {
        self.get(
            Operation::ListOrganizations,
            op::ORGANIZATIONS_PATH.to_string(),
        )
        .await
    }

    /// `list-user-organizations`: organizations of a user (JWT only).
    pub async fn list_user_organizations(
        &self,
        user_id: i64,
    ) -> Result<Fetched<OrganizationListResponse>, Failure> {
        self.get(
            Operation::ListUserOrganizations,
            op::user_organizations_path(user_id),
        )
        .await
    }

    /// `list-user-organizations` read for the mirror: each organization's id and name only (see
    /// [`OrganizationLinkList`]).
    pub async fn list_user_organization_links(
        &self,
        user_id: i64,
    ) -> Result<Fetched<OrganizationLinkList>, Failure> {
        self.get(
            Operation::ListUserOrganizations,
            op::user_organizations_path(user_id),
        )
        .await
    }

    /// `list-projects`: active projects.
    pub async fn list_projects(&self) -> Result<Fetched<ProjectListResponse>, Failure> {
        self.get(Operation::ListProjects, op::PROJECTS_PATH.to_string())
            .await
    }

    /// `get-project-info`: the full information of one project.
    pub async fn get_project_info(
        &self,
        project_id: i64,
        impulse_id: Option<i64>,
    ) -> Result<Fetched<ProjectInfoResponse>, Failure> {
        self.get(
            Operation::GetProjectInfo,
            op::project_info_path(project_id, impulse_id),
        )
        .await
    }

    /// `list-user-projects`: projects of the current user.
    pub async fn list_user_projects(&self) -> Result<Fetched<ProjectListResponse>, Failure> {
        self.get(
            Operation::ListUserProjects,
            op::USER_PROJECTS_PATH.to_string(),
        )
        .await
    }

    /// `create-project`: creates a project in the white label context. The request is
    /// validated before anything is sent; it is not retried after a timeout, since
    /// the project may have been created.
    pub async fn create_project(
        &self,
        org_id: i64,
        request: &CreateProjectRequest,
    ) -> Result<Fetched<CreateProjectResponse>, Failure> {
        let operation = Operation::CreateProject;
        request.validate().map_err(|cause| Failure {
            error: ApiError::InvalidRequest {
                op: operation,
                cause,
            },
            attempts: 0,
        })?;
        let path = op::create_project_path(org_id);
        let body = serde_json::to_vec(request).map_err(|e| Failure {
            error: ApiError::Setup(e.to_string()),
            attempts: 0,
        })?;
        self.attempt(operation, &path, Some(body))
            .await
            .map(|mut fetched| {
                fetched.attempts = 1;
                fetched
            })
            .map_err(|error| Failure { error, attempts: 1 })
    }

    async fn get<T: DeserializeOwned + ApiResponse>(
        &self,
        operation: Operation,
        path: String,
    ) -> Result<Fetched<T>, Failure> {
        // Attempts made, and retries spent: a failure while the service is down
        // is the outage's and costs the document none.
        let (mut attempts, mut retries) = (0, 0);
        loop {
            self.wait_for_service(operation)
                .await
                .map_err(|error| Failure { error, attempts })?;
            attempts += 1;
            let error = match self.attempt(operation, &path, None).await {
                Ok(mut fetched) => {
                    self.gate.answered(&path, Some(fetched.raw.len()));
                    fetched.attempts = attempts;
                    return Ok(fetched);
                }
                Err(error) => error,
            };
            let outage = if error.points_to_outage() {
                self.gate.failed(&path, &cause(&error))
            } else {
                self.gate.answered(&path, None);
                false
            };
            if !error.is_retryable() || (!outage && retries >= self.cfg.backoff.max_retries) {
                return Err(Failure { error, attempts });
            }
            if !outage {
                let delay = self.cfg.backoff.delay(retries, error.retry_after());
                tracing::debug!(%operation, %path, %error, ?delay, "retrying");
                tokio::time::sleep(delay).await;
                retries += 1;
            }
        }
    }

    /// Returns at once while the service is up; while it is down, waits (probing
    /// when it is this request's turn) until it answers again or the outage limit
    /// runs out.
    async fn wait_for_service(&self, operation: Operation) -> Result<(), ApiError> {
        let mut phase = self.gate.subscribe();
        loop {
            match self.gate.turn() {
                Turn::Go => return Ok(()),
                Turn::GaveUp(Phase::GaveUp {
                    since,
                    waited,
                    last,
                }) => {
                    return Err(ApiError::Unreachable {
                        since: since.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
                        waited: span(waited),
                        last,
                    });
                }
                Turn::GaveUp(_) => return Ok(()),
                Turn::Probe(probe) => {
                    let result = self.probe(operation, &probe.path).await;
                    probe.finish(result);
                }
                Turn::Wait(until) => {
                    tokio::select! {
                        _ = phase.changed() => {}
                        _ = tokio::time::sleep_until(until) => {}
                    }
                }
            }
        }
    }

    /// One request to a path that answered before: `Ok` when the service answers
    /// (whatever it says, unless it is a gateway's or an unavailable answer).
    async fn probe(&self, operation: Operation, path: &str) -> Result<(), (String, Option<u64>)> {
        match self
            .attempt::<crate::api::models::Envelope>(operation, path, None)
            .await
        {
            Err(error) if error.points_to_outage() => {
                tracing::debug!(%path, %error, "probe: the service is still away");
                Err((cause(&error), error.retry_after()))
            }
            _ => Ok(()),
        }
    }

    /// One HTTP exchange: permit, pacing, send, read, decode, envelope.
    async fn attempt<T: DeserializeOwned + ApiResponse>(
        &self,
        operation: Operation,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Fetched<T>, ApiError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| ApiError::Setup(e.to_string()))?;
        // The adaptive pace first, the hard cap last: a request held back by the
        // first must not start closer to the previous one than the cap allows.
        let sent = self.throttle.wait().await;
        if let Some(limiter) = &self.limiter {
            limiter.wait().await;
        }
        let url = format!("{}{}", self.cfg.base_url.trim_end_matches('/'), path);
        let mut request = match body {
            Some(body) => self
                .http
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body),
            None => self.http.get(&url),
        };
        for (header, secret) in [
            (API_KEY_HEADER, &self.cfg.credentials.api_key),
            (JWT_HEADER, &self.cfg.credentials.jwt),
        ] {
            if let Some(secret) = secret {
                request = request.header(header, sensitive_header(header, secret)?);
            }
        }
        self.traffic.requests.fetch_add(1, Ordering::Relaxed);
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(operation, &url, e))?;
        let status = response.status().as_u16();
        let server_time = header_time(&response);
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if status == 429 {
            self.throttle.limited(sent, retry_after);
        } else {
            self.throttle.accepted();
        }
        let raw = self.read_body(operation, &url, response).await?;
        if status != 200 {
            return Err(ApiError::Http {
                op: operation,
                url: url.clone(),
                status,
                excerpt: excerpt(&raw),
                retry_after,
            });
        }
        let value: T = parse_json(&raw).map_err(|e| ApiError::Decode {
            op: operation,
            url: url.clone(),
            detail: decode_detail(&raw, &e),
        })?;
        if !value.success() {
            return Err(ApiError::Unsuccessful {
                op: operation,
                url,
                message: value.error_text().unwrap_or("(no error text)").to_string(),
            });
        }
        Ok(Fetched {
            value,
            raw,
            server_time,
            attempts: 1,
        })
    }

    async fn read_body(
        &self,
        operation: Operation,
        url: &str,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, ApiError> {
        let limit = self.cfg.max_body_bytes;
        let mut body =
            Vec::with_capacity(response.content_length().unwrap_or(0).min(limit) as usize);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(operation, url, e))?
        {
            self.traffic
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(ApiError::TooLarge {
                    op: operation,
                    url: url.to_string(),
                    limit,
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn transport_error(&self, operation: Operation, url: &str, e: reqwest::Error) -> ApiError {
        if e.is_timeout() {
            ApiError::Timeout {
                op: operation,
                url: url.to_string(),
                secs: self.cfg.timeout.as_secs(),
            }
        } else {
            // The error names the URL already; without it reqwest's text (never
            // headers, so no credential) does not repeat it.
            ApiError::Connect {
                op: operation,
                url: url.to_string(),
                reason: crate::cause::chain(&e.without_url()),
            }
        }
    }
}

/// What a failure met, without the operation and URL (a probe's path is not the
/// document that waits).
fn cause(error: &ApiError) -> String {
    match error {
        ApiError::Connect { reason, .. } => format!("no connection ({reason})"),
        ApiError::Timeout { secs, .. } => format!("no answer within {secs} s"),
        ApiError::Http { status, .. } => format!("HTTP {status}"),
        other => other.to_string(),
    }
}

/// A header value marked sensitive, so the HTTP stack never prints it.
fn sensitive_header(name: &str, secret: &Secret) -> Result<reqwest::header::HeaderValue, ApiError> {
    let mut value = reqwest::header::HeaderValue::from_str(secret.expose()).map_err(|_| {
        ApiError::Setup(format!(
            "the credential for {name} contains characters not allowed in an HTTP header"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The server's `Date` header as a UTC time.
fn header_time(response: &reqwest::Response) -> Option<DateTime<Utc>> {
    let text = response
        .headers()
        .get(reqwest::header::DATE)?
        .to_str()
        .ok()?;
    DateTime::parse_from_rfc2822(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Parses a body. UTF-8 is checked once over the whole body: the slice parser
/// checks every string (each key of a million daily-metrics records) on its own,
/// which cost more than the one pass. A body that is not UTF-8 goes through the
/// slice parser, whose error names the spot.
fn parse_json<T: serde::de::DeserializeOwned + ApiResponse>(
    raw: &[u8],
) -> Result<T, serde_json::Error> {
    match std::str::from_utf8(raw) {
        Ok(text) => T::from_json(text),
        Err(_) => serde_json::from_slice(raw),
    }
}

/// Bytes of a body looked at for an excerpt: enough for an error text or a title,
/// and a 50 MB body is not copied to describe it.
const EXCERPT_SCAN: usize = 4096;

/// The first 200 characters of a body, printable, for error messages: the service's
/// `error` text, the title of an HTML error page, or the start of the body.
fn excerpt(raw: &[u8]) -> String {
    if let Ok(envelope) = serde_json::from_slice::<serde_json::Value>(raw)
        && let Some(text) = envelope.get("error").and_then(|e| e.as_str())
    {
        return text.chars().take(200).collect();
    }
    let head = &raw[..raw.len().min(EXCERPT_SCAN)];
    if let Some(title) = markup_title(head) {
        return format!("an HTML page titled {title:?}");
    }
    let text = String::from_utf8_lossy(head);
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if cleaned.trim().is_empty() {
        "(empty body)".to_string()
    } else {
        cleaned
    }
}

/// The text of an HTML `<title>`, when the body starts like markup and has one.
fn markup_title(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    if !text.trim_start().starts_with('<') {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: String = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect();
    (!title.is_empty()).then_some(title)
}

/// Why a status-200 body does not decode, in words an operator can act on: an empty
/// body, an HTML/XML page (a proxy's error page), bytes that are not UTF-8, or the
/// parser's message with line and column.
fn decode_detail(raw: &[u8], error: &serde_json::Error) -> String {
    let Some(first) = raw.iter().position(|b| !b.is_ascii_whitespace()) else {
        return format!(
            "the body is empty ({} bytes of whitespace at most)",
            raw.len()
        );
    };
    if raw[first] == b'<' {
        return format!(
            "expected JSON, got markup (an HTML or XML page): {}",
            excerpt(raw)
        );
    }
    match std::str::from_utf8(raw) {
        Err(utf8) => format!(
            "{error} (the body is not valid UTF-8: bad byte at offset {})",
            utf8.valid_up_to()
        ),
        Ok(_) => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_prefers_the_envelope_error_and_cleans_binary() {
        assert_eq!(
            excerpt(br#"{"success":false,"error":"no such org"}"#),
            "no such org"
        );
        assert_eq!(excerpt(b""), "(empty body)");
        let html = excerpt(b"<html>\n<title>502 Bad Gateway</title>");
        assert!(html.contains("502 Bad Gateway") && !html.contains('\n'));
        assert_eq!(excerpt(&[b'x'; 500]).len(), 200);
        let page = b"<!DOCTYPE html><html><head><style>body{}</style>\n<TITLE>\n 503 Service\n Unavailable </TITLE>";
        assert_eq!(
            excerpt(page),
            "an HTML page titled \"503 Service Unavailable\""
        );
    }

    #[test]
    fn decode_detail_names_empty_markup_and_non_utf8_bodies() {
        let detail = |raw: &[u8]| {
            let e = serde_json::from_slice::<serde_json::Value>(raw).expect_err("bad body");
            decode_detail(raw, &e)
        };
        assert!(detail(b"").contains("the body is empty"));
        assert!(detail(b" \n ").contains("the body is empty"));
        assert!(detail(b"<html><title>Oops</title>").contains("HTML page titled \"Oops\""));
        assert!(detail(b"{\"a\":\"\xff\"}").contains("not valid UTF-8: bad byte at offset 6"));
        assert!(detail(b"{\"a\":").contains("EOF while parsing"));
    }

    #[test]
    fn rejects_a_base_url_without_scheme() {
        let err = Client::new(ClientConfig::new("localhost:8080", Credentials::default()))
            .expect_err("must fail");
        assert!(err.to_string().contains("localhost:8080"));
    }
}
