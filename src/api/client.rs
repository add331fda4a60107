//! The HTTP client: one async method per operation of the interface.
//!
//! Each call takes a concurrency permit (so a sync never has more than N requests
//! in flight), waits for its rate-limit slot, sends the credentials, reads the body
//! up to a size limit, decodes it once into the operation's typed response and
//! checks the envelope. Transient failures are retried with backoff; the result
//! carries the raw body (so fields the models do not name are kept) and the
//! server's `Date` (the sync's observation time).

use crate::api::error::{ApiError, Retry};
use crate::api::list_stream::{ChunkReader, ListEnd, Tap, parse_list};
use crate::api::models::{
    ApiResponse, CreateProjectRequest, CreateProjectResponse, OrganizationIdList,
    OrganizationLinkList, OrganizationListResponse, OrganizationResponse, ProjectInfoResponse,
    ProjectListResponse, WhitelabelUserResponse,
};
use crate::api::operation::{self as op, Operation};
use crate::api::origin;
use crate::api::outage::{Gate, OutagePolicy, Phase, Turn, span};
use crate::api::pacing::{Backoff, RATE_LIMITED_ATTEMPTS, REFUSED_ATTEMPTS, RateLimiter};
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

/// What takes the elements of a list read by [`Client::stream_list`].
#[derive(Debug)]
pub struct Sink<F> {
    /// Called with each batch of elements.
    pub sink: F,
    /// Whether it may block the thread it runs on.
    pub may_block: bool,
}

/// A list document read as a stream by [`Client::stream_list`].
#[derive(Debug)]
pub struct Streamed<P> {
    /// The tap every byte of the body went through.
    pub tap: P,
    /// Elements handed on.
    pub elements: usize,
    /// Size of the body.
    pub bytes: usize,
    /// The server's `Date` header, when it sent a valid one.
    pub server_time: Option<DateTime<Utc>>,
    /// Attempts it took (1 = first try).
    pub attempts: u32,
}

/// Body chunks (tens of kilobytes each) queued between the download and the
/// parser of a streamed list.
const STREAM_CHUNKS: usize = 8;

/// Bodies of streamed lists up to this size (as their `Content-Length` says) are
/// read whole and parsed in place when their sink does not block: a list of one
/// user's organizations is a few kilobytes.
const PARSE_IN_PLACE: usize = 256 << 10;

/// A list document being read.
struct List {
    operation: Operation,
    url: String,
    server_time: Option<DateTime<Utc>>,
}

impl List {
    /// The answer once the parser is done: `head` is the body's start, to
    /// describe a body that is not JSON.
    fn ended<P>(
        self,
        end: Result<ListEnd, serde_json::Error>,
        head: &[u8],
        tap: P,
        bytes: usize,
    ) -> Result<Streamed<P>, ApiError> {
        let end = end.map_err(|e| {
            if e.io_error_kind() == Some(std::io::ErrorKind::FileTooLarge) {
                ApiError::TooLarge {
                    op: self.operation,
                    url: self.url.clone(),
                    limit: crate::api::list_stream::ELEMENT_LIMIT,
                    part: "one element of the list",
                }
            } else {
                ApiError::Decode {
                    op: self.operation,
                    url: self.url.clone(),
                    detail: decode_detail(head, &e),
                }
            }
        })?;
        if !end.success {
            return Err(ApiError::Unsuccessful {
                op: self.operation,
                url: self.url,
                message: end.error.unwrap_or_else(|| "(no error text)".into()),
            });
        }
        Ok(Streamed {
            tap,
            elements: end.elements,
            bytes,
            server_time: self.server_time,
            attempts: 1,
        })
    }
}

/// Parses a list into `sink`.
fn consume<T, F, R>(
    sink: &std::sync::Mutex<F>,
    reader: R,
    field: &str,
    batch: usize,
) -> Result<ListEnd, serde_json::Error>
where
    T: DeserializeOwned,
    F: FnMut(Vec<T>),
    R: std::io::Read,
{
    match sink.lock() {
        Ok(mut sink) => parse_list::<T, _, _>(reader, field, batch, &mut *sink),
        // Only a panic in an earlier attempt's sink poisons it.
        Err(_) => Err(serde::de::Error::custom("the list's consumer failed")),
    }
}

