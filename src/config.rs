//! The TOML config file (`--config`): everything a scheduled install sets once.
//! Unknown keys are errors, so a typo does not silently fall back to a default.
//! See `docs/orgledger.example.toml` for a commented example.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole file. Every key is optional; flags override it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The mirror file.
    pub db: Option<PathBuf>,
    /// Service base URL.
    pub base_url: Option<String>,
    /// White label admin organization.
    pub whitelabel_org: Option<i64>,
    /// File holding the API key (must not be readable by group or others).
    pub api_key_file: Option<PathBuf>,
    /// File holding the JWT (same rule).
    pub jwt_file: Option<PathBuf>,
    /// Requests in flight.
    pub concurrency: Option<u16>,
    /// Requests per second cap.
    pub rps: Option<f64>,
    /// Request timeout, seconds.
    pub timeout_secs: Option<u64>,
    /// How long a sync waits for a service that went away, seconds.
    pub outage_limit_secs: Option<u64>,
    /// Store development keys in clear.
    pub store_secrets: Option<bool>,
    /// Mode of report and export files, as octal text ("0640").
    pub file_mode: Option<crate::file_mode::FileMode>,
    /// Cron schedules.
    #[serde(default)]
    pub schedule: ScheduleConfig,
    /// Report settings.
    #[serde(default)]
    pub report: ReportConfig,
    /// The thresholds the reports and the alerts both apply.
    #[serde(default)]
    pub thresholds: ThresholdsConfig,
    /// Alerts; the daemon evaluates them after each report job only when present.
    pub alerts: Option<AlertsConfig>,
    /// Parquet export settings.
    #[serde(default)]
    pub export: ExportConfig,
    /// Daemon settings (metrics and health endpoint).
    #[serde(default)]
    pub daemon: DaemonSection,
    /// The daemon's backups of the mirror.
    #[serde(default)]
    pub backup: BackupConfig,
    /// Personal data of people who left.
    #[serde(default)]
    pub privacy: PrivacyConfig,
    /// The SMTP server alerts and report subscriptions are e-mailed through.
    pub email: Option<EmailConfig>,
}

/// `[email]` (docs/email.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// `smtps://HOST[:465]` (TLS from the start) or `smtp://HOST[:587]` (STARTTLS
    /// required); `smtp://HOST:PORT?tls=none` (in clear) only to a loopback address.
    pub smtp_url: String,
    /// The sender, `address` or `Name <address>`.
    pub from: String,
    /// The login name (most servers: the address of the account).
    pub username: Option<String>,
    /// File holding the password (mode 600), an app password where the provider
    /// has them.
    pub password_file: Option<PathBuf>,
    /// A PEM file of root certificates trusted besides the system's (a server
    /// with a certificate of a private authority).
    pub ca_file: Option<PathBuf>,
    /// Seconds one step of the SMTP dialogue may take [default: 30].
    pub timeout_secs: Option<u64>,
}

/// `[[report.subscriptions]]`: a report e-mailed to a list of addresses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionConfig {
    /// How the mirror, the logs, `status` and `report --send` call it.
    pub name: String,
    /// Who gets it: one message each.
    pub recipients: Vec<String>,
    /// What is attached: "workbook" (the `.xlsx`), "csv" (the CSV files zipped)
    /// [default: nothing].
    pub attach: Option<Vec<String>>,
    /// Only these organizations' rows (in the message and the CSV files).
    pub organizations: Option<Vec<i64>>,
    /// Its own cron schedule; without one it goes out after each report job.
    pub cron: Option<String>,
    /// Attachments beyond this many megabytes in total are linked instead
    /// [default: 10].
    pub max_attachment_mb: Option<f64>,
}

/// `[privacy]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyConfig {
    /// Each sync (the daemon's too) ends by erasing the people removed from the
    /// service more than this many days before (`orgledger forget` for each).
    pub forget_removed_after_days: Option<u32>,
}

/// `[backup]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupConfig {
    /// Folder of the backups.
    pub dir: Option<PathBuf>,
    /// The daemon backs the mirror up after each sync that stored data.
    pub after_sync: Option<bool>,
    /// Keep this many backups (the oldest are removed once a new one is verified).
    pub keep: Option<usize>,
}

