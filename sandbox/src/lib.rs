//! `orgledger-sandbox`: a real HTTP server (axum) that implements the eight operations
//! of the API over a deterministic generated world.
//!
//! It is a server on a socket rather than a mock inside the client on purpose: the
//! client, its retries, its rate limiting and its parser are exercised over loopback
//! exactly as against the real service, and the JSON here is rendered from the
//! sandbox's own types (never from `api::models`), so the two sides are written
//! independently. The world has a clock that moves only through time travel
//! (`POST /sandbox/advance`), every response carries that clock in its `Date` header,
//! and faults can be injected at seeded rates so runs repeat.
//!
//! Admin routes (outside `/v1/api`, never faulted; all but health need the white label
//! JWT in `x-jwt-token`): `POST /sandbox/advance?days=N`, `POST /sandbox/fail?path=..&status=..`
//! (that exact path fails persistently, or `&times=N` for its next N requests),
//! `DELETE /sandbox/fail?path=..`,
//! `POST /sandbox/override?path=..&status=200&content_type=..` (the request body, up to
//! 64 MB, is served byte for byte for that exact path from then on: the bad-response
//! corpus uses it), `DELETE /sandbox/override?path=..`,
//! `POST /sandbox/remove-project?id=N`, `POST /sandbox/remove-user?id=N`,
//! `POST /sandbox/outage?seconds=N` (every API request answered 503 for N seconds),
//! `DELETE /sandbox/outage`, `GET /sandbox/stats` (requests received and answered 429),
//! `GET /sandbox/health` (open).
//!
//! Map: [`world`] (data, indices, time travel), [`generate`] (the generator),
//! [`hard_cases`] (named entities a naive client gets wrong), `metrics` (daily metrics
//! computed on the fly), [`auth`] (credentials and scopes), `render` (JSON), `routes`
//! (HTTP), [`faults`] (fault injection, outages, rate limit), [`rng`] (SplitMix64).
//! `sandbox/README.md` is the user's guide.

pub mod auth;
pub mod edit;
pub mod faults;
pub mod generate;
pub mod hard_cases;
mod metrics;
mod render;
pub mod rng;
mod routes;
pub mod world;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::NaiveDate;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use faults::{FaultSpec, FaultSpecError};
pub use hard_cases::HardCases;
pub use world::World;

/// The command-line options of a standalone sandbox (`orgledger-sandbox`, and
/// `orgledger sandbox`, which takes the same flags).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Size of the generated world.
    #[arg(long, value_enum, default_value_t = Profile::Small)]
    pub profile: Profile,
    /// Seed of the world (same seed, same world).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// World clock start date, YYYY-MM-DD [default: today, UTC].
    #[arg(long, value_name = "DATE")]
    pub start_date: Option<NaiveDate>,
    /// Injected faults, e.g. "5xx=0.1,429=0.05,slow=0.02,malformed=0.02,truncated=0.02,envelope=0.01".
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<FaultSpec>,
    /// Which hard cases the world carries (see the sandbox README).
    #[arg(long, value_enum, default_value_t = HardCases::Default)]
    pub hard_cases: HardCases,
}

impl ServeArgs {
    /// The options these flags ask for (a generated world).
    pub fn options(&self) -> SandboxOptions {
        SandboxOptions {
            addr: self.addr,
            profile: self.profile,
            seed: self.seed,
            start_date: self.start_date,
            faults: self.faults.unwrap_or_default(),
            hard_cases: self.hard_cases,
            world: None,
        }
    }
}

/// Size of the generated world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Profile {
    /// A handful of everything (4 organizations, 8 users, 10 projects).
    Tiny,
    /// About 20 organizations, 100 users, 150 projects.
    Small,
    /// About 200 organizations, 2,000 users, 3,000 projects.
    Medium,
    /// About 500 organizations, 5,000 users, 10,000 projects.
    Large,
    /// About 5,000 organizations, 50,000 users, 100,000 projects (ten times `large`;
    /// a sync moves over 10 GB of JSON).
    Xlarge,
    /// About 10,000 organizations, 100,000 users, 200,000 projects (twice `xlarge`;
    /// a sync moves over 25 GB of JSON): for showing what stays flat with the world.
    Xxlarge,
}

#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
    pub profile: Profile,
    pub seed: u64,
    /// Day the world clock starts (at 12:00:00 UTC); `None` = today (UTC).
    pub start_date: Option<NaiveDate>,
    pub faults: FaultSpec,
    /// The hard cases added to a generated world (none to a hand-made one).
    pub hard_cases: HardCases,
    /// A hand-made world to serve instead of a generated one (`profile`, `seed`,
    /// `start_date` and `hard_cases` are then ignored; the world's own `seed` and `now`
    /// apply).
    pub world: Option<World>,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            profile: Profile::Small,
            seed: 1,
            start_date: None,
            faults: FaultSpec::default(),
            hard_cases: HardCases::default(),
            world: None,
        }
    }
}

