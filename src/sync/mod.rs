//! `orgledger sync`: discover everything the credentials can see and mirror it.
//!
//! Discovery is a crawl: list-organizations (and, beside it, get-organization of the
//! white label organization, so a wrong one ends the run before any user is asked
//! for) → get-organization for each → their members → get-whitelabel-user for each
//! user (with a white label organization) and list-user-organizations (with a JWT);
//! list-projects and list-user-projects (with a JWT) list projects → get-project-info
//! for each.
//! Every fetch is a task; follow-ups are spawned as soon as their parent arrives, so
//! the connection pool stays busy instead of waiting stage by stage. Results go to
//! one writer thread through a bounded queue, and a second bound (documents fetched
//! but not yet handed over) keeps memory flat whatever the size of the world.
//!
//! Failures are data: a document whose retries all fail with a transient error gets
//! a second pass once everything else is done, with a longer backoff; one that
//! still fails (or fails for good) is recorded in `sync_errors`, keeps its previous
//! version, and makes the run `partial`.

pub(crate) mod jobs;
pub(crate) mod lists;
pub(crate) mod progress;
mod queue;
pub(crate) mod rows;
pub(crate) mod writer;

use crate::api::outage::{Phase, span};
use crate::api::{ApiError, Client, Failure, Operation};
use crate::mirror::runs::{self, RunStatus, RunTotals, SyncErrorRecord};
use crate::mirror::table::RunStamp;
use crate::mirror::{self, MirrorError, lock, spec};
use crate::shutdown::Shutdown;
use jobs::{Done, Job};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use writer::{Ending, Writer, WriterMsg};

/// Errors kept in memory for the summary; all are in `sync_errors`.
const ERRORS_KEPT: usize = 200;

/// What to sync and how.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The mirror file.
    pub db: PathBuf,
    /// White label admin organization for get-whitelabel-user (None: white label users
    /// are not synced).
    pub whitelabel_org: Option<i64>,
    /// Whether list-user-organizations and list-user-projects can be called (they
    /// need a JWT; without one they are skipped, not failed).
    pub has_jwt: bool,
    /// Store project development keys in clear instead of fingerprints.
    pub store_secrets: bool,
    /// Show a progress bar (only drawn on a terminal).
    pub progress: bool,
    /// Erase, at the end of the run, the people removed from the service more than
    /// this many days before it (`[privacy] forget_removed_after_days`).
    pub forget_removed_after_days: Option<u32>,
}

/// How a sync ended.
#[derive(Debug)]
pub struct SyncOutcome {
    /// `sync_runs.id`.
    pub run_id: i64,
    /// Final status.
    pub status: RunStatus,
    /// Counters.
    pub totals: RunTotals,
    /// The first failures (all are in `sync_errors`).
    pub errors: Vec<SyncErrorRecord>,
    /// Wall time.
    pub elapsed: Duration,
}

