//! Command-line definitions (clap). The handlers live next to this file, one per
//! command; `main.rs` only parses and dispatches.
//!
//! The doc comments below are clap's help text, printed verbatim, so they use
//! `<DIR>` and `[redacted]` as a terminal user reads them rather than as rustdoc
//! markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The heading of the options every command takes, listed after a command's own.
const GLOBAL: &str = "Global options";

/// Global options a command ignores, by command: the sandbox and the benchmark
/// make their own worlds and mirrors, an API call writes no mirror, and the
/// completions and the man page describe the command line only. They are still
/// accepted, but their help does not list them.
const IGNORED: [(&str, &[&str]); 6] = [
    ("sandbox", &["db", "config"]),
    ("bench", &["db", "config"]),
    ("api", &["db"]),
    ("project", &["db"]),
    ("completions", &["db", "config"]),
    ("man", &["db", "config"]),
];

/// Parses the process's command line as `Cli::parse` does, with each command's
/// help listing only the global options it uses.
pub fn parse() -> Cli {
    Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit())
}

/// The command line as `--help` shows it (each command listing only the global
/// options it uses); shell completions and the man page are generated from it.
pub fn command() -> clap::Command {
    built(Cli::command())
}

/// [`command`] without the `help` pseudo-command that clap adds at every level
/// (`orgledger help sync` is `orgledger sync --help`): the commands a man page is
/// written for.
pub fn command_without_help() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    built(without_help(Cli::command()))
}

fn built(mut cmd: clap::Command) -> clap::Command {
    // Global options are copied into every command when it is built: hiding them
    // is only possible after that.
    cmd.build();
    cmd.mut_subcommands(
        |sub| match IGNORED.iter().find(|(name, _)| sub.get_name() == *name) {
            Some((_, ids)) => hide_in(sub, ids),
            None => sub,
        },
    )
}

/// `cmd` and its subcommands with the options `ids` hidden from their help.
fn hide_in(cmd: clap::Command, ids: &[&str]) -> clap::Command {
    cmd.mut_args(|arg| {
        let hidden = arg.is_hide_set() || ids.contains(&arg.get_id().as_str());
        arg.hide(hidden)
    })
    .mut_subcommands(|sub| hide_in(sub, ids))
}

/// Keep an offline SQLite mirror of the organization/project information service and
/// turn it into weekly reports (entitlements, trials, compute trends, usage).
///
/// Credentials come from ORGLEDGER_API_KEY / ORGLEDGER_JWT, --api-key-file /
/// --jwt-file, or the config file; they are never printed, logged or stored.
#[derive(Debug, Parser)]
#[command(
    name = "orgledger",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// The SQLite mirror [default: orgledger.db, or db in the config file].
    #[arg(
        long,
        global = true,
        env = "ORGLEDGER_DB",
        value_name = "PATH",
        help_heading = GLOBAL
    )]
    pub db: Option<PathBuf>,
    /// TOML config file (see docs/orgledger.example.toml).
    #[arg(
        long,
        global = true,
        env = "ORGLEDGER_CONFIG",
        value_name = "FILE",
        help_heading = GLOBAL
    )]
    pub config: Option<PathBuf>,
    /// More log output (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", help_heading = GLOBAL)]
    pub verbose: u8,
    /// Only warnings and errors.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Log line format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, help_heading = GLOBAL)]
    pub log_format: LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    #[cfg(feature = "sandbox")]
    /// Serve the built-in sandbox API over a generated world (prints its URL and
    /// credentials as one JSON line, then serves until Ctrl-C).
    Sandbox(SandboxArgs),
    /// Pull everything the credentials can see into the mirror.
    Sync(SyncArgs),
    /// Build reports from the mirror (never touches the network).
    Report(ReportArgs),
    /// Send alerts: entitlement thresholds, trials, failing syncs (docs/alerts.md).
    Alerts(AlertsArgs),
    /// Run sync and report on cron schedules until stopped.
    Daemon(DaemonArgs),
    /// E-mail through the configured SMTP server (docs/email.md).
    Email(EmailArgs),
    /// Write the mirror's tables as Parquet files for warehouses (never touches the network).
    Export(ExportArgs),
    /// Show the mirror's last runs, freshness, row counts and recent errors.
    Status(StatusArgs),
    /// Check that the mirror is sound: SQLite's integrity and foreign-key checks and
    /// the mirror's own invariants (one line per finding, exit 1 when any).
    Check(CheckArgs),
    /// Copy the mirror to a file, consistent even while a sync writes, verified
    /// before it gets its name.
    Backup(BackupArgs),
    /// Replace the mirror with a backup, after checking it; the replaced mirror is
    /// kept beside it.
    Restore(RestoreArgs),
    /// Erase a person's personal data from the mirror (name, username, e-mail,
    /// company, photo, free text holding them; every version, the raw documents and
    /// the alert outbox), keeping their id and every number, then rewrite the file so
    /// no copy stays in free pages or the WAL (docs/guarantees.md).
    Forget(ForgetArgs),
    /// Run a read-only SQL query against the mirror.
    Query(QueryArgs),
    /// List what changed in the mirror between two points of its history.
    Changes(ChangesArgs),
    /// Call one API operation and print its JSON answer.
    Api(ApiArgs),
    /// Manage projects through the API.
    Project(ProjectArgs),
    #[cfg(feature = "sandbox")]
    /// Start the sandbox, simulate days of syncs, and write every report. Its
    /// mirror is <DIR>/demo.db (reports/demo.db; --db chooses another), never
    /// ./orgledger.db: `orgledger --db reports/demo.db status` looks inside.
    Demo(DemoArgs),
    #[cfg(feature = "sandbox")]
    /// Measure sync and report speed against the sandbox.
    Bench(BenchArgs),
    /// Print shell completions (bash, zsh, fish, powershell, elvish) to standard
    /// output; README.md says where each shell looks for them.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to standard output, or write one page per command
    /// into a folder with --dir.
    Man(ManArgs),
}

