//! HTTP routes: the eight operations under `/v1/api`, the admin routes under
//! `/sandbox`, fault injection, and the `Date` header that follows the world clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::DateTime;
use serde_json::Value;

use super::auth::{self, ApiError, Credential, Op};
use super::edit::{Edit, EditError};
use super::faults::{Fault, FaultInjector};
use super::render::{self, Iso};
use super::world::WorldState;

/// Largest time travel in one call (ten years).
const MAX_ADVANCE_DAYS: u32 = 3650;

pub(crate) struct AppState {
    pub(crate) world: RwLock<WorldState>,
    /// The world clock in seconds, for the `Date` header without taking the lock.
    clock: AtomicI64,
    faults: FaultInjector,
    /// Paths made to fail through `/sandbox/fail`.
    failing: Mutex<HashMap<String, Failing>>,
    /// Paths answered with a fixed response through `/sandbox/override`.
    overrides: Mutex<HashMap<String, Canned>>,
    cache: Mutex<HashMap<CacheKey, (u64, Bytes)>>,
}

/// A path made to fail through `/sandbox/fail`: its status, and how many more
/// requests it fails (`None`: until healed).
#[derive(Debug, Clone, Copy)]
struct Failing {
    status: u16,
    left: Option<u32>,
}

/// A response installed by `/sandbox/override`, served as is (raw bytes).
#[derive(Debug, Clone)]
struct Canned {
    status: StatusCode,
    content_type: HeaderValue,
    body: Bytes,
    /// A `Location` header (a redirect).
    location: Option<HeaderValue>,
    /// The body is sent again and again, chunked, for as long as the client reads.
    endless: bool,
}

impl Canned {
    fn into_response(self) -> Response {
        let body = if self.endless {
            let chunk = self.body;
            Body::from_stream(futures_util::stream::repeat_with(move || {
                Ok::<Bytes, std::convert::Infallible>(chunk.clone())
            }))
        } else {
            Body::from(self.body)
        };
        let mut resp = (
            self.status,
            [(header::CONTENT_TYPE, self.content_type)],
            body,
        )
            .into_response();
        if let Some(location) = self.location {
            resp.headers_mut().insert(header::LOCATION, location);
        }
        resp
    }
}

/// Largest body `/sandbox/override` accepts: room for a 50 MB bad response.
const MAX_OVERRIDE_BYTES: usize = 64 * 1024 * 1024;

/// Responses that are costly to render and shared by many requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum CacheKey {
    WhiteLabelOrganizations(usize),
    WhiteLabelProjects(usize),
}

pub(crate) type Shared = Arc<AppState>;

