//! The short text a person reads at a glance after a run: the rows that need action
//! (limits, trials, projects; the same list and counts as the HTML page, see
//! [`crate::report::attention`]) and the top compute users of the last 30 days.

use crate::calendar::day_of;
use crate::render::ReportOutcome;
use crate::report::attention::{Attention, exhaustion_text};
use crate::report::compute_trends::TopUser;
use crate::report::units::{hours, metric_label};
use std::fmt::Write;

/// At most this many lines per section.
const MAX_LINES: usize = 10;

/// A few lines for a person: see the module documentation.
pub fn summary(outcome: &ReportOutcome) -> String {
    let mut out = String::new();
    let source = match (&outcome.run_id, &outcome.observed_at) {
        (Some(id), Some(at)) => format!("sync run {id}, observed {at}"),
        _ => "no finished sync run before that date".to_string(),
    };
    let _ = writeln!(
        out,
        "Reports as of {} ({source}) in {}",
        outcome.as_of,
        outcome.dir.display()
    );
    let attention = &outcome.attention;
    limits(&mut out, attention, outcome.as_of);
    trials(&mut out, attention, outcome.as_of);
    projects(&mut out, attention);
    incomplete(&mut out, attention);
    if let Some(users) = &outcome.top_users {
        top_users(&mut out, users);
    }
    let files: usize = outcome.files.len();
    let _ = writeln!(out, "{files} files written (see manifest.json)");
    out
}

fn limits(out: &mut String, attention: &Attention, as_of: chrono::NaiveDate) {
    let Some(limits) = &attention.limits else {
        return;
    };
    let c = attention.counts();
    let _ = writeln!(
        out,
        "Limits at warning, at the limit or over: {} in {} organization(s) \
         ({} exceeded, {} at the limit, {} warning)",
        c.limits, c.limit_orgs, c.exceeded, c.at_limit, c.warning
    );
    for l in limits.iter().take(MAX_LINES) {
        let runs_out = l
            .projected_exhaustion
            .as_deref()
            .map(|d| format!(", runs out: {}", exhaustion_text(d, as_of)))
            .unwrap_or_default();
        let pct = l.pct.map(|p| format!(" ({p:.2} %)")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} (#{}): {} {} of {}{pct}, {}{runs_out}",
            l.org_name,
            l.org_id.map_or_else(|| "?".to_string(), |n| n.to_string()),
            metric_label(&l.metric),
            l.used_human,
            l.limit_human,
            l.status.as_str(),
        );
    }
    more(out, limits.len());
}

fn trials(out: &mut String, attention: &Attention, as_of: chrono::NaiveDate) {
    let Some(trials) = &attention.trials else {
        return;
    };
    let c = attention.counts();
    let _ = writeln!(
        out,
        "Trials expiring or expired: {} ({} expired, {} expiring)",
        c.trials, c.trials_expired, c.trials_expiring
    );
    let day = |d: &Option<String>| {
        d.as_deref()
            .map_or("?".to_string(), |d| d.get(..10).unwrap_or(d).to_string())
    };
    for t in trials.iter().take(MAX_LINES) {
        let when = if t.expired() {
            let due_in = t
                .span
                .map(|(_, due)| match due - day_of(as_of) {
                    d if d >= 0 => format!(" (in {d} days)"),
                    d => format!(" ({} days ago)", -d),
                })
                .unwrap_or_default();
            format!(
                "expired {}, deletion due {}{due_in}",
                day(&t.expiration_date),
                day(&t.deletion_due)
            )
        } else {
            format!(
                "expires {} (in {} days)",
                day(&t.expiration_date),
                t.days_left
                    .map_or_else(|| "?".to_string(), |n| n.to_string())
            )
        };
        let _ = writeln!(
            out,
            "  #{} {} ({}): {when}",
            t.trial_id
                .map_or_else(|| "?".to_string(), |n| n.to_string()),
            t.user,
            t.org
        );
    }
    more(out, trials.len());
}

fn projects(out: &mut String, attention: &Attention) {
    let Some(projects) = &attention.projects else {
        return;
    };
    let _ = writeln!(
        out,
        "Projects over the compute budget flag: {}",
        projects.len()
    );
    for p in projects.iter().take(MAX_LINES) {
        let _ = writeln!(
            out,
            "  {} (#{}, {}): {} used",
            p.project_name,
            p.project_id
                .map_or_else(|| "?".to_string(), |n| n.to_string()),
            p.org_name,
            p.pct
                .map_or_else(|| "?".to_string(), |v| format!("{v:.2} %")),
        );
    }
    more(out, projects.len());
}

fn incomplete(out: &mut String, attention: &Attention) {
    let Some(rows) = &attention.incomplete else {
        return;
    };
    let _ = writeln!(
        out,
        "Rows with incomplete figures (a lower bound): {}",
        attention.counts().incomplete
    );
    for i in rows.iter().take(MAX_LINES) {
        let times = if i.rows > 1 {
            format!(" ({} rows)", i.rows)
        } else {
            String::new()
        };
        let _ = writeln!(out, "  {}: {}{times} lacks {}", i.report, i.what, i.missing);
    }
    more(out, rows.len());
}

fn top_users(out: &mut String, users: &[TopUser]) {
    let _ = writeln!(out, "Top compute users, last 30 days:");
    if users.is_empty() {
        let _ = writeln!(out, "  (no daily metrics)");
    }
    for (rank, user) in users.iter().take(5).enumerate() {
        let trend = match user.prev_30d {
            Some(p) if p > 0.0 => {
                let change = 100.0 * (user.last_30d - p) / p;
                let word = if change >= 0.0 { "up" } else { "down" };
                format!("{word} {:.0}% vs the 30 days before", change.abs())
            }
            _ => "no earlier 30 days to compare".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}. {} (#{}): {:.1} h ({trend})",
            rank + 1,
            user.name.as_deref().unwrap_or("?"),
            user.id,
            hours(user.last_30d),
        );
    }
}

fn more(out: &mut String, total: usize) {
    if total > MAX_LINES {
        let _ = writeln!(out, "  ... and {} more", total - MAX_LINES);
    }
}
