//! `orgledger alerts`: evaluate the alerts once, store and send the new ones.

use crate::alerts::{self, AlertOptions, Jsonl, Kind, Mode, Rules, SigningKey, Webhook};
use crate::cli::args::AlertsArgs;
use crate::cli::settings::Settings;
use crate::cli::{Exit, UsageError};
use crate::config::{AlertsConfig, read_secret_file};
use anyhow::Result;

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
    rules.trial_expiring_days = days(
        cfg.trial_expiring_days,
        "trial_expiring_days",
        rules.trial_expiring_days,
    )?;
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
    opts.dry_run = args.dry_run;
    opts.queries_dir = settings.config.report.queries.clone();
    opts.redact_pii = settings.config.report.redact_pii.unwrap_or(false);
    opts.jsonl = args
        .jsonl
        .as_deref()
        .or(cfg.jsonl.as_deref())
        .map(Jsonl::from_arg);
    let url = args.webhook.clone().or(cfg.webhook_url);
    let secret_file = args.webhook_secret_file.clone().or(cfg.webhook_secret_file);
    opts.webhook = match (url, secret_file) {
        (Some(url), Some(file)) => {
            let key = SigningKey::parse(&read_secret_file(&file)?, &file)?;
            Some(Webhook::new(&url, key, alerts::Retry::default())?)
        }
        (Some(_), None) => {
            return Err(UsageError(
                "a webhook needs its signing secret: pass --webhook-secret-file (or set webhook_secret_file in [alerts])".into(),
            )
            .into());
        }
        (None, _) => None,
    };
    if !opts.dry_run && !opts.has_destination() {
        return Err(UsageError(alerts::NO_DESTINATION.into()).into());
    }
    Ok(opts)
}

/// Runs the command.
pub async fn run(settings: &Settings, args: &AlertsArgs) -> Result<Exit> {
    let opts = options(settings, args)?;
    let outcome = alerts::run(&opts, None).await?;
    match outcome.mode {
        Mode::Advanced => {}
        Mode::DryRun | Mode::ReadOnly => crate::out!("{}", alerts::jsonl::lines(&outcome.events)),
    }
    eprintln!("{}", summary(&opts, &outcome));
    Ok(Exit::Ok)
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
            "; webhook outbox: {} delivered, {} pending, {} failed",
            c.delivered, c.pending, c.failed
        ));
    }
    line
}