impl AppState {
    pub(crate) fn new(ws: WorldState, faults: FaultInjector) -> Self {
        let now = ws.world.now.timestamp();
        Self {
            world: RwLock::new(ws),
            clock: AtomicI64::new(now),
            faults,
            failing: Mutex::new(HashMap::new()),
            overrides: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, WorldState> {
        self.world.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, WorldState> {
        self.world.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a mutation, re-indexes and moves the `Date` clock.
    pub(crate) fn mutate<R>(&self, f: impl FnOnce(&mut WorldState) -> R) -> R {
        let mut ws = self.write();
        let r = f(&mut ws);
        ws.reindex();
        self.clock
            .store(ws.world.now.timestamp(), Ordering::Relaxed);
        r
    }

    /// The status a failing path answers this request with, counted against its
    /// number of failures.
    fn failing_status(&self, path: &str) -> Option<u16> {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        let entry = failing.get_mut(path)?;
        let status = entry.status;
        match &mut entry.left {
            Some(1) => {
                failing.remove(path);
            }
            Some(left) => *left -= 1,
            None => {}
        }
        Some(status)
    }

    fn canned(&self, path: &str) -> Option<Canned> {
        let overrides = self.overrides.lock().unwrap_or_else(|e| e.into_inner());
        overrides.get(path).cloned()
    }

    fn cached(&self, ws: &WorldState, key: CacheKey, render: impl FnOnce() -> Vec<u8>) -> Bytes {
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((version, body)) = cache.get(&key)
                && *version == ws.version
            {
                return body.clone();
            }
        }
        let body = Bytes::from(render());
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|_, (v, _)| *v == ws.version);
        cache.insert(key, (ws.version, body.clone()));
        body
    }
}

pub(crate) fn router(state: Shared) -> Router {
    let api = Router::new()
        .route("/organizations", get(list_organizations))
        .route("/organizations/{organization_id}", get(organization_info))
        .route(
            "/organizations/{organization_id}/whitelabel/users/{user_id}",
            get(whitelabel_user),
        )
        .route(
            "/organizations/{organization_id}/whitelabel/projects",
            post(create_project),
        )
        .route("/users/{user_id}/organizations", get(user_organizations))
        .route("/projects", get(list_projects))
        .route("/user/projects", get(user_projects))
        .route("/{project_id}", get(project_info))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), inject_faults));
    Router::new()
        .nest("/v1/api", api)
        .route("/sandbox/advance", post(advance))
        .route("/sandbox/fail", post(fail).delete(heal))
        .route(
            "/sandbox/override",
            post(install_override)
                .delete(remove_override)
                .layer(DefaultBodyLimit::max(MAX_OVERRIDE_BYTES)),
        )
        .route("/sandbox/remove-project", post(remove_project))
        .route("/sandbox/remove-user", post(remove_user))
        .route("/sandbox/edit", post(edit))
        .route("/sandbox/outage", post(start_outage).delete(end_outage))
        .route("/sandbox/health", get(health))
        .route("/sandbox/stats", get(stats))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), world_date))
        .with_state(state)
}

// ---------------------------------------------------------------------------------
// Responses

fn json(status: u16, body: impl Into<Body>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.into(),
    )
        .into_response()
}

fn ok(body: impl Into<Body>) -> Response {
    json(200, body)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json(self.status, render::error_body(&self.message))
    }
}

type Answer = Result<Response, ApiError>;

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn credential(ws: &WorldState, headers: &HeaderMap) -> Result<Credential, ApiError> {
    auth::credential(
        ws,
        header_str(headers, "x-jwt-token"),
        header_str(headers, "x-api-key"),
    )
}

/// A positive integer path parameter (`3.0` is accepted, as ids sometimes travel as floats).
fn parse_id(raw: &str, name: &str) -> Result<i64, ApiError> {
    let bad = || ApiError::bad_request(format!("{name} must be a positive integer, got `{raw}`"));
    let id = raw.parse::<i64>().ok().or_else(|| {
        raw.parse::<f64>()
            .ok()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
            .map(|f| f as i64)
    });
    id.filter(|&i| i > 0).ok_or_else(bad)
}

fn path_error(e: PathRejection) -> ApiError {
    ApiError::bad_request(format!("bad path parameter: {e}"))
}

fn one_id(path: Result<Path<String>, PathRejection>, name: &str) -> Result<i64, ApiError> {
    let Path(raw) = path.map_err(path_error)?;
    parse_id(&raw, name)
}

// ---------------------------------------------------------------------------------
// The eight operations

/// get-organization (docs/api.md, op 1): `GET /v1/api/organizations/{organizationId}`.
async fn organization_info(
    State(s): State<Shared>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Answer {
    let org = one_id(path, "organizationId")?;
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::OrgInfo { org })?;
    let o = ws
        .org(org)
        .ok_or_else(|| ApiError::not_found(format!("organization {org} not found")))?;
    Ok(ok(render::org_info(&ws, o)))
}

/// get-whitelabel-user (docs/api.md, op 2):
/// `GET /v1/api/organizations/{organizationId}/whitelabel/users/{userId}`.
async fn whitelabel_user(
    State(s): State<Shared>,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Answer {
    let Path((org, user)) = path.map_err(path_error)?;
    let org = parse_id(&org, "organizationId")?;
    let user = parse_id(&user, "userId")?;
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::WhiteLabelUser { org, user })?;
    let u = ws
        .user(user)
        .ok_or_else(|| ApiError::not_found(format!("user {user} not found")))?;
    Ok(ok(render::whitelabel_user(&ws, u)))
}