impl SyncOutcome {
    /// The one-line summary printed after every sync.
    pub fn summary_line(&self) -> String {
        let r = &self.totals.rows;
        format!(
            "sync run {} {}: {} requests, {:.1} MB received, rows {} inserted / {} updated / {} unchanged / {} removed, {} errors, {:.1} s",
            self.run_id,
            self.status.as_str(),
            self.totals.requests,
            self.totals.bytes as f64 / 1e6,
            r.inserted,
            r.updated,
            r.unchanged,
            r.removed,
            self.totals.errors,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs one sync. `shutdown` (when given) stops it early: no new requests, queued
/// documents are still written, and the run is marked `aborted`.
pub async fn run(
    client: &Client,
    opts: &SyncOptions,
    mut shutdown: Option<Shutdown>,
) -> Result<SyncOutcome, MirrorError> {
    let started = Instant::now();
    let (_lock, conn) = lock_and_open(&opts.db).await?;
    let run_id = runs::begin(&conn, client.base_url())?;
    // A daemon's client outlives runs: each run starts trusting the service.
    client.outage().reset();
    client.throttle().reset();
    let run = RunStart {
        run_id,
        started,
        traffic: TrafficMark::now(client),
    };
    let settings = jobs::Settings {
        store_secrets: opts.store_secrets,
        scratch: Some(mirror::raw::Scratch::beside(&opts.db)),
    };
    let Some(found) = discover(client, &settings, opts.whitelabel_org, shutdown.as_mut()).await
    else {
        return end_early(
            &conn,
            client,
            &run,
            RunStatus::Aborted,
            Vec::new(),
            "stopped during discovery (shutdown requested)".into(),
        );
    };
    let listing = match found.listing {
        Ok(listing) => listing,
        Err(failure) => {
            let record = error_record(Job::OrganizationList, &failure);
            let message = format!("discovery failed: {}", record.message);
            return fail_early(&conn, client, &run, record, message);
        }
    };
    if let Some(record) = found.whitelabel.as_ref().and_then(wrong_whitelabel) {
        let message = record.message.clone();
        return fail_early(&conn, client, &run, record, message);
    }
    let writer = start_writer(conn, client, run_id, &listing)?;
    let found = Found {
        listing,
        whitelabel: found.whitelabel,
    };
    let (crawl, aborted) = crawl_and_write(client, opts, settings, &writer, found, shutdown).await;
    finish(client, opts, &run, writer, crawl, aborted).await
}

/// Locks the mirror, opens it, and marks runs a crash left `running` as aborted.
async fn lock_and_open(
    db: &std::path::Path,
) -> Result<(lock::SyncLock, rusqlite::Connection), MirrorError> {
    // Before the lock file is created next to it: a path that is not a mirror is
    // refused untouched.
    mirror::path::inspect(db)?;
    let lock = acquire_lock(db).await?;
    let conn = mirror::open_rw(db)?;
    let stale = runs::abort_stale(&conn)?;
    if stale > 0 {
        tracing::warn!(
            runs = stale,
            "marked runs left `running` by a crash as aborted"
        );
    }
    // An erasure cut short before its file rewrite left copies in free pages: the
    // rewrite is done before this run writes anything.
    if let Err(e) = mirror::forget::finish_rewrite(&conn, db) {
        tracing::warn!(error = %e, "the file rewrite an earlier erasure owes is not done yet");
    }
    Ok((lock, conn))
}

/// A run that has begun: what its outcome reports besides the rows.
struct RunStart {
    run_id: i64,
    started: Instant,
    traffic: TrafficMark,
}

impl RunStart {
    fn outcome(
        &self,
        status: RunStatus,
        totals: RunTotals,
        errors: Vec<SyncErrorRecord>,
    ) -> SyncOutcome {
        SyncOutcome {
            run_id: self.run_id,
            status,
            totals,
            errors,
            elapsed: self.started.elapsed(),
        }
    }
}

/// The client's counters when a run began: a daemon's client serves many runs,
/// and each reports only its own requests and bytes.
#[derive(Clone, Copy)]
struct TrafficMark {
    requests: u64,
    bytes: u64,
}

impl TrafficMark {
    fn now(client: &Client) -> Self {
        TrafficMark {
            requests: client.traffic().requests.load(Ordering::Relaxed),
            bytes: client.traffic().bytes.load(Ordering::Relaxed),
        }
    }

    /// Requests and bytes since the mark.
    fn since(self, client: &Client) -> (u64, u64) {
        let now = TrafficMark::now(client);
        (now.requests - self.requests, now.bytes - self.bytes)
    }
}

/// What discovery fetched: the organization list and, with a white label
/// organization, that organization's own document. `L` is the list's outcome:
/// a `Result` until discovery is known to have succeeded.
struct Discovered<L> {
    listing: L,
    whitelabel: Option<(i64, Result<Done, Failure>)>,
}

/// Discovery that succeeded: what the crawl starts from.
type Found = Discovered<Done>;

/// Lists the organizations and, beside that, fetches the white label organization
/// (a wrong `--whitelabel-org` is then known before any user is asked for),
/// unless `shutdown` comes first (`None`).
async fn discover(
    client: &Client,
    settings: &jobs::Settings,
    whitelabel_org: Option<i64>,
    shutdown: Option<&mut Shutdown>,
) -> Option<Discovered<Result<Done, Failure>>> {
    let fetch = |job| jobs::run(client.clone(), job, settings.clone(), None);
    let whitelabel = async {
        match whitelabel_org {
            Some(org) => Some((org, fetch(Job::Organization(org)).await)),
            None => None,
        }
    };
    let both = async {
        let (listing, whitelabel) = tokio::join!(fetch(Job::OrganizationList), whitelabel);
        Discovered {
            listing,
            whitelabel,
        }
    };
    match shutdown {
        Some(stop) => tokio::select! {
            found = both => Some(found),
            _ = stop.recv() => None,
        },
        None => Some(both.await),
    }
}

/// The one error of a run whose white label organization the service does not
/// know or does not show these credentials (404, 403): every white label user
/// would fail the same way, so the run stops before asking for them.
fn wrong_whitelabel((org, fetched): &(i64, Result<Done, Failure>)) -> Option<SyncErrorRecord> {
    let failure = fetched.as_ref().err()?;
    if !matches!(failure.error.http_status(), Some(403 | 404)) {
        return None;
    }
    let mut record = error_record(Job::Organization(*org), failure);
    // The message names the organization; a line per entity would say it twice.
    record.entity = None;
    record.message = format!(
        "--whitelabel-org {org}: {}; nothing was synced: give the id of the white label's admin organization, or leave the option out to sync without white label users",
        failure.error
    );
    Some(record)
}

/// Ends a run that never got past discovery: nothing was written.
fn end_early(
    conn: &rusqlite::Connection,
    client: &Client,
    run: &RunStart,
    status: RunStatus,
    errors: Vec<SyncErrorRecord>,
    message: String,
) -> Result<SyncOutcome, MirrorError> {
    let (requests, bytes) = run.traffic.since(client);
    let totals = RunTotals {
        requests,
        bytes,
        errors: errors.len() as u64,
        ..RunTotals::default()
    };
    runs::finish(conn, run.run_id, status, &totals, Some(&message))?;
    Ok(run.outcome(status, totals, errors))
}

/// Erases the people who left more than `days` days ago. A failure leaves the run
/// as it ended (its data is stored) and is logged; the next sync tries again.
fn apply_retention(db: &std::path::Path, days: u32) {
    let erased = mirror::open_rw(db)
        .map_err(mirror::forget::ForgetError::from)
        .and_then(|mut conn| mirror::forget::apply_retention(&mut conn, db, days));
    match erased {
        Ok(ids) if ids.is_empty() => {}
        Ok(ids) => tracing::info!(
            people = ids.len(),
            days,
            "erased the personal data of people removed from the service more than {days} days ago"
        ),
        Err(e) => tracing::error!(error = %e, "cannot erase the people removed from the service"),
    }
}

/// Ends a run that failed before the crawl began, with its one error.
fn fail_early(
    conn: &rusqlite::Connection,
    client: &Client,
    run: &RunStart,
    record: SyncErrorRecord,
    message: String,
) -> Result<SyncOutcome, MirrorError> {
    runs::record_error(conn, run.run_id, &record)?;
    end_early(conn, client, run, RunStatus::Failed, vec![record], message)
}

/// The writer connection's page cache, in KiB.
const SYNC_CACHE_KB: i64 = 8_000;

/// Stamps the run with the server's time of discovery and hands the connection to
/// the writer thread.
fn start_writer(
    conn: rusqlite::Connection,
    client: &Client,
    run_id: i64,
    listing: &Done,
) -> Result<Writer, MirrorError> {
    // All versions written by this run carry the server's clock at discovery: the
    // mirror's history follows the service's time, not this machine's.
    let observed_at = mirror::time_text(listing.server_time.unwrap_or_else(chrono::Utc::now));
    runs::set_observed(&conn, run_id, &observed_at)?;
    let stamp = RunStamp {
        run_id,
        observed_at,
    };
    // The writer appends at the B-trees' right edges and reads little back: a page
    // cache of SYNC_CACHE_KB holds the pages it touches again, and the 32 MB other
    // connections get would be a third of a sync's memory.
    conn.pragma_update(None, "cache_size", -SYNC_CACHE_KB)?;
    // Small queues: the writer is the slower side on a fast network, so longer
    // queues would only hold more parsed documents in memory, not go faster.
    Ok(Writer::start(conn, stamp, client.concurrency()))
}

/// Fetches everything the organization list leads to, handing documents to the
/// writer; returns the finished crawl and whether `shutdown` stopped it.
async fn crawl_and_write(
    client: &Client,
    opts: &SyncOptions,
    settings: jobs::Settings,
    writer: &Writer,
    found: Found,
    shutdown: Option<Shutdown>,
) -> (Crawl, bool) {
    let Found {
        mut listing,
        whitelabel,
    } = found;
    // The white label organization was fetched during discovery: the crawl takes
    // that document instead of asking again, when the list names it (one it does
    // not name is not mirrored, as before).
    let whitelabel = whitelabel.filter(|(org, _)| listing.follow.organizations.contains(org));
    if let Some((org, _)) = &whitelabel {
        listing.follow.organizations.retain(|o| o != org);
    }
    let mut crawl = Crawl::new(
        client.clone(),
        opts,
        settings,
        writer.sender(),
        client.concurrency() + 4,
    );
    // list-user-projects follows list-projects rather than running beside it: on a
    // large white label both lists are tens of megabytes, and two at once set the
    // sync's peak memory.
    crawl.spawn(Job::ProjectList(Operation::ListProjects));
    // The crawl is driven by a task on the runtime's workers, not by the thread
    // that awaits `run` (the binary's main thread, in `block_on`): a fetch task that
    // finishes then wakes its driver on the worker it ran on, where before every
    // one of the ~16,000 documents of a large sync woke the main thread.
    let driven = tokio::spawn(async move {
        crawl
            .handle(Job::OrganizationList, Pass::First, Ok(listing))
            .await;
        if let Some((org, fetched)) = whitelabel {
            crawl
                .handle(Job::Organization(org), Pass::First, fetched)
                .await;
        }
        let aborted = crawl.drive(shutdown).await;
        (crawl, aborted)
    })
    .await;
    match driven {
        Ok(done) => done,
        // Only a panic ends the task early (it is never cancelled): pass it on, as
        // driving the crawl here would have.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Decides the run's status, lets the writer finish the run, and reports it.
async fn finish(
    client: &Client,
    opts: &SyncOptions,
    run: &RunStart,
    writer: Writer,
    mut crawl: Crawl,
    aborted: bool,
) -> Result<SyncOutcome, MirrorError> {
    crawl.progress.finish();
    let (requests, bytes) = run.traffic.since(client);
    let status = match (aborted, crawl.error_count) {
        (true, _) => RunStatus::Aborted,
        (false, 0) => RunStatus::Succeeded,
        (false, _) => RunStatus::Partial,
    };
    let ending = Ending {
        status,
        complete_tables: if status == RunStatus::Succeeded {
            crawl.complete_tables()
        } else {
            Vec::new()
        },
        requests,
        bytes,
        message: crawl.message(aborted),
    };
    // The crawl holds a sender: it must be gone for the writer to see the end of
    // the queue.
    let errors = std::mem::take(&mut crawl.errors);
    drop(crawl);
    let totals = match writer.finish(ending).await {
        Ok(totals) => totals,
        Err(e) => {
            mark_failed(opts, run.run_id, requests, bytes, &e);
            return Err(e);
        }
    };
    if let Some(days) = opts.forget_removed_after_days
        && matches!(status, RunStatus::Succeeded | RunStatus::Partial)
    {
        apply_retention(&opts.db, days);
    }
    Ok(run.outcome(status, totals, errors))
}

/// Takes the sync lock. `status` holds it for a moment to tell a live run from a
/// dead one, so a lock found busy is tried again for half a second before the
/// sync refuses.
async fn acquire_lock(db: &std::path::Path) -> Result<lock::SyncLock, MirrorError> {
    for _ in 0..10 {
        match lock::acquire(db) {
            Err(MirrorError::Busy(_)) => tokio::time::sleep(Duration::from_millis(50)).await,
            other => return other,
        }
    }
    lock::acquire(db)
}

/// Which pass over a document a fetch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    First,
    /// Its first pass failed transiently after this many attempts.
    Second {
        earlier: u32,
    },
}

/// The state of one crawl: running tasks, what has been scheduled, what failed.
struct Crawl {
    client: Client,
    /// The same client with the second pass's longer backoff.
    second_pass: Client,
    whitelabel_org: Option<i64>,
    has_jwt: bool,
    settings: jobs::Settings,
    tasks: JoinSet<(Job, Pass, Result<Done, Failure>)>,
    /// Jobs discovered but not started, in [`Job::order`]. Only `live` tasks exist
    /// at a time: a finished task holds its parsed document until joined, so this
    /// bounds memory, and tens of thousands of idle request futures are never
    /// allocated.
    pending: queue::Queue,
    /// Documents whose first pass failed transiently, with its attempts: fetched
    /// again when nothing else is left.
    deferred: Vec<(Job, u32)>,
    /// Documents that got a second pass.
    second_passes: usize,
    /// The service was given up on (an outage outlasted the limit): the run stops.
    gave_up: bool,
    live: usize,
    to_writer: tokio::sync::mpsc::Sender<WriterMsg>,
    users: HashSet<i64>,
    projects: HashSet<i64>,
    refused: HashSet<Operation>,
    suppressed: u64,
    errors: Vec<SyncErrorRecord>,
    error_count: u64,
    writer_gone: bool,
    progress: progress::Progress,
}

impl Crawl {
    fn new(
        client: Client,
        opts: &SyncOptions,
        settings: jobs::Settings,
        to_writer: tokio::sync::mpsc::Sender<WriterMsg>,
        held_docs: usize,
    ) -> Self {
        Crawl {
            second_pass: client.with_backoff(client.backoff().second_pass()),
            client,
            whitelabel_org: opts.whitelabel_org,
            has_jwt: opts.has_jwt,
            settings,
            tasks: JoinSet::new(),
            pending: queue::Queue::default(),
            deferred: Vec::new(),
            second_passes: 0,
            gave_up: false,
            live: held_docs.max(1),
            to_writer,
            users: HashSet::new(),
            projects: HashSet::new(),
            refused: HashSet::new(),
            suppressed: 0,
            errors: Vec::new(),
            error_count: 0,
            writer_gone: false,
            progress: progress::Progress::new(opts.progress),
        }
    }

    fn spawn(&mut self, job: Job) {
        self.queue(job, Pass::First);
    }

    /// Every document queued counts in the progress total; the copies of an id
    /// listed twice are dropped when it is taken, and counted done then.
    fn queue(&mut self, job: Job, pass: Pass) {
        if self.pending.push(job, pass) {
            self.progress.add(1);
        }
    }

    /// A queued document that will not be fetched counts as done, so the bar
    /// still reaches its end.
    fn skip(&mut self) {
        self.progress
            .done(self.client.traffic().bytes.load(Ordering::Relaxed));
    }

    /// Queues the documents whose first pass failed transiently; false when there
    /// are none.
    fn start_second_pass(&mut self) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        tracing::info!(
            documents = self.deferred.len(),
            "fetching the documents whose retries all failed once more, with a longer backoff"
        );
        self.second_passes += self.deferred.len();
        for (job, earlier) in std::mem::take(&mut self.deferred) {
            self.queue(job, Pass::Second { earlier });
        }
        true
    }

    /// Starts pending jobs up to the live limit (skipping refused operations).
    fn start_pending(&mut self) {
        while self.tasks.len() < self.live {
            let Some(queue::Next {
                job,
                pass,
                duplicates,
            }) = self.pending.pop()
            else {
                return;
            };
            for _ in 0..duplicates {
                self.skip();
            }
            if self.refused.contains(&job.operation()) {
                self.skip();
                continue;
            }
            let client = match pass {
                Pass::First => self.client.clone(),
                Pass::Second { .. } => self.second_pass.clone(),
            };
            let settings = self.settings.clone();
            let writer = Some(self.to_writer.clone());
            self.tasks
                .spawn(async move { (job, pass, jobs::run(client, job, settings, writer).await) });
        }
    }

    /// Runs until every task is done (false) or shutdown is requested (true).
    async fn drive(&mut self, mut shutdown: Option<Shutdown>) -> bool {
        let mut phase = self.client.outage().subscribe();
        loop {
            self.start_pending();
            let next = tokio::select! {
                next = self.tasks.join_next() => next,
                _ = stopped(&mut shutdown) => {
                    self.tasks.abort_all();
                    return true;
                }
                Ok(()) = phase.changed() => {
                    let since = match &*phase.borrow_and_update() {
                        Phase::Waiting { since } => Some(*since),
                        _ => None,
                    };
                    self.progress.waiting(since);
                    continue;
                }
            };
            let Some(joined) = next else {
                if self.start_second_pass() {
                    continue;
                }
                return false;
            };
            match joined {
                Ok((job, pass, result)) => self.handle(job, pass, result).await,
                Err(e) if e.is_cancelled() => {}
                Err(e) => self.record(SyncErrorRecord {
                    operation: "sync".into(),
                    entity: None,
                    http_status: None,
                    message: format!("a fetch task failed: {e}"),
                    attempts: 1,
                }),
            }
            self.progress
                .done(self.client.traffic().bytes.load(Ordering::Relaxed));
            if self.writer_gone {
                self.tasks.abort_all();
                return true;
            }
            if self.gave_up {
                // Every other fetch would fail the same way: one error says it.
                self.tasks.abort_all();
                self.pending.clear();
                self.deferred.clear();
                return false;
            }
        }
    }

    async fn handle(&mut self, job: Job, pass: Pass, result: Result<Done, Failure>) {
        // list-user-projects lists the current user's projects: an API key has no user.
        if job == Job::ProjectList(Operation::ListProjects) && self.has_jwt {
            self.spawn(Job::ProjectList(Operation::ListUserProjects));
        }
        match result {
            Ok(done) => {
                for org in &done.follow.organizations {
                    self.spawn(Job::Organization(*org));
                }
                for user in &done.follow.users {
                    if self.users.insert(*user) {
                        if let Some(org) = self.whitelabel_org {
                            self.spawn(Job::WhitelabelUser { org, user: *user });
                        }
                        if self.has_jwt {
                            self.spawn(Job::UserOrganizations(*user));
                        }
                    }
                }
                for &(project, deleted) in &done.follow.projects {
                    if self.projects.insert(project) {
                        self.spawn(Job::ProjectInfo { project, deleted });
                    }
                }
                let problems = done.doc.rows.problems.len() as u64;
                self.error_count += problems;
                self.send_doc(done.doc).await;
            }
            Err(failure) => self.failed(job, pass, failure).await,
        }
    }

    async fn send_doc(&mut self, doc: writer::Doc) {
        if self
            .to_writer
            .send(WriterMsg::Doc(Box::new(doc)))
            .await
            .is_err()
        {
            self.writer_gone = true;
        }
    }

    async fn failed(&mut self, job: Job, pass: Pass, mut failure: Failure) {
        if let ApiError::Unreachable { .. } = failure.error {
            if !std::mem::replace(&mut self.gave_up, true) {
                let not_fetched = self.tasks.len() + self.pending.len() + self.deferred.len() + 1;
                let record = SyncErrorRecord {
                    operation: "sync".into(),
                    entity: None,
                    http_status: None,
                    message: format!("{} ({not_fetched} documents not fetched)", failure.error),
                    attempts: failure.attempts,
                };
                self.record(record.clone());
                if self.to_writer.send(WriterMsg::Error(record)).await.is_err() {
                    self.writer_gone = true;
                }
            }
            return;
        }
        match pass {
            Pass::First if failure.error.retry().again_at_the_end() => {
                tracing::debug!(entity = job.entity(), error = %failure.error, "retries exhausted; fetched again at the end of the run");
                self.deferred.push((job, failure.attempts));
                return;
            }
            Pass::First => {}
            Pass::Second { earlier } => failure.attempts += earlier,
        }
        let op = job.operation();
        let refusal = matches!(failure.error.http_status(), Some(401 | 403));
        let optional = matches!(
            op,
            Operation::GetWhitelabelUser | Operation::ListUserOrganizations
        );
        if refusal && optional {
            // The credential cannot use this operation at all: say so once and skip
            // the rest instead of recording one identical error per user.
            if !self.refused.insert(op) {
                self.suppressed += 1;
                return;
            }
            let mut record = error_record(job, &failure);
            record.message = format!(
                "{}; skipping every further {} call",
                record.message,
                op.name()
            );
            self.record(record);
        } else {
            self.record(error_record(job, &failure));
        }
        if let Some(last) = self.errors.last().cloned()
            && self.to_writer.send(WriterMsg::Error(last)).await.is_err()
        {
            self.writer_gone = true;
        }
    }

    fn record(&mut self, record: SyncErrorRecord) {
        let entity = record.entity.as_deref().unwrap_or("-");
        // All failures are in `sync_errors`, and whoever reads the outcome shows
        // the first ones (the `sync` command's failure lines, the daemon's log):
        // a warning here too would print each of them twice.
        tracing::debug!(entity, "{}", record.message);
        self.error_count += 1;
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(record);
        }
    }

    /// Root tables all of whose sources were fetched in this (error-free) run.
    fn complete_tables(&self) -> Vec<&'static str> {
        let mut tables = vec![
            spec::ORGANIZATIONS.name,
            spec::PROJECTS.name,
            spec::PROJECT_INFO.name,
        ];
        if self.whitelabel_org.is_some() {
            tables.push(spec::USERS.name);
        }
        tables
    }

    /// The note on a run the service answered 429: how often, and the pace the
    /// sync settled at (none when the 429s showed no limit).
    fn rate_limited(&self) -> Option<String> {
        let throttle = self.client.throttle();
        let limited = throttle.limited_count();
        if limited == 0 {
            return None;
        }
        Some(match throttle.ceiling() {
            Some(ceiling) => format!(
                "the service answered {limited} requests with 429 (rate limited); paced at {ceiling:.1} requests/s at the end"
            ),
            None => format!(
                "the service answered {limited} requests with 429; each was waited out; not paced at the end"
            ),
        })
    }

    fn message(&self, aborted: bool) -> Option<String> {
        if aborted {
            return Some("stopped before the end (shutdown requested or the writer failed)".into());
        }
        let (outages, waited) = self.client.outage().ridden();
        let notes: Vec<String> = [
            (outages > 0).then(|| {
                let plural = if outages == 1 { "" } else { "s" };
                format!(
                    "waited {} for the service ({outages} outage{plural})",
                    span(waited)
                )
            }),
            self.gave_up
                .then(|| "stopped early: the service was unreachable".to_string()),
            self.rate_limited(),
            (self.second_passes > 0).then(|| {
                format!(
                    "{} documents fetched in a second pass after their retries failed",
                    self.second_passes
                )
            }),
            (self.suppressed > 0).then(|| {
                format!(
                    "{} refused calls not recorded individually",
                    self.suppressed
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

/// Resolves when a stop is requested; never without a [`Shutdown`].
async fn stopped(shutdown: &mut Option<Shutdown>) {
    match shutdown {
        Some(rx) => {
            rx.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// The writer failed (disk full, I/O error): its last transaction rolled back and
/// earlier ones stand. Marks the run `failed` with the reason on a fresh connection,
/// when the disk still allows that small write; otherwise the next sync marks it
/// `aborted`.
fn mark_failed(opts: &SyncOptions, run_id: i64, requests: u64, bytes: u64, error: &MirrorError) {
    let totals = RunTotals {
        requests,
        bytes,
        ..RunTotals::default()
    };
    let message = format!("the mirror could not be written: {error}");
    let marked = mirror::open_rw(&opts.db)
        .and_then(|conn| runs::finish(&conn, run_id, RunStatus::Failed, &totals, Some(&message)));
    if let Err(e) = marked {
        tracing::warn!(run_id, error = %e, "cannot mark the run failed; the next sync marks it aborted");
    }
}

fn error_record(job: Job, failure: &Failure) -> SyncErrorRecord {
    SyncErrorRecord {
        operation: job.operation().name().to_string(),
        entity: match job {
            Job::OrganizationList | Job::ProjectList(_) => None,
            _ => Some(job.entity()),
        },
        http_status: failure.error.http_status(),
        message: failure.error.to_string(),
        attempts: failure.attempts,
    }
}