/// A response whose body is still to be read, with its concurrency permit.
struct Sent<'a> {
    _permit: tokio::sync::SemaphorePermit<'a>,
    response: reqwest::Response,
    url: String,
    status: u16,
    server_time: Option<DateTime<Utc>>,
    retry_after: Option<u64>,
}

/// Bytes of an error answer's body read for its excerpt.
const ERROR_BODY: u64 = 64 << 10;

/// A body read up to a limit.
enum Capped {
    /// The whole body.
    Whole(Vec<u8>),
    /// Its first `limit` bytes: more followed.
    Cut(Vec<u8>),
}

/// Makes room for `more` bytes, doubling the capacity but never past `limit`.
fn grow_within(body: &mut Vec<u8>, more: usize, limit: usize) {
    let needed = body.len() + more;
    if needed > body.capacity() {
        let target = needed.max(body.capacity().saturating_mul(2)).min(limit);
        body.reserve_exact(target - body.len());
    }
}

/// What one document's attempts have spent so far: transient failures, 429s and
/// deliberate refusals each have a budget of their own.
#[derive(Debug, Default)]
struct Tries {
    attempts: u32,
    retries: u32,
    limited: u32,
    refusals: u32,
}

impl Tries {
    /// The wait before the next attempt, or `None` when `error` ends the call. A
    /// 429's wait is the throttle's to say (every request waits its `Retry-After`,
    /// or amid failures this one alone).
    fn next_delay(
        &mut self,
        error: &ApiError,
        backoff: &Backoff,
        throttle: &Throttle,
    ) -> Option<Duration> {
        match error.retry() {
            Retry::Final => None,
            Retry::Refused => {
                self.refusals += 1;
                (self.refusals < REFUSED_ATTEMPTS).then(|| backoff.delay(self.refusals - 1, None))
            }
            Retry::RateLimited => {
                self.limited += 1;
                (self.limited < RATE_LIMITED_ATTEMPTS)
                    .then(|| throttle.own_wait(error.retry_after()))
            }
            Retry::Transient => {
                let delay = (self.retries < backoff.max_retries)
                    .then(|| backoff.delay(self.retries, error.retry_after()));
                self.retries += 1;
                delay
            }
        }
    }
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
    /// The configured base URL, parsed: the only origin credentials go to.
    base: Arc<reqwest::Url>,
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
        let base = origin::parse_http_url(&cfg.base_url)
            .map_err(|why| ApiError::Setup(format!("base URL {:?} {why}", cfg.base_url)))?;
        // reqwest is built without a default crypto provider (ring builds faster
        // than aws-lc); installing twice is harmless, so the result is ignored.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = origin::client_builder(&base)
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
            base: Arc::new(base),
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
        let (mut fetched, attempts) = self
            .retrying(operation, &path, || async {
                let fetched = self.attempt::<T>(operation, &path, None).await?;
                let size = fetched.raw.len();
                Ok((fetched, size))
            })
            .await?;
        fetched.attempts = attempts;
        Ok(fetched)
    }

    /// A list document read as a stream (see [`crate::api::list_stream`]): the
    /// elements of its `field` go to `sink` in batches of `batch` while the body
    /// arrives, and every byte of the body passes through a new tap `P` (one per
    /// attempt), which comes back with the answer. A retried list is handed on
    /// again from its start. The body-size limit does not apply: no streamed body
    /// is held whole. A `sink` that may block (sending to a bounded queue) always
    /// runs on a thread of its own; one that does not may run on the runtime's
    /// worker, for a body too small to be worth a thread.
    pub async fn stream_list<T, F, P>(
        &self,
        operation: Operation,
        path: &str,
        field: &'static str,
        batch: usize,
        sink: Sink<F>,
    ) -> Result<Streamed<P>, Failure>
    where
        T: DeserializeOwned + 'static,
        F: FnMut(Vec<T>) + Send + 'static,
        P: Tap + Default,
    {
        self.stream_list_tapped(operation, path, (field, batch), sink, P::default)
            .await
    }

    /// [`Client::stream_list`] with each attempt's tap made by `tap`.
    pub async fn stream_list_tapped<T, F, P>(
        &self,
        operation: Operation,
        path: &str,
        (field, batch): (&'static str, usize),
        sink: Sink<F>,
        tap: impl Fn() -> P,
    ) -> Result<Streamed<P>, Failure>
    where
        T: DeserializeOwned + 'static,
        F: FnMut(Vec<T>) + Send + 'static,
        P: Tap,
    {
        let in_place_max = if sink.may_block { 0 } else { PARSE_IN_PLACE };
        let sink = Arc::new(std::sync::Mutex::new(sink.sink));
        let (mut streamed, attempts) = self
            .retrying(operation, path, || {
                let (sink, tap) = (Arc::clone(&sink), tap());
                async move {
                    let streamed = self
                        .attempt_stream(operation, path, (field, batch, in_place_max), sink, tap)
                        .await?;
                    let size = streamed.bytes;
                    Ok((streamed, size))
                }
            })
            .await?;
        streamed.attempts = attempts;
        Ok(streamed)
    }

    /// Runs `attempt` until it succeeds, a failure is final or the retries run
    /// out; returns its answer and the attempts made. `attempt` also returns the
    /// size of the good answer's body (the outage probe prefers small documents).
    async fn retrying<R, Fut>(
        &self,
        operation: Operation,
        path: &str,
        mut attempt: impl FnMut() -> Fut,
    ) -> Result<(R, u32), Failure>
    where
        Fut: std::future::Future<Output = Result<(R, usize), ApiError>>,
    {
        let mut tries = Tries::default();
        loop {
            self.wait_for_service(operation)
                .await
                .map_err(|error| Failure {
                    error,
                    attempts: tries.attempts,
                })?;
            tries.attempts += 1;
            let error = match attempt().await {
                Ok((answer, size)) => {
                    self.gate.answered(path, Some(size));
                    return Ok((answer, tries.attempts));
                }
                Err(error) => error,
            };
            let outage = if error.points_to_outage() {
                self.gate.failed(path, &cause(&error))
            } else {
                self.gate.answered(path, None);
                false
            };
            // A failure while the service is down is the outage's: it costs the
            // document no retry, and the gate decides when to try again.
            let delay = if outage {
                Some(Duration::ZERO)
            } else {
                tries.next_delay(&error, &self.cfg.backoff, &self.throttle)
            };
            let Some(delay) = delay else {
                return Err(Failure {
                    error,
                    attempts: tries.attempts,
                });
            };
            if !delay.is_zero() {
                tracing::debug!(%operation, %path, %error, ?delay, "retrying");
                tokio::time::sleep(delay).await;
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
        let sent = self.send(operation, path, body).await?;
        if sent.status != 200 {
            return Err(self.refusal(operation, sent).await);
        }
        let raw = self.read_body(operation, &sent.url, sent.response).await?;
        let url = sent.url;
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
            server_time: sent.server_time,
            attempts: 1,
        })
    }

    /// One HTTP exchange of a list read as a stream: the body's chunks go to a
    /// parser on a thread of its own through a small channel, so the download
    /// waits for the parser and its sink, and neither holds more than a few
    /// chunks. A body that says it is small is read whole and parsed in place: a
    /// thread for it would cost more than its bytes.
    async fn attempt_stream<T, F, P>(
        &self,
        operation: Operation,
        path: &str,
        (field, batch, in_place_max): (&'static str, usize, usize),
        sink: Arc<std::sync::Mutex<F>>,
        mut tap: P,
    ) -> Result<Streamed<P>, ApiError>
    where
        T: DeserializeOwned + 'static,
        F: FnMut(Vec<T>) + Send + 'static,
        P: Tap,
    {
        let sent = self.send(operation, path, None).await?;
        if sent.status != 200 {
            return Err(self.refusal(operation, sent).await);
        }
        let url = sent.url;
        let mut response = sent.response;
        let list = List {
            operation,
            url,
            server_time: sent.server_time,
        };
        if response
            .content_length()
            .is_some_and(|n| n <= in_place_max as u64)
        {
            let raw = self.read_body(operation, &list.url, response).await?;
            tap.feed(&raw);
            let end = consume(&sink, &raw[..], field, batch);
            return list.ended(end, &raw, tap, raw.len());
        }
        let (chunks, received) = tokio::sync::mpsc::channel(STREAM_CHUNKS);
        let (parsed, parser) = tokio::sync::oneshot::channel();
        // A thread of its own rather than the runtime's blocking pool: the pool
        // keeps idle threads, each with its allocator's cached pages, and those
        // cost more memory than a list's whole parse.
        std::thread::Builder::new()
            .name("orgledger-list".into())
            .spawn(move || {
                let mut reader = ChunkReader::new(received, tap);
                let end = consume(&sink, &mut reader, field, batch);
                let _ = parsed.send((end, reader));
            })
            .map_err(|e| ApiError::Setup(format!("cannot start the list parser: {e}")))?;
        let mut bytes = 0;
        let mut transport = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    bytes += chunk.len();
                    self.traffic
                        .bytes
                        .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    // A parser that stopped (a broken document) takes no more.
                    if chunks.send(chunk).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    transport = Some(self.transport_error(operation, &list.url, e));
                    break;
                }
            }
        }
        drop(chunks);
        let (end, reader) = parser
            .await
            .map_err(|_| ApiError::Setup("the list parser stopped".into()))?;
        // A body cut off by the connection reads as broken JSON: the transport's
        // error is the cause.
        if let Some(error) = transport {
            return Err(error);
        }
        let head = reader.head().to_vec();
        list.ended(end, &head, reader.into_tap(), bytes)
    }

    /// The error of an answer other than 200: a redirect that was not followed
    /// (where it pointed and why), or the status with an excerpt of the body.
    async fn refusal(&self, operation: Operation, sent: Sent<'_>) -> ApiError {
        let location = sent
            .response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        if let Some(refused) =
            origin::refused_redirect(sent.status, location, sent.response.url(), &self.base)
        {
            return ApiError::Redirected {
                op: operation,
                url: sent.url,
                status: sent.status,
                to: refused.to,
                why: refused.why,
            };
        }
        // An error page is read only as far as its excerpt needs: a service that
        // sends an endless one costs no memory.
        let raw = match self
            .read_capped(operation, &sent.url, sent.response, ERROR_BODY)
            .await
        {
            Ok(Capped::Whole(raw) | Capped::Cut(raw)) => raw,
            Err(error) => return error,
        };
        ApiError::Http {
            op: operation,
            url: sent.url,
            status: sent.status,
            excerpt: excerpt(&raw),
            retry_after: sent.retry_after,
        }
    }

    /// Sends a request once its permit and pace allow: the response's status and
    /// headers, its body still unread (the permit is held until the body is read).
    async fn send(
        &self,
        operation: Operation,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Sent<'_>, ApiError> {
        let permit = self
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
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                self.throttle.unanswered();
                return Err(self.transport_error(operation, &url, e));
            }
        };
        let status = response.status().as_u16();
        let server_time = header_time(&response);
        let retry_after = crate::api::pacing::retry_after(response.headers());
        if status == 429 {
            self.throttle.limited(sent, retry_after);
        } else {
            self.throttle.answered(status);
        }
        Ok(Sent {
            _permit: permit,
            response,
            url,
            status,
            server_time,
            retry_after,
        })
    }

    /// A body read whole, or the error that names the operation's limit.
    async fn read_body(
        &self,
        operation: Operation,
        url: &str,
        response: reqwest::Response,
    ) -> Result<Vec<u8>, ApiError> {
        let limit = operation.body_limit();
        match self.read_capped(operation, url, response, limit).await? {
            Capped::Whole(body) => Ok(body),
            Capped::Cut(_) => Err(ApiError::TooLarge {
                op: operation,
                url: url.to_string(),
                limit,
                part: "the response",
            }),
        }
    }

    /// Reads at most `limit` bytes of a body. The buffer never grows past `limit`
    /// (it doubles up to it, or takes the announced length at once), so a body that
    /// never ends holds `limit` bytes and is dropped, with its connection, as soon
    /// as one byte more arrives.
    async fn read_capped(
        &self,
        operation: Operation,
        url: &str,
        mut response: reqwest::Response,
        limit: u64,
    ) -> Result<Capped, ApiError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let announced = response.content_length().unwrap_or(0);
        let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(0).min(limit));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(operation, url, e))?
        {
            self.traffic
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            let room = limit - body.len();
            if chunk.len() > room {
                grow_within(&mut body, room, limit);
                body.extend_from_slice(&chunk[..room]);
                return Ok(Capped::Cut(body));
            }
            grow_within(&mut body, chunk.len(), limit);
            body.extend_from_slice(&chunk);
        }
        Ok(Capped::Whole(body))
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
        // A character cut off at the end may be the end of a body's start only.
        Err(utf8) if utf8.error_len().is_some() => format!(
            "{error} (the body is not valid UTF-8: bad byte at offset {})",
            utf8.valid_up_to()
        ),
        _ => error.to_string(),
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