/// list-organizations (docs/api.md, op 3): `GET /v1/api/organizations`.
async fn list_organizations(State(s): State<Shared>, headers: HeaderMap) -> Answer {
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::ListOrganizations)?;
    let render = || render::organizations(&ws, &auth::scope_organizations(&ws, cred));
    Ok(match cred {
        Credential::WhiteLabel(wl) => {
            ok(s.cached(&ws, CacheKey::WhiteLabelOrganizations(wl), render))
        }
        _ => ok(render()),
    })
}

/// list-user-organizations (docs/api.md, op 4): `GET /v1/api/users/{userId}/organizations`.
async fn user_organizations(
    State(s): State<Shared>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Answer {
    let user = one_id(path, "userId")?;
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::UserOrganizations { user })?;
    let Credential::WhiteLabel(wl) = cred else {
        return Err(ApiError::forbidden(
            "this operation is available only with a JWT",
        ));
    };
    Ok(ok(render::organizations(
        &ws,
        &auth::user_organizations(&ws, wl, user),
    )))
}

/// list-projects (docs/api.md, op 5): `GET /v1/api/projects`.
async fn list_projects(State(s): State<Shared>, headers: HeaderMap) -> Answer {
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::ListProjects)?;
    let render = || render::projects(&ws, &auth::scope_projects(&ws, cred));
    Ok(match cred {
        Credential::WhiteLabel(wl) => ok(s.cached(&ws, CacheKey::WhiteLabelProjects(wl), render)),
        _ => ok(render()),
    })
}

/// get-project-info (docs/api.md, op 6): `GET /v1/api/{projectId}?impulseId=`.
async fn project_info(
    State(s): State<Shared>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Answer {
    let project = one_id(path, "projectId")?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(format!("bad query: {e}")))?;
    let impulse = match query.get("impulseId").map(|s| s.trim()) {
        None | Some("") => None,
        Some(raw) => Some(parse_id(raw, "impulseId")?),
    };
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::ProjectInfo { project })?;
    let p = ws
        .project(project)
        .filter(|p| !p.quirks.info_gone)
        .ok_or_else(|| ApiError::not_found(format!("project {project} not found")))?;
    if p.quirks.info_fails {
        return Ok(ok(render::error_body(&format!(
            "failed to load the information of project {project}"
        ))));
    }
    if let Some(i) = impulse
        && i > p.impulses
    {
        return Err(ApiError::not_found(format!(
            "impulse {i} not found in project {project}"
        )));
    }
    Ok(ok(render::project_info(&ws, p, impulse)))
}

/// list-user-projects (docs/api.md, op 7): `GET /v1/api/user/projects`.
async fn user_projects(State(s): State<Shared>, headers: HeaderMap) -> Answer {
    let ws = s.read();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::UserProjects)?;
    let Credential::WhiteLabel(wl) = cred else {
        return Err(ApiError::forbidden(
            "an API key has no current user; use a JWT",
        ));
    };
    Ok(ok(render::projects(&ws, &auth::user_projects(&ws, wl))))
}

/// The validated body of create-project.
#[derive(Debug, PartialEq)]
pub(crate) struct NewProject {
    pub name: String,
    pub is_public: bool,
    pub owner_id: Option<i64>,
    pub owner_email: Option<String>,
}