/// `[export]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportConfig {
    /// Export folder, or an object-store URL (`s3://bucket/prefix`, `gs://`, `az://`,
    /// `file://`).
    pub out: Option<PathBuf>,
    /// Tables to export (default: all).
    pub tables: Option<Vec<String>>,
    /// Every version of every row instead of the current state.
    pub history: Option<bool>,
    /// The daemon exports after each sync that stored data.
    pub after_sync: Option<bool>,
    /// Add the changes of the runs since the last export to the append-only history
    /// (`<out>/history/`) instead of exporting the state.
    pub incremental: Option<bool>,
}

/// `[daemon]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSection {
    /// Address of `/metrics` and `/healthz` (off when absent).
    pub listen: Option<String>,
    /// `/healthz` fails when the last successful sync is older than this many sync
    /// schedule periods (default 3).
    pub stale_after_periods: Option<u32>,
}

/// `[schedule]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Cron expression of the sync job.
    pub sync: Option<String>,
    /// Cron expression of the report job.
    pub report: Option<String>,
    /// Sync once when the daemon starts [default: only when the mirror has no
    /// finished sync yet].
    pub sync_at_start: Option<bool>,
}

/// `[report]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// Output root, or an object-store URL.
    pub out: Option<PathBuf>,
    /// Formats: "csv", "json", "html", "parquet", "xlsx".
    pub formats: Option<Vec<String>>,
    /// Keep the report folders of the last N days (older ones are deleted).
    pub retention_days: Option<u32>,
    /// Pseudonymise e-mails and names.
    pub redact_pii: Option<bool>,
    /// Queries folder: its custom/*.sql are reports of their own.
    pub queries: Option<PathBuf>,
    /// Where the report folders are served (`<base_url>/<as-of>/`), for the links
    /// of e-mailed reports.
    pub base_url: Option<String>,
    /// Reports e-mailed to lists of addresses.
    pub subscriptions: Option<Vec<SubscriptionConfig>>,
}

/// `[thresholds]`: each a setting of one concept, read by the reports (a row's
/// status) and the alerts (the event of that status) alike.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsConfig {
    /// A trial is `expiring` (report status, `trial.expiring`) this many days before
    /// its expiration.
    pub trial_expiring_days: Option<i64>,
}

/// `[alerts]` (docs/alerts.md). Flags of `orgledger alerts` override it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsConfig {
    /// Percentages of an entitlement limit that fire `entitlement.threshold`.
    pub thresholds: Option<Vec<f64>>,
    /// Replaced by `[thresholds] trial_expiring_days`, which the reports read too;
    /// still read (with a warning) when that is absent.
    pub trial_expiring_days: Option<i64>,
    /// `trial.deletion_due` this many days before the organization's deletion.
    pub trial_deletion_days: Option<i64>,
    /// `sync.failing` after this many failed or partial syncs in a row.
    pub sync_failing_runs: Option<u32>,
    /// The event types to evaluate (default: all).
    pub kinds: Option<Vec<String>>,
    /// Where events are POSTed (the webhook named `default`).
    pub webhook_url: Option<String>,
    /// File holding the signing secret `whsec_<base64>` (mode 600).
    pub webhook_secret_file: Option<PathBuf>,
    /// The message format of `webhook_url`: "standard" (the default), "slack", "teams".
    pub format: Option<String>,
    /// More webhooks, each with its own name and format.
    pub webhooks: Option<Vec<WebhookConfig>>,
    /// File that gets one JSON event per line, appended.
    pub jsonl: Option<PathBuf>,
    /// Who gets which events by e-mail (through `[email]`).
    pub email: Option<Vec<AlertEmailConfig>>,
}

/// `[[alerts.email]]`: events of some kinds e-mailed, one digest per address and
/// evaluation.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertEmailConfig {
    /// Event types, `trial.*` for a family [default: all].
    pub kinds: Option<Vec<String>>,
    /// Who gets these events; with `owners_file`, those of the organizations the
    /// file does not name and those of no organization.
    pub recipients: Option<Vec<String>>,
    /// CSV (`organization_id,email`) or TOML (`"address" = [ids]`) file: each
    /// address gets the events of its organizations only.
    pub owners_file: Option<PathBuf>,
}

/// `[[alerts.webhooks]]`: one more webhook.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// How the mirror, the logs and `status` call it [default: its format].
    pub name: Option<String>,
    /// "standard" (the default), "slack" or "teams".
    pub format: Option<String>,
    /// Where events are POSTed.
    pub url: Option<String>,
    /// File holding the URL instead (mode 600): a Slack or Teams URL is a secret.
    pub url_file: Option<PathBuf>,
    /// File holding the signing secret (the standard format only, mode 600).
    pub secret_file: Option<PathBuf>,
}