/// `completions` options.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `man` options.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write orgledger.1 and one orgledger-<command>.1 per command into this
    /// folder instead of printing orgledger.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Where the API is and how to authenticate.
#[derive(Debug, Args, Clone, Default)]
pub struct ConnArgs {
    /// Service base URL (paths start with /v1/api).
    #[arg(long, env = "ORGLEDGER_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// File holding the API key (must not be readable by others).
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,
    /// File holding the JWT (must not be readable by others).
    #[arg(long, value_name = "FILE")]
    pub jwt_file: Option<PathBuf>,
    /// API key on the command line. Works, but other users of the machine can see
    /// it in the process list: prefer ORGLEDGER_API_KEY or --api-key-file.
    #[arg(long, value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Timeout of one request, in seconds [default: 60].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
}

/// How hard a sync may press the service; one API call has no use for them.
#[derive(Debug, Args, Clone, Default)]
pub struct PaceArgs {
    /// Requests in flight at most [default: 8].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: Option<u16>,
    /// Requests per second at most [default: no cap].
    #[arg(long, value_name = "N")]
    pub rps: Option<f64>,
    /// How long to wait for a service that went away (many requests in a row
    /// unanswered) before the sync gives up, in seconds [default: 600].
    #[arg(long, value_name = "SECS")]
    pub outage_limit: Option<u64>,
}

/// `sandbox` options: the standalone `orgledger-sandbox`'s own flags, plus the
/// env file the by-hand tour waits for.
#[cfg(feature = "sandbox")]
#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(flatten)]
    pub serve: crate::sandbox::ServeArgs,
    /// Also write the connection as shell lines (`export ORGLEDGER_BASE_URL=...`,
    /// `ORGLEDGER_JWT`, `SANDBOX_WHITELABEL_ORG`) to FILE, mode 600, complete before
    /// the sandbox serves: `. FILE` in another shell.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