/// Validates a create-project body. `ownerId` wins when both owner fields are given.
pub(crate) fn parse_new_project(body: &[u8]) -> Result<NewProject, ApiError> {
    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::bad_request(message)
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON body: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| bad("the body must be a JSON object"))?;
    let present = |k: &str| obj.get(k).filter(|v| !v.is_null());
    let name = match present("projectName") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) | None => return Err(bad("projectName is required")),
        Some(_) => return Err(bad("projectName must be a string")),
    };
    let is_public = match present("projectVisibility") {
        None => false,
        Some(Value::String(v)) if v == "public" => true,
        Some(Value::String(v)) if v == "private" => false,
        Some(_) => return Err(bad("projectVisibility must be `public` or `private`")),
    };
    let owner_id = match present("ownerId") {
        None => None,
        Some(v) => Some(
            v.as_i64()
                .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .filter(|&i| i > 0)
                .ok_or_else(|| bad("ownerId must be a positive integer"))?,
        ),
    };
    let owner_email = match present("ownerEmail") {
        None => None,
        Some(Value::String(e)) if e.contains('@') && !e.trim().is_empty() => {
            Some(e.trim().to_string())
        }
        Some(_) => return Err(bad("ownerEmail must be an e-mail address")),
    };
    if owner_id.is_none() && owner_email.is_none() {
        return Err(bad("either ownerId or ownerEmail is required"));
    }
    Ok(NewProject {
        name,
        is_public,
        owner_id,
        owner_email,
    })
}

/// create-project (docs/api.md, op 8):
/// `POST /v1/api/organizations/{organizationId}/whitelabel/projects`.
///
/// The project is created inside the path's organization (the white label's admin
/// organization), with the owner as its `isOwner` collaborator. An owner that does not
/// exist, or is outside the white label, gets 404.
async fn create_project(
    State(s): State<Shared>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    let org = one_id(path, "organizationId")?;
    let body = body.map_err(|e| ApiError::bad_request(format!("unreadable body: {e}")))?;
    let mut ws = s.write();
    let cred = credential(&ws, &headers)?;
    auth::authorize(&ws, cred, Op::CreateProject { org })?;
    let req = parse_new_project(&body)?;
    let wl = ws.org_wl(org);
    let owner = match (req.owner_id, &req.owner_email) {
        (Some(id), _) => ws.user(id).map(|u| u.id),
        (None, Some(email)) => ws
            .world
            .users
            .iter()
            .find(|u| u.deleted.is_none() && u.email.eq_ignore_ascii_case(email))
            .map(|u| u.id),
        (None, None) => None,
    }
    .filter(|&id| wl.is_some_and(|wl| ws.user_in_wl(id, wl)))
    .ok_or_else(|| {
        let who = req.owner_id.map_or_else(
            || req.owner_email.clone().unwrap_or_default(),
            |i| i.to_string(),
        );
        ApiError::not_found(format!("owner {who} not found in this white label"))
    })?;
    let (id, key) = ws
        .world
        .create_project(
            org,
            &super::world::OwnerRef::Id(owner),
            &req.name,
            req.is_public,
        )
        .map_err(|e| ApiError::not_found(e.to_string()))?;
    ws.reindex();
    drop(ws);
    Ok(ok(render::created(id, &key)))
}

async fn unknown_route() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(405, "method not allowed on this route")
}

// ---------------------------------------------------------------------------------
// Middleware

/// Every response carries the world clock as its `Date`: the sync uses it as the
/// observation time, which is how history "as of a date" works with time travel.
async fn world_date(State(s): State<Shared>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let secs = s.clock.load(Ordering::Relaxed);
    if let Some(t) = DateTime::from_timestamp(secs, 0) {
        let text = t.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().insert(header::DATE, v);
        }
    }
    resp
}

