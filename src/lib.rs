//! `orgledger`: an offline SQLite mirror of the organization/project information
//! service, and the reports finance, account managers and ops read every week.
//!
//! Data flows one way: [`api`] fetches typed documents, [`sync`] decides what to fetch
//! and hands the documents to [`mirror`], which keeps current state plus history in
//! SQLite; [`report`] reads the mirror (never the network) and writes CSV/JSON/HTML.
//! `docs/architecture.md` maps the modules, including the crate-internal ones.
//!
//! Most users want the `orgledger` binary; the library is what it is built from, and
//! what the integration tests drive. The public modules, and where to start in each:
//!
//! * [`api`]: the client of the information service. Build a [`api::Client`] from a
//!   [`api::ClientConfig`] (base URL plus [`api::Credentials`], whose keys are
//!   [`api::secret::Secret`]s that never print); each operation is one async method
//!   returning an [`api::Fetched`] document typed by [`api::models`], or an
//!   [`api::Failure`]. [`api::pacing::Backoff`] tunes the retries.
//!
//! * [`sync`]: one sync run. [`sync::run`] takes a client and [`sync::SyncOptions`]
//!   (the mirror file, which optional operations may be called) and returns a
//!   [`sync::SyncOutcome`] (run id, [`mirror::runs::RunStatus`], counters, the first
//!   failures). It holds the mirror's lock for the whole run.
//!
//! * [`mirror`]: the SQLite file. [`mirror::open_ro`] is how readers open it;
//!   [`mirror::spec::TABLES`] describes every table and its columns, [`mirror::runs`]
//!   the bookkeeping of sync runs, [`mirror::schema`] the migrations, and
//!   [`mirror::lock::acquire`] the single-writer lock. Errors are
//!   [`mirror::MirrorError`].
//!
//! * [`report`]: the report engine and its jobs, what each number is.
//!   Each built-in report is one [`report::Report`] declared in its module (name,
//!   description, extract, columns, job, completeness, whether it is read back);
//!   [`report::registry::BUILTIN`] lists them; [`report::Plan`] builds the tables a
//!   [`report::ReportOptions`] (mirror, as-of date, report names, [`report::Format`]s,
//!   output folder) asks for.
//! * [`render`]: how the tables are shown. [`render::run`] builds the reports and
//!   writes their files, page, workbook and manifest, and returns a
//!   [`render::ReportOutcome`] listing them.
//!
//! * [`export`]: the mirror as Parquet files. [`export::run`] takes
//!   [`export::ExportOptions`] (mirror, folder, as-of date or history, tables) and
//!   returns an [`export::ExportOutcome`] listing the files, with `_manifest.json`.
//! * [`alerts`]: events when an entitlement crosses a threshold, a trial nears its
//!   end or syncs keep failing. [`alerts::run`] takes [`alerts::AlertOptions`] and
//!   returns an [`alerts::AlertOutcome`]; webhooks are signed by [`alerts::Webhook`].
//!
//! * [`email`]: alerts and reports by e-mail. [`email::Mailer`] sends through the
//!   configured SMTP server; [`email::digest::deliver`] sends the alerts' pending
//!   e-mail deliveries as digests; [`email::subscription::send`] a run's report
//!   ([`email::RunView`]) to a [`email::Subscription`]'s recipients.
//!
//! * [`file_mode`]: the permissions of report and export files (0600 by
//!   default) and of the folders orgledger creates for them.
//!
//! * [`cli`]: the command line of the binary: [`cli::args::Cli`] (clap) parsed by
//!   `main`, [`cli::run`] to execute it, and [`cli::Exit`] for the exit status.
//!
//! * [`sandbox`] (the `orgledger-sandbox` crate, behind the default `sandbox` feature):
//!   a real HTTP implementation of the API over a generated world, used by the demo,
//!   the tests and the benchmarks. [`sandbox::start`] serves a world sized by a
//!   [`sandbox::Profile`] on loopback and returns a [`sandbox::SandboxHandle`].
//!
//! Everything else is crate-internal: the mirror's row writer, the sync's writer
//! thread, the daily-metrics scanner, the report frames and SQL helpers, the
//! settings and scheduling of the daemon, and the modules below every room
//! (`calendar`: days; `output`: atomic, hashed files and the Parquet writer).
//! `docs/architecture.md` gives the order of the rooms: each imports only from those
//! below it.

pub mod alerts;
pub mod api;
pub(crate) mod calendar;
pub(crate) mod cause;
pub mod cli;
pub(crate) mod config;
pub mod email;
pub mod export;
pub mod file_mode;
pub mod mirror;
pub mod output;
pub mod render;
pub mod report;
#[cfg(any(feature = "sandbox", test))]
pub use orgledger_sandbox as sandbox;
pub(crate) mod schedule;
pub(crate) mod shutdown;
pub mod sync;