/// A config file that cannot be used. Causes are said inline and are not
/// `source()`s (the crate's rule, `crate::cause`).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable file.
    #[error("cannot read the config file {}: {}; check the --config path", .0.display(), crate::cause::io(.1))]
    Read(PathBuf, std::io::Error),
    /// Not valid TOML or a wrong key/type.
    #[error(
        "invalid config file {}, {}; fix it (docs/orgledger.example.toml shows every key)",
        .0.display(),
        .1
    )]
    Parse(PathBuf, String),
    /// A secret file readable by other users.
    #[error("{0} is readable by other users (mode {1:o}); run `chmod 600 {0}`")]
    Exposed(PathBuf, u32),
    /// A secret file that cannot be read or is empty.
    #[error("cannot read the secret file {0}: {1}")]
    Secret(PathBuf, String),
}

impl Config {
    /// Reads and parses a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::Read(path.to_path_buf(), e))?;
        toml::from_str(&text)
            .map_err(|e| ConfigError::Parse(path.to_path_buf(), where_and_why(&text, &e)))
    }
}

/// The TOML error on one line: "line L, column C: message". toml's own text spans
/// several lines (the offending line and a caret), which an error line cannot hold.
pub fn where_and_why(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim();
    match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message.to_string(),
    }
}

/// Reads a secret from a file that only its owner can read; surrounding white
/// space (a trailing newline) is dropped.
pub fn read_secret_file(path: &Path) -> Result<crate::api::secret::Secret, ConfigError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| ConfigError::Secret(path.to_path_buf(), crate::cause::io(&e)))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ConfigError::Exposed(path.to_path_buf(), mode));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Secret(path.to_path_buf(), crate::cause::io(&e)))?;
    let value = text.trim();
    if value.is_empty() {
        return Err(ConfigError::Secret(
            path.to_path_buf(),
            "the file is empty".into(),
        ));
    }
    Ok(crate::api::secret::Secret::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn parses_the_example_and_rejects_typos() {
        let example = include_str!("../docs/orgledger.example.toml");
        let cfg: Config = toml::from_str(example).expect("example parses");
        assert!(cfg.base_url.is_some());
        assert!(cfg.schedule.sync.is_some());
        let alerts = cfg.alerts.expect("the example has [alerts]");
        assert_eq!(alerts.thresholds, Some(vec![80.0, 100.0, 150.0]));
        assert!(alerts.webhook_secret_file.is_some());
        let formats: Vec<_> = alerts
            .webhooks
            .iter()
            .flatten()
            .map(|w| w.format.clone())
            .collect();
        assert_eq!(formats, [Some("slack".into()), Some("teams".into())]);
        assert_eq!(alerts.email.as_ref().map(Vec::len), Some(3));
        let email = cfg.email.expect("the example has [email]");
        assert!(email.smtp_url.starts_with("smtp://") && email.password_file.is_some());
        let subscriptions = cfg.report.subscriptions.expect("a subscription");
        assert_eq!(subscriptions[0].cron.as_deref(), Some("0 0 7 * * Mon"));
        let err = toml::from_str::<Config>(
            "[email]\nsmtp_url = 'smtp://h'\nfrom = 'a@b'\npassword = 'x'",
        )
        .expect_err("typo");
        assert!(err.to_string().contains("password"));
        let err = toml::from_str::<Config>("[alerts]\nthreshold = [80]").expect_err("typo");
        assert!(err.to_string().contains("threshold"));
        let err = toml::from_str::<Config>("bse_url = 'x'").expect_err("typo");
        assert!(err.to_string().contains("bse_url"));
    }

    #[test]
    fn a_toml_error_is_one_line_with_its_position() {
        let text = "db = 'm.db'\nbse_url = 'x'\n";
        let err = toml::from_str::<Config>(text).expect_err("typo");
        let line = where_and_why(text, &err);
        assert!(
            line.starts_with("line 2, column 1: unknown field `bse_url`"),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn secret_files_must_be_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("key");
        std::fs::write(&path, "ei_abc\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = read_secret_file(&path).expect_err("world-readable");
        assert!(err.to_string().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_secret_file(&path).expect("private").expose(), "ei_abc");
    }
}