/// What a client needs to talk to a running sandbox; printed as the first stdout line
/// of `orgledger sandbox`. The credentials are the sandbox's own, not secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// Base address, e.g. `http://127.0.0.1:41234` (paths start with `/v1/api`).
    pub url: String,
    /// Admin organization of white label #1 (get-whitelabel-user and create-project).
    pub whitelabel_organization_id: i64,
    /// API key of that admin organization.
    pub org_api_key: String,
    /// JWT of white label #1's admin user (`x-jwt-token`); also opens `/sandbox/*`.
    pub jwt: String,
    /// API key of `project_id`.
    pub project_api_key: String,
    /// An active project of white label #1 (0 when the world has none).
    pub project_id: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The cause is printed here and is not the error's `source()`, so a chain
    /// printer (anyhow's `{:#}`) says it once.
    #[error("cannot bind the sandbox to {addr}: {cause}; choose another --addr")]
    Bind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("the sandbox world has no white label (at least one is needed for its JWT)")]
    NoWhiteLabel,
    #[error("cannot write the sandbox info: {0}")]
    Output(std::io::Error),
    #[error("cannot wait for a signal: {0}")]
    Signal(std::io::Error),
}

/// A running sandbox. Dropping the handle leaves the server running until the tokio
/// runtime ends; call [`SandboxHandle::shutdown`] to stop it.
pub struct SandboxHandle {
    pub info: SandboxInfo,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    #[allow(dead_code)]
    state: Arc<routes::AppState>,
}

impl std::fmt::Debug for SandboxHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxHandle")
            .field("url", &self.info.url)
            .finish_non_exhaustive()
    }
}

impl SandboxHandle {
    /// Stops accepting connections, lets in-flight requests finish, and waits.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

fn info_of(world: &World, url: String) -> Result<SandboxInfo, SandboxError> {
    let wl = world
        .white_labels
        .first()
        .ok_or(SandboxError::NoWhiteLabel)?;
    let admin_org = world.organization(wl.admin_organization_id);
    let in_wl1 = |org_id: i64| {
        world
            .organization(org_id)
            .is_some_and(|o| o.whitelabel_id.is_none_or(|id| id == wl.id))
    };
    let active = |p: &&world::Project| {
        world::project_active(p, world.now)
            && !p.api_key.is_empty()
            && p.quirks == world::ProjectQuirks::default()
    };
    // Prefer a project of a regular organization with devices: the richest get-project-info answer.
    let project = world
        .projects
        .iter()
        .filter(active)
        .filter(|p| {
            in_wl1(p.owner_organization_id) && p.owner_organization_id != wl.admin_organization_id
        })
        .find(|p| !p.devices.is_empty())
        .or_else(|| {
            world
                .projects
                .iter()
                .filter(active)
                .find(|p| in_wl1(p.owner_organization_id))
        });
    Ok(SandboxInfo {
        url,
        whitelabel_organization_id: wl.admin_organization_id,
        org_api_key: admin_org.map(|o| o.api_key.clone()).unwrap_or_default(),
        jwt: wl.jwt.clone(),
        project_api_key: project.map(|p| p.api_key.clone()).unwrap_or_default(),
        project_id: project.map_or(0, |p| p.id),
    })
}

/// Binds, spawns the server on the current tokio runtime and returns at once.
pub async fn start(opts: SandboxOptions) -> Result<SandboxHandle, SandboxError> {
    let world = match opts.world {
        Some(w) => w,
        None => {
            let date = opts
                .start_date
                .unwrap_or_else(|| chrono::Utc::now().date_naive());
            let mut world = generate::generate(opts.profile, opts.seed, date);
            hard_cases::add(&mut world, opts.hard_cases);
            world
        }
    };
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|cause| SandboxError::Bind {
            addr: opts.addr,
            cause,
        })?;
    let local = listener.local_addr().map_err(|cause| SandboxError::Bind {
        addr: opts.addr,
        cause,
    })?;
    let info = info_of(&world, format!("http://{local}"))?;
    let seed = world.seed;
    let state = Arc::new(routes::AppState::new(
        world::WorldState::new(world),
        faults::FaultInjector::new(opts.faults, seed),
    ));
    let app = routes::router(state.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        // Small JSON answers on keep-alive connections must not wait for Nagle.
        let _ = tcp.set_nodelay(true);
    });
    let task = tokio::spawn(async move {
        let shutdown = async move {
            if stopped.await.is_err() {
                // The handle was dropped without shutdown: keep serving.
                std::future::pending::<()>().await;
            }
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %e, "sandbox server stopped");
        }
    });
    tracing::info!(url = %info.url, "sandbox listening");
    Ok(SandboxHandle {
        info,
        stop: Some(stop),
        task,
        state,
    })
}

/// Starts the sandbox, prints its [`SandboxInfo`] as one JSON line (the first line of
/// stdout), and serves until SIGINT or SIGTERM.
pub async fn run_until_signal(opts: SandboxOptions) -> Result<(), SandboxError> {
    use std::io::Write;
    let handle = start(opts).await?;
    let line = serde_json::to_string(&handle.info).map_err(|e| SandboxError::Output(e.into()))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").map_err(SandboxError::Output)?;
        out.flush().map_err(SandboxError::Output)?;
    }
    wait_for_signal().await?;
    handle.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() -> Result<(), SandboxError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(SandboxError::Signal)?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.map_err(SandboxError::Signal),
        _ = term.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> Result<(), SandboxError> {
    tokio::signal::ctrl_c().await.map_err(SandboxError::Signal)
}
