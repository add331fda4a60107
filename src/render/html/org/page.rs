//! One organization's page: the same styles and header as `index.html`, then its
//! limits with their history, its trials, projects, members, changes and alerts.
//! maud escapes every value spliced in.

use super::super::PageInfo;
use super::super::changes::detail;
use super::super::moment::cell;
use super::super::page::{document, source};
use super::data::{Org, Table};
use crate::alerts::held::Held;
use crate::report::org_facts::{CHANGE_DAYS, ChangeRow, HISTORY_DAYS, Member};
use maud::{Markup, PreEscaped, html};
use std::collections::HashMap;

/// What one page shows.
pub struct OrgPage<'a> {
    pub info: &'a PageInfo<'a>,
    pub org: &'a Org,
    pub limits: &'a Table,
    /// When each metric's limit was or will be reached (by metric), in words.
    pub reached: &'a HashMap<String, String>,
    pub projects: &'a Table,
    pub trials: &'a Table,
    /// The metrics' history charts: (caption, SVG), in the limits' order.
    pub charts: Vec<(String, String)>,
    /// Said when the history is shorter than the 90 days.
    pub history_note: Option<String>,
    pub members: &'a [Member],
    pub changes: &'a [ChangeRow],
    pub alerts: &'a [Held],
}

pub fn render(p: &OrgPage<'_>) -> String {
    let as_of = p.info.as_of.format("%Y-%m-%d").to_string();
    let main = html! {
        p.meta { a href="../index.html" { "← all organizations" } } "\n"
        h1 { (p.org.name) } "\n"
        p.meta { "Organization " (p.org.id) "." } "\n"
        (source(p.info, &as_of))
        (incomplete(p))
        (limits(p))
        (section("trials", "Trials", p.trials, p, "No trial of this organization."))
        (section("projects", "Projects and their compute budgets", p.projects, p, "No project."))
        (members(p.members))
        (changes(p.changes))
        (alerts(p.alerts))
    };
    document(&format!("{} as of {as_of} (orgledger)", p.org.name), main)
}

/// Said first when any figure of the page is incomplete, as the reports flag it.
fn incomplete(p: &OrgPage<'_>) -> Markup {
    let id = p.org.id;
    let missing: Vec<&str> = [p.limits, p.projects]
        .iter()
        .flat_map(|t| t.of_org(id).iter().filter_map(|&r| t.missing[r].as_deref()))
        .collect();
    html! {
        @if !missing.is_empty() {
            p.note.incomplete {
                strong { "Incomplete figures: " }
                (missing.len()) " rows below are lower bounds (marked “incomplete”); missing: "
                (missing.first().copied().unwrap_or(""))
                @if missing.len() > 1 { " and more" }
                "."
            } "\n"
        }
    }
}

fn limits(p: &OrgPage<'_>) -> Markup {
    let reached = |r: usize| {
        let metric = p.limits.keys.get(r).cloned().flatten().unwrap_or_default();
        p.reached.get(&metric).cloned().unwrap_or_default()
    };
    html! {
        h2 id="limits" { "Limits" } "\n"
        (table(p.limits, p.org.id, "No limits.", Some(("limit reached", &reached))))
        h3 { "Use over the last " (HISTORY_DAYS) " days" } "\n"
        @if let Some(note) = &p.history_note { p.note { (note) } "\n" }
        @for (caption, svg) in &p.charts {
            figure.metric { (PreEscaped(svg)) figcaption { (caption) } } "\n"
        }
    }
}

fn section(id: &str, title: &str, t: &Table, p: &OrgPage<'_>, empty: &str) -> Markup {
    html! {
        h2 id=(id) { (title) } "\n"
        (table(t, p.org.id, empty, None))
    }
}

/// A column a page adds to a report table's: its header and each row's cell.
type Added<'a> = (&'a str, &'a dyn Fn(usize) -> String);

/// A report table's rows of the organization, with the `added` column; a row
/// built from partial inputs says so in its last cell.
fn table(t: &Table, org: i64, empty: &str, added: Option<Added<'_>>) -> Markup {
    let rows = t.of_org(org);
    let flagged = rows
        .iter()
        .any(|&r| t.missing.get(r).is_some_and(Option::is_some));
    html! {
        @if rows.is_empty() {
            p.note { (empty) } "\n"
        } @else {
            table {
                tr {
                    @for c in t.cols { th { (c.header) } }
                    @if let Some((header, _)) = added { th { (header) } }
                    @if flagged { th { "complete" } }
                } "\n"
                @for &r in rows {
                    tr class=[t.status.get(r).cloned().flatten()] {
                        @for cells in &t.cells { td { (cell(cells.get(r))) } }
                        @if let Some((_, of)) = added { td { (cell(&of(r))) } }
                        @if flagged {
                            td {
                                @match t.missing.get(r).cloned().flatten() {
                                    Some(m) => { "incomplete: " (m) }
                                    None => "yes",
                                }
                            }
                        }
                    } "\n"
                }
            } "\n"
        }
    }
}

fn members(members: &[Member]) -> Markup {
    html! {
        h2 id="members" { "Members (" (members.len()) ")" } "\n"
        @if members.is_empty() {
            p.note { "No member." } "\n"
        } @else {
            table {
                tr { th { "name" } th { "e-mail" } th { "role" } th { "last seen" } th { "pending" } } "\n"
                @for m in members {
                    tr {
                        td { (m.name) } td { (m.email) } td { (m.role) } td { (cell(&m.last_seen)) }
                        td { @if m.pending { "yes" } @else { "no" } }
                    } "\n"
                }
            } "\n"
        }
    }
}

fn changes(rows: &[ChangeRow]) -> Markup {
    html! {
        h2 id="changes" { "Changes in the last " (CHANGE_DAYS) " days" } "\n"
        @if rows.is_empty() {
            p.note { "The mirror saw no change of this organization, its members, projects or trials." } "\n"
        } @else {
            table {
                tr { th { "observed" } th { "change" } th { "of" } th { "what" } } "\n"
                @for c in rows {
                    tr {
                        td { (cell(&c.observed_at)) } td { (c.kind) } td { (c.entity) }
                        td { (cell(&detail(&c.kind, &c.field, &c.before, &c.after))) }
                    } "\n"
                }
            } "\n"
        }
    }
}

fn alerts(rows: &[Held]) -> Markup {
    html! {
        h2 id="alerts" { "Alerts" } "\n"
        @if rows.is_empty() {
            p.note { "No alert was fired for this organization (alerts are evaluated by " code { "orgledger alerts" } " and the daemon)." } "\n"
        } @else {
            table {
                tr { th { "since" } th { "type" } th { "condition" } } "\n"
                @for a in rows {
                    tr { td { (cell(&a.at)) } td { (a.kind) } td { (a.text) } } "\n"
                }
            } "\n"
        }
    }
}