/// `sync` options.
#[derive(Debug, Args, Clone, Default)]
pub struct SyncArgs {
    /// Connection.
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Pace.
    #[command(flatten)]
    pub pace: PaceArgs,
    /// White label admin organization, for white label users, trials and daily metrics.
    #[arg(long, value_name = "ID")]
    pub whitelabel_org: Option<i64>,
    /// Store project development keys in clear (default: a fingerprint only).
    #[arg(long)]
    pub store_secrets: bool,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// `report` options.
#[derive(Debug, Args, Clone, Default)]
pub struct ReportArgs {
    /// Reports to build [default: all, including queries/custom/*.sql].
    #[arg(value_name = "NAME", long_help = report_names_help())]
    pub names: Vec<String>,
    /// Build the reports as the mirror stood at the end of this day (UTC) [default: today].
    /// Refused (exit 1) before the day of the mirror's first finished sync, and after
    /// both today and the day of its last sync.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = calendar_day)]
    pub as_of: Option<chrono::NaiveDate>,
    /// Output formats, comma separated [default: csv,json].
    #[arg(long, value_delimiter = ',', value_enum)]
    pub format: Vec<ReportFormat>,
    /// Output root; files go to <DIR>/<as-of>/ [default: reports]; or an object-store
    /// URL (s3://bucket/prefix, gs://, az://, file://), credentials from the
    /// environment.
    #[arg(long, value_name = "DIR|URL")]
    pub out: Option<PathBuf>,
    /// Queries folder: each custom/*.sql in it is a report of its own [default: ./queries].
    #[arg(long, value_name = "DIR")]
    pub queries: Option<PathBuf>,
    /// Replace e-mails and person names with stable pseudonyms.
    #[arg(long)]
    pub redact_pii: bool,
    /// Mode of the files written, for a team that shares the folder: 0640 lets the
    /// group read them (folders created get search too: 0750) [default: 0600, or
    /// file_mode in the config file].
    #[arg(long, value_name = "MODE")]
    pub file_mode: Option<crate::file_mode::FileMode>,
    /// Then e-mail the report to the recipients of this subscription of the config
    /// ([[report.subscriptions]], through [email]), for the as-of date asked. A
    /// recipient who has that date's report already is not sent it again.
    #[arg(long, value_name = "NAME")]
    pub send: Option<String>,
}

/// Report output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Comma-separated values.
    Csv,
    /// A JSON array of row objects.
    Json,
    /// A self-contained page with charts.
    Html,
    /// Typed columns in Parquet (zstd), for DuckDB, Spark and warehouses.
    Parquet,
    /// One Excel workbook: a "Needs action" sheet, then a sheet per report.
    Xlsx,
}

/// `alerts` options (they override `[alerts]` of the config file).
#[derive(Debug, Args, Clone, Default)]
pub struct AlertsArgs {
    /// Evaluate the mirror as it stood at the end of this day (UTC) [default: today].
    /// A day before the latest evaluated one is read-only: its alerts are printed,
    /// nothing is stored or sent.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = calendar_day)]
    pub as_of: Option<chrono::NaiveDate>,
    /// POST each new event to this URL (the webhook named "default"). A Slack or
    /// Teams URL is a secret that other users can see in the process list: prefer
    /// url_file in the config's [[alerts.webhooks]].
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
    /// The --webhook's message format: standard (signed Standard Webhooks), slack or
    /// teams [default: format in [alerts], else standard].
    #[arg(long, value_name = "FORMAT", value_parser = webhook_format)]
    pub webhook_format: Option<crate::alerts::Format>,
    /// File holding the webhook signing secret `whsec_<base64>` (mode 600); the
    /// standard format only.
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Append each new event as one JSON line to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    /// Print the events that would be sent; store and send nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `email` options.
#[derive(Debug, Args)]
pub struct EmailArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: EmailAction,
}

/// `email` subcommands.
#[derive(Debug, Subcommand)]
pub enum EmailAction {
    /// Send a short message through the [email] server of the config and say
    /// exactly which step failed, if one did: DNS, connection, TLS, authentication,
    /// or the server's refusal of the sender, the recipient or the message.
    Test(EmailTestArgs),
}

/// `email test` options.
#[derive(Debug, Args)]
pub struct EmailTestArgs {
    /// The address to send the test message to.
    #[arg(long, value_name = "ADDRESS")]
    pub to: String,
}

