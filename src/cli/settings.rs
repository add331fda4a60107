//! Resolving what a command runs with: flags first, then environment, then the
//! config file, then defaults. Credentials are resolved here and only here.

use crate::alerts::Retry;
use crate::api::client::{ClientConfig, Credentials};
use crate::api::secret::Secret;
use crate::cli::UsageError;
use crate::cli::args::{Cli, ConnArgs, PaceArgs};
use crate::config::{Config, read_secret_file};
use crate::email::smtp::{Login, Server};
use crate::email::{EmailError, Mailer, MailerSettings, Subscription, message};
use crate::file_mode::FileMode;
use crate::report::Thresholds;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable with the API key.
pub const ENV_API_KEY: &str = "ORGLEDGER_API_KEY";
/// Environment variable with the JWT.
pub const ENV_JWT: &str = "ORGLEDGER_JWT";
/// Default mirror path.
pub const DEFAULT_DB: &str = "orgledger.db";
/// How long one step of the SMTP dialogue may take unless `[email] timeout_secs` says.
pub const DEFAULT_SMTP_TIMEOUT_SECS: u64 = 30;

/// Global settings shared by every command.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The mirror.
    pub db: PathBuf,
    /// The parsed config file (empty when none was given).
    pub config: Config,
    /// The `--db` and `--config` this run was given, repeated in the commands it
    /// suggests so they can be pasted.
    given: Vec<(&'static str, PathBuf)>,
}