async fn inject_faults(State(s): State<Shared>, req: Request, next: Next) -> Response {
    // Inside the nested router the URI has lost its `/v1/api` prefix; match on the
    // original one so `/sandbox/fail` takes the full path the client sends.
    let path = req
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or_else(|| req.uri().path().to_string(), |u| u.path().to_string());
    s.faults.received();
    let latency = s.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if s.faults.in_outage() {
        let mut resp = ApiError::new(503, "service unavailable (injected outage)").into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return resp;
    }
    if !s.faults.admit() {
        s.faults.rate_limited();
        let mut resp =
            ApiError::new(429, "rate limit exceeded (requests per second)").into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    }
    if let Some(status) = s.failing_status(&path) {
        let mut resp = ApiError::new(status, "injected failure (/sandbox/fail)").into_response();
        if status == 429 {
            s.faults.rate_limited();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        return resp;
    }
    if let Some(canned) = s.canned(&path) {
        return canned.into_response();
    }
    let Some(fault) = s.faults.decide() else {
        return next.run(req).await;
    };
    match fault {
        Fault::ServerError(status) => {
            ApiError::new(status, "injected server error").into_response()
        }
        Fault::TooManyRequests => {
            s.faults.rate_limited();
            let mut resp = ApiError::new(429, "too many requests").into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            resp
        }
        Fault::Slow(pause) => {
            tokio::time::sleep(pause).await;
            next.run(req).await
        }
        Fault::Malformed => {
            ok(&b"{\"success\": true, \"data\": <html><body>502 Bad Gateway</body></html>"[..])
        }
        Fault::Truncated => {
            let resp = next.run(req).await;
            let (mut parts, body) = resp.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            parts.status = StatusCode::OK;
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(bytes.slice(..bytes.len() / 2)))
        }
        Fault::Envelope => ok(render::error_body("transient failure")),
    }
}

// ---------------------------------------------------------------------------------
// Admin routes

fn require_jwt(s: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let token = header_str(headers, "x-jwt-token")
        .map(str::trim)
        .unwrap_or("");
    if !token.is_empty() && s.read().idx.jwt.contains_key(token) {
        Ok(())
    } else {
        Err(ApiError::unauthorized(
            "admin routes need a white label JWT in x-jwt-token",
        ))
    }
}

type QueryMap = Result<Query<HashMap<String, String>>, QueryRejection>;

fn query_param(query: QueryMap, name: &str) -> Result<String, ApiError> {
    let Query(map) = query.map_err(|e| ApiError::bad_request(format!("bad query: {e}")))?;
    map.get(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("query parameter `{name}` is required")))
}

fn query_params(query: QueryMap) -> Result<HashMap<String, String>, ApiError> {
    query
        .map(|Query(m)| m)
        .map_err(|e| ApiError::bad_request(format!("bad query: {e}")))
}

#[derive(serde::Serialize)]
struct ClockBody {
    success: bool,
    now: Iso,
}

fn clock_body(s: &AppState) -> Vec<u8> {
    serde_json::to_vec(&ClockBody {
        success: true,
        now: Iso(s.clock.load(Ordering::Relaxed)),
    })
    .unwrap_or_default()
}

/// `POST /sandbox/advance?days=N`: time travel.
async fn advance(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let raw = query_param(query, "days")?;
    let days: u32 = raw
        .parse()
        .ok()
        .filter(|d| *d <= MAX_ADVANCE_DAYS)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "days must be an integer from 0 to {MAX_ADVANCE_DAYS}, got `{raw}`"
            ))
        })?;
    let state = s.clone();
    // Simulating many days of a large world takes a moment; keep it off the reactor.
    tokio::task::spawn_blocking(move || state.mutate(|ws| ws.world.advance(days)))
        .await
        .map_err(|e| ApiError::new(500, format!("time travel failed: {e}")))?;
    Ok(ok(clock_body(&s)))
}

/// `POST /sandbox/fail?path=/v1/api/...&status=500[&times=N]`: that exact path fails from
/// now on, or for its next N requests.
async fn fail(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let params = query_params(query)?;
    let path = path_param(&params)?;
    let status = match params.get("status") {
        None => 500,
        Some(raw) => raw
            .parse::<u16>()
            .ok()
            .filter(|c| (400..=599).contains(c))
            .ok_or_else(|| ApiError::bad_request(format!("status must be 400-599, got `{raw}`")))?,
    };
    let left = match params.get("times") {
        None => None,
        Some(raw) => Some(raw.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
            ApiError::bad_request(format!("times must be a whole number from 1, got `{raw}`"))
        })?),
    };
    s.failing
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.clone(), Failing { status, left });
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// The `path` query parameter of the admin routes: an absolute request path.
fn path_param(params: &HashMap<String, String>) -> Result<&String, ApiError> {
    params
        .get("path")
        .filter(|p| p.starts_with('/'))
        .ok_or_else(|| {
            ApiError::bad_request("query parameter `path` (starting with /) is required")
        })
}

