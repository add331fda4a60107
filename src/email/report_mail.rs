//! A report subscription's message: the as-of date, what needs action (limits
//! exceeded or at the limit, trials expired and expiring, incomplete figures), the
//! headline counts, a link to the report and what is attached. The rows are the
//! run's one list of rows that need action (`report::attention`), kept to the
//! subscription's organizations, in the cells of the page's action tables
//! (`render::html::data`): the message says what the page and the workbook say.

use crate::email::attach::{Attached, Links, size};
use crate::email::layout::{self, NOTE};
use crate::email::message::Content;
use crate::email::subscription::{RunView, Subscription};
use crate::render::html::data::{ActionTable, actions};
use crate::report::Format;
use crate::report::attention::{Attention, Counts};
use crate::report::status::Status;
use maud::{Markup, html};
use std::collections::BTreeSet;

/// At most this many rows per table; the rest are in the report.
const MAX_ROWS: usize = 50;

/// The message of `sub` for the run.
pub fn compose(view: &RunView, sub: &Subscription, links: &Links, attached: Attached) -> Content {
    let attention = of_organizations(&view.attention, sub.organizations.as_ref());
    let counts = attention.counts();
    let tables = sections(&attention, view);
    let incomplete = incomplete(&attention, sub.organizations.is_some());
    let headline = headline(&counts, sub.organizations.is_some());
    let title = format!("orgledger reports as of {}", view.as_of);
    let need = counts.exceeded + counts.at_limit + counts.trials;
    let subject = match need {
        0 => format!("{}: {title}", sub.name),
        n => format!("{}: {title}, {n} need action", sub.name),
    };
    let source = match view.run_id {
        Some(run) => format!("Figures of sync run {run}."),
        None => "No finished sync before that date.".to_string(),
    };
    let scope = sub.organizations.as_ref().map(|orgs| {
        let ids: Vec<String> = orgs.iter().map(i64::to_string).collect();
        format!("Organizations {} only.", ids.join(", "))
    });
    let link = report_link(view, links);
    let files: Vec<String> = attached
        .files
        .iter()
        .map(|f| format!("{} ({})", f.name, size(f.bytes.len() as u64)))
        .collect();
    let footer = format!(
        "orgledger sends this report to the recipients of the subscription \"{}\" ([[report.subscriptions]] in its config).",
        sub.name
    );

    let mut text = format!("{title}\n{source}\n");
    if let Some(scope) = &scope {
        text.push_str(&format!("{scope}\n"));
    }
    text.push_str("\nHeadline numbers\n");
    for (label, value) in &headline {
        text.push_str(&format!("- {label}: {value}\n"));
    }
    for (heading, table, more) in &tables {
        text.push_str(&format!("\n{heading}\n{}", layout::action_lines(table)));
        text.push_str(&more_line(*more));
    }
    if let Some((rows, more)) = &incomplete {
        text.push_str(&format!(
            "\nIncomplete figures\n{}",
            layout::action_lines(rows)
        ));
        text.push_str(&more_line(*more));
    }
    text.push('\n');
    if let Some(link) = &link {
        text.push_str(&format!("The report: {link}\n"));
    }
    if !files.is_empty() {
        text.push_str(&format!("Attached: {}.\n", files.join(", ")));
    }
    for sentence in &attached.left_out {
        text.push_str(&format!("{sentence}\n"));
    }
    text.push_str(&format!("\n-- \n{footer}\n"));

    let body = html! {
        p { (source) @if let Some(scope) = &scope { " " (scope) } }
        (layout::heading("Headline numbers"))
        (layout::figures(&headline))
        @for (heading, table, more) in &tables {
            (layout::heading(heading))
            (layout::action_table(table))
            (more_note(*more))
        }
        @if let Some((rows, more)) = &incomplete {
            (layout::heading("Incomplete figures"))
            (layout::action_table(rows))
            (more_note(*more))
        }
        @if let Some(link) = &link {
            p { "The report: " a href=(link) { (link) } }
        }
        @if !files.is_empty() {
            p { "Attached: " (files.join(", ")) "." }
        }
        @for sentence in &attached.left_out {
            p { (sentence) }
        }
        p style=(NOTE) { (footer) }
    };
    Content {
        subject,
        text,
        html: layout::document(&title, body),
        attachments: attached.files,
    }
}