impl Settings {
    /// Loads the config file (if any) and resolves the mirror path.
    pub fn from_cli(cli: &Cli) -> Result<Settings> {
        let config = match &cli.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        let db = cli
            .db
            .clone()
            .or_else(|| config.db.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
        let given = [("--db", &cli.db), ("--config", &cli.config)]
            .into_iter()
            .filter_map(|(flag, path)| path.clone().map(|p| (flag, p)))
            .collect();
        Ok(Settings { db, config, given })
    }

    /// `orgledger <rest>` as the user can paste it to run against the same mirror:
    /// the program as it was started and the `--db`/`--config` it was given.
    pub fn command_line(&self, rest: &str) -> String {
        let globals = self
            .given
            .iter()
            .map(|(flag, path)| (*flag, path.as_path()));
        command_line(globals, rest)
    }

    /// The mode of report and export files: the flag, else the config
    /// file's `file_mode`, else owner only.
    pub fn file_mode(&self, flag: Option<FileMode>) -> FileMode {
        flag.or(self.config.file_mode).unwrap_or_default()
    }

    /// The thresholds of the reports' statuses, which the alerts apply too:
    /// `[thresholds]`, else the defaults. A key's old place still counts when the
    /// new one is absent, with a warning that names the new one.
    pub fn thresholds(&self) -> Result<Thresholds> {
        let (thresholds, notes) = thresholds(&self.config)?;
        for note in notes {
            tracing::warn!("{note}");
        }
        Ok(thresholds)
    }

    /// The mailer of `[email]` (None without the section): the server checked,
    /// the password read from its file (refused when others can read it).
    pub fn mailer(&self) -> Result<Option<Mailer>> {
        let Some(cfg) = &self.config.email else {
            return Ok(None);
        };
        let server = Server::parse(&cfg.smtp_url)
            .map_err(|why| UsageError(format!("config [email] smtp_url: {why}")))?;
        let from = message::mailbox(&cfg.from, "config [email] from").map_err(usage)?;
        let login = match (&cfg.username, &cfg.password_file) {
            (Some(user), Some(file)) => Some(Login {
                user: user.clone(),
                password: read_secret_file(file)?,
            }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(UsageError(
                    "config [email] username needs password_file: a file holding the password, chmod 600".into(),
                )
                .into());
            }
            (None, Some(_)) => {
                return Err(UsageError(
                    "config [email] password_file needs username: the login, most often the account's address".into(),
                )
                .into());
            }
        };
        let roots = match &cfg.ca_file {
            Some(file) => {
                let pem = std::fs::read(file).map_err(|e| {
                    UsageError(format!(
                        "config [email] ca_file {}: {}",
                        file.display(),
                        crate::cause::io(&e)
                    ))
                })?;
                Some((file.clone(), pem))
            }
            None => None,
        };
        let settings = MailerSettings {
            server,
            from,
            login,
            roots,
            timeout: Duration::from_secs(
                cfg.timeout_secs.unwrap_or(DEFAULT_SMTP_TIMEOUT_SECS).max(1),
            ),
            retry: Retry::default(),
        };
        Ok(Some(Mailer::new(settings).map_err(usage)?))
    }

    /// The mailer of `[email]`, which `what` needs.
    pub fn require_mailer(&self, what: &str) -> Result<Mailer> {
        self.mailer()?.ok_or_else(|| {
            UsageError(format!(
                "{what} needs the config file's [email] section: smtp_url, from, username and password_file (docs/email.md)"
            ))
            .into()
        })
    }

    /// `[[report.subscriptions]]`, checked (names unique).
    pub fn subscriptions(&self) -> Result<Vec<Subscription>> {
        let mut out: Vec<Subscription> = Vec::new();
        for entry in self.config.report.subscriptions.iter().flatten() {
            let sub = Subscription::from_config(entry).map_err(usage)?;
            if out.iter().any(|s| s.name == sub.name) {
                return Err(UsageError(format!(
                    "config [[report.subscriptions]]: two subscriptions are named {:?}; give each a name of its own",
                    sub.name
                ))
                .into());
            }
            out.push(sub);
        }
        Ok(out)
    }

    /// Credentials from flags, environment or config files.
    pub fn credentials(&self, conn: &ConnArgs) -> Result<Credentials> {
        let api_key = match (&conn.api_key, &conn.api_key_file) {
            (Some(key), _) => {
                tracing::warn!(
                    "--api-key puts the key in the process list where other users of this machine can read it; prefer {ENV_API_KEY} or --api-key-file"
                );
                Some(Secret::new(key.clone()))
            }
            (None, Some(file)) => Some(read_secret_file(file)?),
            (None, None) => match env_secret(ENV_API_KEY) {
                Some(key) => Some(key),
                None => self
                    .config
                    .api_key_file
                    .as_deref()
                    .map(read_secret_file)
                    .transpose()?,
            },
        };
        let jwt = match &conn.jwt_file {
            Some(file) => Some(read_secret_file(file)?),
            None => match env_secret(ENV_JWT) {
                Some(jwt) => Some(jwt),
                None => self
                    .config
                    .jwt_file
                    .as_deref()
                    .map(read_secret_file)
                    .transpose()?,
            },
        };
        let creds = Credentials { api_key, jwt };
        if creds.is_empty() {
            return Err(UsageError(format!(
                "no credentials: set {ENV_API_KEY} or {ENV_JWT}, pass --api-key-file/--jwt-file, or set api_key_file in the config file"
            ))
            .into());
        }
        Ok(creds)
    }

    /// The client configuration for a command's connection and pace flags.
    pub fn client_config(&self, conn: &ConnArgs, pace: &PaceArgs) -> Result<ClientConfig> {
        let base_url = conn
            .base_url
            .clone()
            .or_else(|| self.config.base_url.clone())
            .ok_or_else(|| {
                UsageError(
                    "no service URL: pass --base-url, set ORGLEDGER_BASE_URL, or base_url in the config file".into(),
                )
            })?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(UsageError(format!(
                "the service URL {base_url:?} has no scheme: write it as http://{0} or https://{0}",
                base_url.trim_start_matches('/')
            ))
            .into());
        }
        let mut cfg = ClientConfig::new(base_url, self.credentials(conn)?);
        if let Some(n) = pace.concurrency.or(self.config.concurrency) {
            cfg.concurrency = usize::from(n.max(1));
        }
        cfg.rps = pace.rps.or(self.config.rps);
        if let Some(rps) = cfg.rps
            && !(rps.is_finite() && rps > 0.0)
        {
            return Err(UsageError(format!("--rps must be a positive number, got {rps}")).into());
        }
        if let Some(secs) = conn.timeout.or(self.config.timeout_secs) {
            cfg.timeout = Duration::from_secs(secs.max(1));
        }
        if let Some(secs) = pace.outage_limit.or(self.config.outage_limit_secs) {
            cfg.outage.limit = Duration::from_secs(secs);
        }
        Ok(cfg)
    }
}