/// `DELETE /sandbox/fail?path=...`: heal a path.
async fn heal(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let path = query_param(query, "path")?;
    s.failing
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&path);
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// `POST /sandbox/override?path=/v1/api/...&status=200&content_type=application/json`:
/// the request body becomes the answer for that exact path from now on, byte for
/// byte (no JSON check, so tests can serve any bad response, up to 64 MB).
/// `location=URL` adds a `Location` header (with a 3xx `status`, a redirect);
/// `endless=1` sends the body again and again, chunked, as long as the client reads.
async fn install_override(
    State(s): State<Shared>,
    headers: HeaderMap,
    query: QueryMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    require_jwt(&s, &headers)?;
    let params = query_params(query)?;
    let path = path_param(&params)?;
    let status = match params.get("status") {
        None => StatusCode::OK,
        Some(raw) => raw
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
            .filter(|c| c.as_u16() >= 200)
            .ok_or_else(|| ApiError::bad_request(format!("status must be 200-999, got `{raw}`")))?,
    };
    let content_type = match params.get("content_type") {
        None => HeaderValue::from_static("application/json"),
        Some(raw) => HeaderValue::from_str(raw)
            .map_err(|_| ApiError::bad_request(format!("bad content_type `{raw}`")))?,
    };
    let body = body.map_err(|e| ApiError::bad_request(format!("unreadable body: {e}")))?;
    let location = match params.get("location") {
        None => None,
        Some(raw) => Some(
            HeaderValue::from_str(raw)
                .map_err(|_| ApiError::bad_request(format!("bad location `{raw}`")))?,
        ),
    };
    let endless = params
        .get("endless")
        .is_some_and(|v| v == "1" || v == "true");
    if endless && body.is_empty() {
        return Err(ApiError::bad_request(
            "an endless body needs at least one byte to repeat",
        ));
    }
    s.overrides
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            path.clone(),
            Canned {
                status,
                content_type,
                body,
                location,
                endless,
            },
        );
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// `DELETE /sandbox/override?path=...`: the path answers normally again.
async fn remove_override(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let path = query_param(query, "path")?;
    s.overrides
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&path);
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// `POST /sandbox/remove-project?id=N`: the project disappears from every read.
async fn remove_project(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let id = parse_id(&query_param(query, "id")?, "id")?;
    if s.mutate(|ws| ws.world.remove_project(id)) {
        Ok(ok(&br#"{"success":true}"#[..]))
    } else {
        Err(ApiError::not_found(format!("project {id} not found")))
    }
}

/// `POST /sandbox/remove-user?id=N`: the user leaves now (gone from every read).
async fn remove_user(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let id = parse_id(&query_param(query, "id")?, "id")?;
    if s.mutate(|ws| ws.world.remove_user(id)) {
        Ok(ok(&br#"{"success":true}"#[..]))
    } else {
        Err(ApiError::not_found(format!("user {id} not found")))
    }
}

/// `POST /sandbox/edit` with a JSON [`Edit`] body: one hand-made change, now.
/// Answers `{"success": true, "id": N}` (what was changed or created).
async fn edit(
    State(s): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    require_jwt(&s, &headers)?;
    let body = body.map_err(|e| ApiError::bad_request(format!("unreadable body: {e}")))?;
    let edit: Edit = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("bad edit: {e}")))?;
    match s.mutate(|ws| ws.world.apply_edit(&edit)) {
        Ok(id) => Ok(ok(
            serde_json::json!({"success": true, "id": id}).to_string()
        )),
        Err(e @ EditError::NotFound(_)) => Err(ApiError::not_found(e.to_string())),
        Err(e @ EditError::Invalid(_)) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// Longest outage the admin route starts: a day.
const MAX_OUTAGE_SECONDS: u64 = 86_400;

/// `POST /sandbox/outage?seconds=N`: every `/v1/api` request is answered 503 for the
/// next N seconds.
async fn start_outage(State(s): State<Shared>, headers: HeaderMap, query: QueryMap) -> Answer {
    require_jwt(&s, &headers)?;
    let raw = query_param(query, "seconds")?;
    let seconds: u64 = raw
        .trim()
        .parse()
        .ok()
        .filter(|n| (1..=MAX_OUTAGE_SECONDS).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "seconds must be a whole number from 1 to {MAX_OUTAGE_SECONDS}, not {raw:?}"
            ))
        })?;
    s.faults
        .start_outage(std::time::Duration::from_secs(seconds));
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// `DELETE /sandbox/outage`: ends an outage started through the admin route.
async fn end_outage(State(s): State<Shared>, headers: HeaderMap) -> Answer {
    require_jwt(&s, &headers)?;
    s.faults.start_outage(std::time::Duration::ZERO);
    Ok(ok(&br#"{"success":true}"#[..]))
}

/// `GET /sandbox/stats`: the API requests received so far and how many were
/// answered 429, so a test can tell how hard a client pushed against the limit.
async fn stats(State(s): State<Shared>, headers: HeaderMap) -> Answer {
    require_jwt(&s, &headers)?;
    let stats = s.faults.stats();
    Ok(ok(format!(
        r#"{{"success":true,"requests":{},"rateLimited":{}}}"#,
        stats.requests, stats.rate_limited
    )))
}

/// `GET /sandbox/health`: open to all, so a launcher can wait for readiness.
async fn health(State(s): State<Shared>) -> Response {
    ok(clock_body(&s))
}

/// Active projects the sandbox would list for a white label (tests and benches).
#[cfg(test)]
pub(crate) fn active_project_ids(s: &AppState) -> Vec<i64> {
    let ws = s.read();
    let now = ws.world.now;
    ws.world
        .projects
        .iter()
        .filter(|p| super::world::project_active(p, now))
        .map(|p| p.id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_project_validation() {
        let parse = |s: &str| parse_new_project(s.as_bytes());
        let code = |s: &str| parse(s).map_err(|e| e.status);
        assert_eq!(
            parse(r#"{"projectName":" Zoë ","ownerId":3,"ownerEmail":"a@b"}"#),
            Ok(NewProject {
                name: "Zoë".into(),
                is_public: false,
                owner_id: Some(3),
                owner_email: Some("a@b".into()),
            })
        );
        assert_eq!(
            parse(r#"{"projectName":"x","ownerId":3.0,"projectVisibility":"public"}"#)
                .map(|p| (p.owner_id, p.is_public)),
            Ok((Some(3), true))
        );
        for bad in [
            "not json",
            "[1]",
            r#"{"ownerId":3}"#,
            r#"{"projectName":"","ownerId":3}"#,
            r#"{"projectName":5,"ownerId":3}"#,
            r#"{"projectName":"x"}"#,
            r#"{"projectName":"x","ownerId":null,"ownerEmail":null}"#,
            r#"{"projectName":"x","ownerId":"3"}"#,
            r#"{"projectName":"x","ownerEmail":"nobody"}"#,
            r#"{"projectName":"x","ownerId":3,"projectVisibility":"secret"}"#,
        ] {
            assert_eq!(code(bad).err(), Some(400), "{bad}");
        }
    }

    #[test]
    fn ids() {
        assert_eq!(parse_id("42", "x"), Ok(42));
        assert_eq!(parse_id("42.0", "x"), Ok(42));
        for bad in ["0", "-1", "4.5", "abc", "", "1e400"] {
            assert_eq!(parse_id(bad, "x").map_err(|e| e.status), Err(400), "{bad}");
        }
    }
}