/// The rows of `orgs` only (all without a filter). Incomplete rows are not kept
/// by organization, so a filtered message leaves their list out (its counts say so).
fn of_organizations(all: &Attention, orgs: Option<&BTreeSet<i64>>) -> Attention {
    let Some(orgs) = orgs else {
        return all.clone();
    };
    let mine = |id: Option<i64>| id.is_some_and(|id| orgs.contains(&id));
    Attention {
        limits: all
            .limits
            .as_ref()
            .map(|l| l.iter().filter(|r| mine(r.org_id)).cloned().collect()),
        trials: all
            .trials
            .as_ref()
            .map(|t| t.iter().filter(|r| mine(r.org_id)).cloned().collect()),
        projects: all
            .projects
            .as_ref()
            .map(|p| p.iter().filter(|r| mine(r.org_id)).cloned().collect()),
        incomplete: None,
    }
}

/// The action tables the message shows: limits exceeded or at the limit, and the
/// trials expired or expiring; each with the count of rows left out.
fn sections(attention: &Attention, view: &RunView) -> Vec<(String, ActionTable, usize)> {
    let urgent = Attention {
        limits: attention.limits.as_ref().map(|l| {
            l.iter()
                .filter(|r| matches!(r.status, Status::Exceeded | Status::AtLimit))
                .cloned()
                .collect()
        }),
        trials: attention.trials.clone(),
        projects: None,
        incomplete: None,
    };
    let tables = actions(&urgent, view.as_of);
    let mut out = Vec::new();
    for (heading, table) in [
        ("Limits exceeded or at the limit", tables.limits),
        ("Trials expired or expiring", tables.trials),
    ] {
        if let Some(table) = table.filter(|t| !t.rows.is_empty()) {
            let (table, more) = capped(table);
            out.push((heading.to_string(), table, more));
        }
    }
    out
}

/// The incomplete rows as a table (None with a filter or when there are none).
fn incomplete(attention: &Attention, filtered: bool) -> Option<(ActionTable, usize)> {
    let rows = attention
        .incomplete
        .as_ref()
        .filter(|r| !r.is_empty() && !filtered)?;
    let table = ActionTable {
        headers: vec!["Report", "What", "Lacks", "Rows"],
        rows: rows
            .iter()
            .map(|i| {
                vec![
                    i.report.clone(),
                    i.what.clone(),
                    i.missing.clone(),
                    i.rows.to_string(),
                ]
            })
            .collect(),
        classes: Vec::new(),
    };
    Some(capped(table))
}

fn capped(mut table: ActionTable) -> (ActionTable, usize) {
    let more = table.rows.len().saturating_sub(MAX_ROWS);
    table.rows.truncate(MAX_ROWS);
    table.classes.truncate(MAX_ROWS);
    (table, more)
}

fn more_line(more: usize) -> String {
    if more == 0 {
        String::new()
    } else {
        format!("- … and {more} more in the report\n")
    }
}

fn more_note(more: usize) -> Markup {
    html! { @if more > 0 { p style=(NOTE) { "… and " (more) " more in the report." } } }
}

/// The counts a reader sees first: those of the terminal summary and the page's
/// cards (`Attention::counts`).
fn headline(c: &Counts, filtered: bool) -> Vec<(String, String)> {
    let incomplete = if filtered {
        "in the report (not kept by organization)".to_string()
    } else {
        c.incomplete.to_string()
    };
    [
        ("Limits exceeded", c.exceeded.to_string()),
        ("Limits at the limit", c.at_limit.to_string()),
        ("Limits at warning", c.warning.to_string()),
        ("Organizations with such limits", c.limit_orgs.to_string()),
        ("Trials expired", c.trials_expired.to_string()),
        ("Trials expiring", c.trials_expiring.to_string()),
        (
            "Projects over the compute budget flag",
            c.projects.to_string(),
        ),
        ("Rows with incomplete figures", incomplete),
    ]
    .into_iter()
    .map(|(label, value)| (label.to_string(), value))
    .collect()
}

/// The report's page when the run wrote one, else its folder; None without
/// `report.base_url`.
fn report_link(view: &RunView, links: &Links) -> Option<String> {
    let page = view.files.iter().any(|f| f.format == Format::Html);
    links.to(if page { "index.html" } else { "" })
}