/// `daemon` options.
#[derive(Debug, Args, Clone, Default)]
pub struct DaemonArgs {
    /// Sync options.
    #[command(flatten)]
    pub sync: SyncArgs,
    /// Cron expression of the sync job (seconds field allowed) [default: "0 0 5 * * *"].
    #[arg(long, value_name = "EXPR")]
    pub sync_cron: Option<String>,
    /// Cron expression of the report job [default: "0 30 5 * * *"].
    #[arg(long, value_name = "EXPR")]
    pub report_cron: Option<String>,
    /// Report output root, a folder or an object-store URL [default: reports].
    #[arg(long, value_name = "DIR|URL")]
    pub out: Option<PathBuf>,
    /// Report formats [default: csv,json,html].
    #[arg(long, value_delimiter = ',', value_enum)]
    pub format: Vec<ReportFormat>,
    /// Serve GET /metrics (Prometheus) and GET /healthz on this address, such as
    /// 127.0.0.1:9464 [default: off].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Sync once at start, then follow the schedule [default: only when the mirror
    /// has no finished sync yet; `sync_at_start` in [schedule]].
    #[arg(long)]
    pub sync_now: bool,
}

/// `export` options.
#[derive(Debug, Args, Clone, Default)]
pub struct ExportArgs {
    /// File format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Parquet)]
    pub format: ExportFormat,
    /// Export folder: <DIR>/<table>/, <DIR>/_manifest.json [default: export]; or an
    /// object-store URL (s3://bucket/prefix, gs://, az://, file://), credentials from
    /// the environment.
    #[arg(long, value_name = "DIR|URL")]
    pub out: Option<PathBuf>,
    /// The state at the end of this day (UTC) [default: everything the mirror holds now].
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = calendar_day)]
    pub as_of: Option<chrono::NaiveDate>,
    /// Tables to export, comma separated [default: all].
    #[arg(long, value_delimiter = ',', value_name = "T")]
    pub tables: Vec<String>,
    /// Every version of every row, with valid_from, valid_to and removed_at.
    #[arg(long)]
    pub history: bool,
    /// Add the changes of the sync runs after run N to the append-only history
    /// dataset <DIR>/history/ (partitioned by day of change) instead of exporting the
    /// state; `run:last` continues after the run its manifest records.
    #[arg(long, value_name = "run:N", value_parser = since_run, conflicts_with_all = ["as_of", "history"])]
    pub since: Option<crate::export::Since>,
    /// Mode of the files written, for a team that shares the folder: 0640 lets the
    /// group read them (folders created get search too: 0750) [default: 0600, or
    /// file_mode in the config file].
    #[arg(long, value_name = "MODE")]
    pub file_mode: Option<crate::file_mode::FileMode>,
}

/// `run:N` (after sync run N) or `run:last` (after the run the destination's
/// incremental manifest records).
fn since_run(text: &str) -> Result<crate::export::Since, String> {
    let run = text
        .strip_prefix("run:")
        .ok_or_else(|| format!("{text:?} is not run:N (such as run:41) or run:last"))?;
    if run == "last" {
        return Ok(crate::export::Since::Previous);
    }
    run.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .map(crate::export::Since::Run)
        .ok_or_else(|| format!("{run:?} is not a sync run number; write run:N, such as run:41"))
}

/// Export file format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Apache Parquet, zstd-compressed.
    #[default]
    Parquet,
}

/// `forget` options.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("person").required(true).args(["user", "email"])))]
pub struct ForgetArgs {
    /// The person's user id.
    #[arg(long, value_name = "ID")]
    pub user: Option<i64>,
    /// An e-mail address the mirror holds for the person (now or in its history).
    #[arg(long, value_name = "ADDRESS")]
    pub email: Option<String>,
    /// Say what would be erased (rows by table, raw documents); change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Erase a person the service still has, and store their personal fields
    /// redacted in every later sync. Without it, such a person is refused: the next
    /// sync would store their data again.
    #[arg(long)]
    pub keep_redacted: bool,
    /// Erase what can be even when something in the mirror cannot be looked
    /// through (a stored document that does not decode), and list what was left
    /// unchecked. Without it, such a mirror is refused, with nothing erased.
    #[arg(long)]
    pub leave_unchecked: bool,
}

/// `status` options.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = StatusFormat::Table)]
    pub format: StatusFormat,
}

/// `check` options.
#[derive(Debug, Args)]
pub struct CheckArgs {}