/// An e-mail setting that cannot be used is the user's to fix (exit 2).
pub fn usage(e: EmailError) -> anyhow::Error {
    match e {
        EmailError::Setup(why) => UsageError(why).into(),
        other => other.into(),
    }
}

fn env_secret(name: &str) -> Option<Secret> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .map(Secret::new)
}

/// `<program> [FLAG PATH]... <rest>`, each path quoted for a POSIX shell. The program
/// is named as it was started (`target/release/orgledger` under `cargo run`), so
/// the line works where it is printed.
pub fn command_line<'a>(
    globals: impl IntoIterator<Item = (&'static str, &'a Path)>,
    rest: &str,
) -> String {
    let program = std::env::args_os()
        .next()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "orgledger".to_string());
    let mut words = vec![shell_word(&program)];
    for (flag, path) in globals {
        words.push(flag.to_string());
        words.push(shell_word(&path.to_string_lossy()));
    }
    words.push(rest.to_string());
    words.join(" ")
}

/// `text` as one word of a POSIX shell: as is when it is made of characters no
/// shell treats specially, otherwise single-quoted.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The config's thresholds and a note for each key read from its old place.
fn thresholds(config: &Config) -> Result<(Thresholds, Vec<String>)> {
    let mut thresholds = Thresholds::default();
    let mut notes = Vec::new();
    let old = config.alerts.as_ref().and_then(|a| a.trial_expiring_days);
    let days = match (config.thresholds.trial_expiring_days, old) {
        (Some(days), old) => {
            if old.is_some() {
                notes.push(
                    "config [alerts] trial_expiring_days is ignored: [thresholds] trial_expiring_days is set, and the reports and the alerts both read that one; remove the old key".to_string(),
                );
            }
            Some(days)
        }
        (None, Some(days)) => {
            notes.push(
                "config [alerts] trial_expiring_days is replaced by [thresholds] trial_expiring_days, which the reports' trial status reads too; move the key there".to_string(),
            );
            Some(days)
        }
        (None, None) => None,
    };
    if let Some(days) = days {
        if days < 0 {
            return Err(UsageError(format!(
                "config [thresholds] trial_expiring_days: {days} is negative"
            ))
            .into());
        }
        thresholds.expiring_days = days;
    }
    Ok((thresholds, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (Thresholds, Vec<String>) {
        thresholds(&toml::from_str(text).expect("config parses")).expect("thresholds")
    }

    #[test]
    fn trial_expiring_days_is_one_setting_and_its_old_key_still_counts_with_a_warning() {
        let (t, notes) = parsed("");
        assert_eq!((t.expiring_days, notes.len()), (14, 0));
        let (t, notes) = parsed("[thresholds]\ntrial_expiring_days = 30\n");
        assert_eq!((t.expiring_days, notes.len()), (30, 0));
        let (t, notes) = parsed("[alerts]\ntrial_expiring_days = 21\n");
        assert_eq!(t.expiring_days, 21);
        assert!(
            notes[0].contains("[thresholds] trial_expiring_days"),
            "{notes:?}"
        );
        let (t, notes) =
            parsed("[thresholds]\ntrial_expiring_days = 30\n[alerts]\ntrial_expiring_days = 21\n");
        assert_eq!(t.expiring_days, 30);
        assert!(notes[0].contains("ignored"), "{notes:?}");
        let bad = toml::from_str("[thresholds]\ntrial_expiring_days = -1\n").expect("parses");
        assert!(thresholds(&bad).is_err());
    }

    #[test]
    fn suggested_commands_quote_paths_for_the_shell() {
        assert_eq!(shell_word("reports/demo.db"), "reports/demo.db");
        assert_eq!(shell_word("my mirror's.db"), "'my mirror'\\''s.db'");
        let line = command_line([("--db", Path::new("a b.db"))], "status");
        assert!(line.ends_with(" --db 'a b.db' status"), "{line}");
    }
}
