//! `orgledger alerts`: evaluate the alerts once, store and send the new ones.

use crate::alerts::outbox::MAIL_PREFIX;
use crate::alerts::webhook::DEFAULT_NAME;
use crate::alerts::{self, AlertOptions, Format, Jsonl, Kind, Mode, Rules, SigningKey, Webhook};
use crate::cli::args::AlertsArgs;
use crate::cli::settings::{self, Settings};
use crate::cli::{Exit, UsageError};
use crate::config::{AlertsConfig, WebhookConfig, read_secret_file};
use crate::email::{self, routing::Routes};
use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;

/// The rules of `[alerts]`, checked.
fn rules(cfg: &AlertsConfig) -> Result<Rules> {
    let mut rules = Rules::default();
    if let Some(thresholds) = &cfg.thresholds {
        if let Some(bad) = thresholds.iter().find(|t| !(t.is_finite() && **t > 0.0)) {
            return Err(UsageError(format!(
                "config [alerts] thresholds: {bad} is not a positive percentage"
            ))
            .into());
        }
        rules.thresholds = thresholds.clone();
    }
    let days = |value: Option<i64>, key: &str, default: i64| -> Result<i64> {
        match value {
            Some(d) if d < 0 => {
                Err(UsageError(format!("config [alerts] {key}: {d} is negative")).into())
            }
            Some(d) => Ok(d),
            None => Ok(default),
        }
    };
    rules.trial_deletion_days = days(
        cfg.trial_deletion_days,
        "trial_deletion_days",
        rules.trial_deletion_days,
    )?;
    if let Some(k) = cfg.sync_failing_runs {
        rules.sync_failing_runs = k.max(1);
    }
    if let Some(kinds) = &cfg.kinds {
        rules.kinds = kinds
            .iter()
            .map(|name| {
                Kind::parse(name).ok_or_else(|| {
                    let valid: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
                    UsageError(format!(
                        "config [alerts] kinds: unknown kind {name:?}; valid kinds: {}",
                        valid.join(", ")
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(rules)
}

/// The evaluation's settings from flags and `[alerts]` (the as-of date is today
/// unless given).
pub fn options(settings: &Settings, args: &AlertsArgs) -> Result<AlertOptions> {
    let cfg = settings.config.alerts.clone().unwrap_or_default();
    let as_of = args
        .as_of
        .unwrap_or_else(|| chrono::Utc::now().date_naive());
    let mut opts = AlertOptions::new(settings.db.clone(), as_of);
    opts.rules = rules(&cfg)?;
    opts.thresholds = settings.thresholds()?;
    opts.dry_run = args.dry_run;
    opts.queries_dir = settings.config.report.queries.clone();
    opts.redact_pii = settings.config.report.redact_pii.unwrap_or(false);
    opts.jsonl = args
        .jsonl
        .as_deref()
        .or(cfg.jsonl.as_deref())
        .map(Jsonl::from_arg);
    opts.webhooks = webhooks(&cfg, args)?;
    opts.mail = mail_routes(settings, &cfg)?;
    if !opts.dry_run && !opts.has_destination() {
        return Err(UsageError(alerts::NO_DESTINATION.into()).into());
    }
    Ok(opts)
}

/// `[[alerts.email]]`, checked: who gets which events by e-mail. They need
/// `[email]`, which is checked here too, so a mistake stops the command (or the
/// daemon, at start) before anything is recorded.
fn mail_routes(
    settings: &Settings,
    cfg: &AlertsConfig,
) -> Result<Option<Arc<dyn alerts::MailRoute>>> {
    let Some(entries) = cfg.email.as_deref() else {
        return Ok(None);
    };
    settings.require_mailer("[[alerts.email]]")?;
    let routes = Routes::from_config(entries).map_err(settings::usage)?;
    Ok(Some(Arc::new(routes)))
}

/// The webhooks: `--webhook` (else `webhook_url`), named `default`, in
/// `--webhook-format` (else `format`), then each of `[[alerts.webhooks]]`.
fn webhooks(cfg: &AlertsConfig, args: &AlertsArgs) -> Result<Vec<Webhook>> {
    let mut hooks = Vec::new();
    if let Some(url) = args.webhook.as_deref().or(cfg.webhook_url.as_deref()) {
        let format = match args.webhook_format {
            Some(format) => format,
            None => format_of(cfg.format.as_deref(), "config [alerts] format")?,
        };
        let secret = args
            .webhook_secret_file
            .as_deref()
            .or(cfg.webhook_secret_file.as_deref());
        hooks.push(webhook(DEFAULT_NAME, url, format, secret)?);
    }
    for entry in cfg.webhooks.iter().flatten() {
        let hook = configured(entry)?;
        if hook.name().starts_with(MAIL_PREFIX) {
            return Err(UsageError(format!(
                "config [[alerts.webhooks]] {:?}: a webhook's name may not start with {MAIL_PREFIX:?}, which names e-mail recipients",
                hook.name()
            ))
            .into());
        }
        if hooks.iter().any(|h: &Webhook| h.name() == hook.name()) {
            return Err(UsageError(format!(
                "config [alerts]: two webhooks are named {:?}; give each of [[alerts.webhooks]] a name of its own",
                hook.name()
            ))
            .into());
        }
        hooks.push(hook);
    }
    Ok(hooks)
}

/// One `[[alerts.webhooks]]` entry.
fn configured(entry: &WebhookConfig) -> Result<Webhook> {
    let format = format_of(entry.format.as_deref(), "config [[alerts.webhooks]] format")?;
    let name = entry.name.as_deref().unwrap_or(format.as_str());
    let url = match (&entry.url, &entry.url_file) {
        (Some(url), None) => url.clone(),
        (None, Some(file)) => read_secret_file(file)?.expose().to_string(),
        _ => {
            return Err(UsageError(format!(
                "config [[alerts.webhooks]] {name:?}: give it url or url_file (one of them)"
            ))
            .into());
        }
    };
    webhook(name, &url, format, entry.secret_file.as_deref())
}

/// A format name of the config (standard when absent).
fn format_of(text: Option<&str>, key: &str) -> Result<Format> {
    match text {
        None => Ok(Format::default()),
        Some(text) => Format::parse(text).ok_or_else(|| {
            UsageError(format!("{key}: {text:?} is {}", alerts::format::UNKNOWN)).into()
        }),
    }
}

/// A webhook in its format: the standard one signed with the secret in
/// `secret_file`, Slack and Teams unsigned (their URL is the secret).
fn webhook(name: &str, url: &str, format: Format, secret_file: Option<&Path>) -> Result<Webhook> {
    let retry = alerts::Retry::default();
    let hook = match (format, secret_file) {
        (Format::Standard, Some(file)) => {
            let key = SigningKey::parse(&read_secret_file(file)?, file)?;
            Webhook::new(url, key, retry)
        }
        (Format::Standard, None) if name == DEFAULT_NAME => {
            return Err(UsageError(
                "a webhook needs its signing secret: pass --webhook-secret-file (or set webhook_secret_file in [alerts])".into(),
            )
            .into());
        }
        (Format::Standard, None) => {
            return Err(UsageError(format!(
                "webhook {name:?} needs its signing secret: set its secret_file in [[alerts.webhooks]]"
            ))
            .into());
        }
        (chat, None) => Webhook::chat(url, chat, retry),
        (chat, Some(_)) => {
            return Err(UsageError(format!(
                "webhook {name:?} is a {} webhook, which is not signed (its URL is the secret): remove its secret file",
                chat.as_str()
            ))
            .into());
        }
    };
    Ok(hook
        .with_context(|| format!("webhook {name:?}"))?
        .named(name))
}

/// Runs the command.
pub async fn run(settings: &Settings, args: &AlertsArgs) -> Result<Exit> {
    let opts = options(settings, args)?;
    let mut outcome = alerts::run(&opts, None).await?;
    match outcome.mode {
        Mode::Advanced => {}
        Mode::DryRun | Mode::ReadOnly => crate::out!("{}", alerts::jsonl::lines(&outcome.events)),
    }
    let mailed = match (&opts.mail, outcome.mode) {
        (Some(route), Mode::Advanced) => {
            let mailer = settings.require_mailer("[[alerts.email]]")?;
            let tally = email::digest::deliver(&opts.db, &mailer, route.as_ref()).await?;
            outcome.outbox = Some(outbox_counts(&opts.db)?);
            Some(tally)
        }
        _ => None,
    };
    let mut line = summary(&opts, &outcome);
    if let Some(t) = mailed {
        line.push_str(&format!(
            "; alert e-mails: {} sent, {} pending, {} refused",
            t.sent, t.pending, t.failed
        ));
    }
    eprintln!("{line}");
    Ok(Exit::Ok)
}

/// The outbox's deliveries by state, e-mail included.
fn outbox_counts(db: &Path) -> Result<alerts::Counts> {
    let conn = crate::mirror::open_ro(db)?;
    alerts::outbox::counts(&conn).map_err(|e| anyhow::anyhow!(crate::cause::sqlite(&e)))
}

/// One line saying what happened.
pub fn summary(opts: &AlertOptions, outcome: &alerts::AlertOutcome) -> String {
    let mut line = match outcome.mode {
        Mode::Advanced => format!("alerts as of {}: {} new", opts.as_of, outcome.events.len()),
        Mode::DryRun => format!(
            "alerts as of {} (dry run, nothing stored or sent): {} would be sent",
            opts.as_of,
            outcome.events.len()
        ),
        Mode::ReadOnly => format!(
            "alerts as of {} (read-only: the state was last advanced as of {}; nothing stored or sent): {} conditions held",
            opts.as_of,
            outcome
                .latest_before
                .map_or("-".to_string(), |d| d.to_string()),
            outcome.events.len()
        ),
    };
    if let Some(c) = outcome.outbox {
        line.push_str(&format!(
            "; deliveries: {} delivered, {} pending, {} failed",
            c.delivered, c.pending, c.failed
        ));
    }
    line
}