/// `backup` options.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The backup file. It is written under a temporary name beside it (mode 600),
    /// verified (integrity, schema version, every table's row count equal to the
    /// mirror's at the moment of the copy), then renamed to FILE; an existing FILE
    /// is replaced. An object-store URL (`s3://bucket/path/orgledger.db`, `gs://`,
    /// `az://`, `file://`) uploads the verified copy as that object, which appears
    /// only once whole; credentials come from the store's environment variables.
    /// Without it: a new `orgledger-<UTC time>.db` in `[backup] dir`, keeping
    /// `[backup] keep` of them.
    #[arg(long, value_name = "FILE|URL")]
    pub out: Option<PathBuf>,
}

/// `restore` options.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup to restore. It must be an intact orgledger mirror whose schema
    /// version this build knows. The mirror (--db) is replaced only while no sync
    /// runs; the replaced one is kept as `<db>.replaced-<UTC time>`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// `status` output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFormat {
    /// Aligned text.
    Table,
    /// One JSON object.
    Json,
}

/// `query` options.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The SQL (read-only: writes are refused by SQLite itself).
    pub sql: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = QueryFormat::Table)]
    pub format: QueryFormat,
    /// Query the mirror as it stood at the end of this day (UTC).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = calendar_day)]
    pub as_of: Option<chrono::NaiveDate>,
}

/// `query` output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryFormat {
    /// Aligned text.
    Table,
    /// CSV with a header.
    Csv,
    /// A JSON array of row objects.
    Json,
}

/// `changes` options.
#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// Start of the window (excluded): YYYY-MM-DD (the end of that day, UTC), an RFC 3339
    /// timestamp, or run:N (the state after sync run N).
    #[arg(long, value_name = "WHEN")]
    pub since: crate::report::changes::When,
    /// End of the window (included), written like --since; default: now, or the
    /// last sync run when the service's clock (which times the runs) is ahead.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<crate::report::changes::When>,
    /// Output format on stdout (with --out: which file to write; table writes both).
    #[arg(long, value_enum, default_value_t = QueryFormat::Table)]
    pub format: QueryFormat,
    /// Write changes.csv and/or changes.json into this folder instead of printing.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only these kinds (comma-separated), or all kinds of an entity (e.g. `trial`).
    #[arg(long, value_name = "KIND,...", value_parser = kind_filter)]
    pub kind: Option<crate::report::changes::KindFilter>,
    /// Also list changes of every other column (`field.changed`).
    #[arg(long)]
    pub all_fields: bool,
    /// Mode of the files written, for a team that shares the folder: 0640 lets the
    /// group read them (folders created get search too: 0750) [default: 0600, or
    /// file_mode in the config file].
    #[arg(long, value_name = "MODE")]
    pub file_mode: Option<crate::file_mode::FileMode>,
}

fn kind_filter(s: &str) -> Result<crate::report::changes::KindFilter, String> {
    crate::report::changes::KindFilter::parse(s)
}

/// `api` options.
#[derive(Debug, Args)]
pub struct ApiArgs {
    /// Connection.
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print secrets in the answer (development keys) instead of "[redacted]".
    #[arg(long)]
    pub show_secrets: bool,
    /// The operation.
    #[command(subcommand)]
    pub op: ApiOp,
}

/// One operation of the API.
#[derive(Debug, Subcommand)]
pub enum ApiOp {
    /// All information about one organization.
    GetOrganization {
        /// Organization id.
        org: i64,
    },
    /// One white label user (white label admins only).
    GetWhitelabelUser {
        /// White label admin organization id.
        org: i64,
        /// User id.
        user: i64,
    },
    /// The caller's organizations.
    ListOrganizations,
    /// A user's organizations (JWT only).
    ListUserOrganizations {
        /// User id.
        user: i64,
    },
    /// Active projects.
    ListProjects,
    /// Full information of one project.
    GetProjectInfo {
        /// Project id.
        project: i64,
        /// Impulse id [default: the project's default impulse].
        #[arg(long)]
        impulse_id: Option<i64>,
    },
    /// The current user's projects.
    ListUserProjects,
}

/// `project` options.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The action.
    #[command(subcommand)]
    pub action: ProjectAction,
}

/// Project actions.
#[derive(Debug, Subcommand)]
pub enum ProjectAction {
    /// Create a project in a white label organization (`create-project`).
    Create(CreateArgs),
}

/// `project create` options.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Connection.
    #[command(flatten)]
    pub conn: ConnArgs,
    /// White label admin organization id.
    #[arg(long, value_name = "ID")]
    pub org: i64,
    /// Project name.
    #[arg(long)]
    pub name: String,
    /// Owner user id.
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "owner_email",
        conflicts_with = "owner_email"
    )]
    pub owner_id: Option<i64>,
    /// Owner e-mail address.
    #[arg(long, value_name = "EMAIL")]
    pub owner_email: Option<String>,
    /// Who can see the project.
    #[arg(long, value_enum)]
    pub visibility: Option<Visibility>,
    /// Print the new project's API key (default: only its fingerprint).
    #[arg(long)]
    pub show_secrets: bool,
}

/// Project visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Visibility {
    /// Viewable by anyone, editable by collaborators.
    Public,
    /// Viewable and editable by collaborators only.
    Private,
}

#[cfg(feature = "sandbox")]
/// `demo` options.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Simulated days (one sync per day).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(0..=400))]
    pub days: u32,
    /// Report output root; the demo's mirror is <DIR>/demo.db unless --db is given.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Size of the sandbox world.
    #[arg(long, value_enum, default_value_t = crate::sandbox::Profile::Small)]
    pub profile: crate::sandbox::Profile,
    /// Seed of the world.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

#[cfg(feature = "sandbox")]
/// `bench` options.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(value_enum, default_value_t = BenchTarget::All)]
    pub target: BenchTarget,
    /// Size of the sandbox world.
    #[arg(long, value_enum, default_value_t = crate::sandbox::Profile::Medium)]
    pub profile: crate::sandbox::Profile,
    /// Requests in flight (sync and baseline alike).
    #[arg(long, default_value_t = 8)]
    pub concurrency: u16,
    /// Simulated network latency added by the sandbox to each answer, in ms.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Daily syncs after the first (`history`).
    #[arg(long, default_value_t = 30)]
    pub days: u32,
    /// Timed syncs per service (`faults`).
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// Share of answers a service that sheds load at random answers 429 (`faults`).
    #[arg(long, value_name = "SHARE", default_value_t = 0.02)]
    pub random_429: f64,
    /// Requests per second of the service with a limit (`faults`; 0: none).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit_rps: u32,
    /// Faults of a service that fails in several ways at once, e.g.
    /// `5xx=0.3,429=0.1,malformed=0.05,truncated=0.05,envelope=0.05` (`faults`:
    /// --runs syncs against it, each one's time and their spread).
    #[arg(long, value_name = "SPEC")]
    pub mix: Option<String>,
    /// Seed of the sandbox's world and of its faults.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// What `bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchTarget {
    /// Sync against a plain parallel download of the same URLs.
    Sync,
    /// All built-in reports over the synced mirror.
    Report,
    /// `export` of the synced mirror to Parquet.
    Export,
    /// `changes` over 30 days of history: 30 daily syncs of a world moved on by the
    /// sandbox's time travel (slow; not part of `all`).
    Changes,
    /// The mirror's growth: --days daily syncs of a world moved on by time travel,
    /// the mirror's size after each and the bytes each table added (not part of
    /// `all`).
    History,
    /// Syncs against a service that answers 429 at random (--random-429, 0: none),
    /// one that allows --limit-rps requests a second and one that fails in several
    /// ways at once (--mix), each --runs times, against fault-free syncs: the time,
    /// the 429s and the bound of each (not part of `all`).
    Faults,
    /// Sync, reports, export and alerts.
    All,
}

/// A `--as-of` day.
fn calendar_day(text: &str) -> Result<chrono::NaiveDate, String> {
    crate::calendar::parse_calendar_day(text)
}

/// `--webhook-format`.
fn webhook_format(text: &str) -> Result<crate::alerts::Format, String> {
    crate::alerts::Format::parse(text).ok_or_else(|| crate::alerts::format::UNKNOWN.to_string())
}

/// The long help of `report NAME`: the built-in reports, from their registry.
fn report_names_help() -> String {
    format!(
        "Reports to build [default: all, including queries/custom/*.sql]. Built in:\n{}",
        crate::report::registry::help()
    )
}
