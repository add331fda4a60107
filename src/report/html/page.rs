//! The page around the charts: one XHTML-compatible document with its own styles,
//! no scripts and no outside resources, readable at 1280×800 and in print.

use super::data::{self, ActionTable, Source};
use super::{PageInfo, escape};
use crate::report::attention::Counts;
use crate::report::units::{human, metric_label};
use std::fmt::Write;

const STYLE: &str = "
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif;
  margin: 0; color: #1d1d1f; background: #f5f6f8; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 20px 40px; background: #fff; }
h1 { font-size: 1.6rem; margin: 0.2em 0; }
h2 { font-size: 1.25rem; margin: 1.6em 0 0.4em; border-bottom: 2px solid #e3e5e8; padding-bottom: 0.2em; }
h3 { font-size: 1.05rem; margin: 1.2em 0 0.3em; }
p.meta { color: #555; margin: 0.2em 0 1em; }
ul.cards { display: flex; flex-wrap: wrap; gap: 10px; list-style: none; padding: 0; margin: 0.6em 0; }
ul.cards li { border: 1px solid #d0d4d9; border-radius: 6px; padding: 8px 14px; min-width: 180px; }
ul.cards strong { display: block; font-size: 1.5rem; }
figure { margin: 0.8em 0 1.4em; break-inside: avoid; page-break-inside: avoid; }
figure svg.chart { display: block; max-width: 100%; height: auto; border: 1px solid #e3e5e8; }
figcaption { color: #444; font-size: 0.92rem; margin-top: 0.3em; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; margin: 0.4em 0 0.8em; }
th, td { border-bottom: 1px solid #e3e5e8; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.exceeded td:first-child, tr.expired td:first-child { border-left: 4px solid #c62828; }
tr.warning td:first-child, tr.expiring td:first-child { border-left: 4px solid #e68a00; }
tr.at_limit td:first-child { border-left: 4px solid #7b1fa2; }
details { margin: 0.3em 0; }
summary { cursor: pointer; color: #0b57d0; }
a { color: #0b57d0; }
.note { color: #666; font-size: 0.9rem; }
@media print {
  body { background: #fff; }
  main { max-width: none; padding: 0; }
  details > summary { display: none; }
  a { color: inherit; text-decoration: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
}
";

/// Everything the page shows, ready to be written.
pub struct Parts<'a> {
    pub info: &'a PageInfo<'a>,
    pub usage: Option<(data::Usage, String)>,
    pub trends: Vec<(data::Trend, String)>,
    pub trials: Option<(data::Trials, String)>,
    /// The counts of the cards (the same list as the action tables).
    pub counts: Counts,
    pub actions: data::Actions,
    /// "What changed this week", when the `changes` report was built.
    pub changes: Option<super::changes::WeekChanges>,
    /// Files next to the page: (report, file name).
    pub links: Vec<(String, String)>,
}

/// The whole document.
pub fn render(p: &Parts<'_>) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let info = p.info;
    let as_of = info.as_of.format("%Y-%m-%d").to_string();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\">\n<head>\n\
         <meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>orgledger report as of {as_of}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>Organization report as of {as_of}</h1>\n"
    );
    let source = match (info.run_id, info.observed_at) {
        (Some(id), Some(at)) => format!("sync run {id}, observed {}", escape(at)),
        _ => "no finished sync run before that date".to_string(),
    };
    let _ = writeln!(
        out,
        "<p class=\"meta\">Data from the mirror as it stood at the end of {as_of} (UTC); {source}. \
         Generated {}.{}</p>",
        escape(info.generated_at),
        if info.redacted {
            " Personal data is replaced by pseudonyms."
        } else {
            ""
        }
    );
    cards(&mut out, p);
    contents(&mut out, p);

    if let Some((usage, chart)) = &p.usage {
        section(&mut out, "usage", "Entitlement usage");
        let note = if usage.total > usage.bars.len() {
            format!(
                " The {} most urgent of {} limits are shown; all are in {}.",
                usage.bars.len(),
                usage.total,
                link(p, "entitlements")
            )
        } else {
            String::new()
        };
        let points: Vec<Vec<String>> = usage
            .bars
            .iter()
            .map(|b| {
                vec![
                    b.row.org_name.clone(),
                    metric_label(&b.row.metric).to_string(),
                    b.row.used_human.clone(),
                    b.row.limit_human.clone(),
                    format!("{:.2} %", b.pct),
                    b.row.status.as_str().to_string(),
                ]
            })
            .collect();
        let sources: Vec<Source> = usage.bars.iter().map(|b| b.source()).collect();
        figure(
            &mut out,
            "usage",
            "entitlements.csv",
            chart,
            &format!(
                "Share of each limit used, most urgent first (exceeded, then at the limit, \
                 then warning, then the rest, by percentage). Red: exceeded (over the limit); \
                 purple: at the limit (nothing more fits); orange: warning (from the warning \
                 threshold up to the limit); green: ok. Storage in GB, compute time in hours.{note}"
            ),
            &[
                "Organization",
                "Metric",
                "Used",
                "Limit",
                "Used %",
                "Status",
            ],
            &points,
            &sources,
        );
    }

    if !p.trends.is_empty() {
        section(&mut out, "trends", "Compute time trends");
        let _ = writeln!(
            out,
            "<p class=\"note\">The white label total and the 10 users with the most compute \
             time in each window (the top 3 in colour, the others in grey). The last 30 days use the report's day rows, the last 90 days \
             its week rows (13 ISO weeks) and the last 365 days its month rows (12 calendar \
             months); the current week and month run up to {as_of}. Hours = compute seconds / 3600.</p>"
        );
        for (trend, chart) in &p.trends {
            let mut points = Vec::new();
            let mut sources = Vec::new();
            for s in trend.whitelabels.iter().take(1).chain(trend.users.iter()) {
                for ((i, v), src) in s.points.iter().zip(s.sources(trend)) {
                    points.push(vec![
                        format!("{} {}", s.entity_type, s.name),
                        trend.starts.get(*i).cloned().unwrap_or_default(),
                        human(Some(*v), "seconds"),
                    ]);
                    sources.push(src);
                }
            }
            figure(
                &mut out,
                &format!("trend-{}", trend.period),
                "compute_trends.csv",
                chart,
                &format!(
                    "Compute time, {} (from the {} rows of compute_trends).",
                    trend.window, trend.period
                ),
                &["Series", "Period start", "Compute time"],
                &points,
                &sources,
            );
        }
    }

    if let Some((trials, chart)) = &p.trials {
        section(&mut out, "trials", "Trials timeline");
        let points: Vec<Vec<String>> = trials
            .bars
            .iter()
            .map(|b| {
                let (from, to) = b.span.unwrap_or_default();
                vec![
                    data::trial_label(b),
                    b.status.clone(),
                    data::day_label(from),
                    data::day_label(to),
                ]
            })
            .collect();
        // One row per bar; the checked value is the date the bar ends on.
        let sources: Vec<Source> = trials
            .bars
            .iter()
            .map(|b| {
                data::trial_source(b).unwrap_or(Source {
                    key: Vec::new(),
                    column: "",
                    value: String::new(),
                })
            })
            .collect();
        let note = if trials.total > trials.bars.len() {
            format!(
                " The {} most pressing of {} are shown; all are in the table below.",
                trials.bars.len(),
                trials.total
            )
        } else {
            String::new()
        };
        figure(
            &mut out,
            "trials",
            "trials.csv",
            chart,
            &format!(
                "Expired trials (red) from expiry to the deletion due date, then trials \
                 expiring within the threshold (orange) from today to expiration.{note}"
            ),
            &["Trial", "Status", "From", "To"],
            &points,
            &sources,
        );
    }

    if let Some(week) = &p.changes {
        changes_section(&mut out, p, week);
    }

    section(&mut out, "actions", "Rows that need action");
    for (title, report, table) in [
        (
            "Limits at warning, at the limit or exceeded",
            "entitlements",
            &p.actions.limits,
        ),
        ("Trials expiring or expired", "trials", &p.actions.trials),
        (
            "Projects over the compute budget flag",
            "project_compute",
            &p.actions.projects,
        ),
    ] {
        if let Some(table) = table {
            action_table(&mut out, p, title, report, table);
        }
    }

    if !p.links.is_empty() {
        section(&mut out, "files", "Files");
        out.push_str("<ul>\n");
        for (report, file) in &p.links {
            let _ = writeln!(
                out,
                "<li><a href=\"{f}\">{f}</a> ({})</li>",
                escape(report),
                f = escape(file)
            );
        }
        out.push_str("<li><a href=\"manifest.json\">manifest.json</a></li>\n</ul>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The counts a person sees first; each card carries its numbers as `data-*`
/// attributes (the terminal summary prints the same [`Counts`]).
fn cards(out: &mut String, p: &Parts<'_>) {
    let c = &p.counts;
    out.push_str("<ul class=\"cards\">\n");
    if p.actions.limits.is_some() {
        card(
            out,
            "limits",
            &[
                ("value", c.limits),
                ("organizations", c.limit_orgs),
                ("exceeded", c.exceeded),
                ("at-limit", c.at_limit),
                ("warning", c.warning),
            ],
            &format!(
                "limits at warning, at the limit or over, in {} organization(s) \
                 ({} exceeded, {} at the limit, {} warning)",
                c.limit_orgs, c.exceeded, c.at_limit, c.warning
            ),
        );
    }
    if p.actions.trials.is_some() {
        card(
            out,
            "trials",
            &[
                ("value", c.trials),
                ("expired", c.trials_expired),
                ("expiring", c.trials_expiring),
            ],
            &format!(
                "trials expiring or expired ({} expired, {} expiring)",
                c.trials_expired, c.trials_expiring
            ),
        );
    }
    if p.actions.projects.is_some() {
        card(
            out,
            "projects",
            &[("value", c.projects)],
            "projects over the budget flag",
        );
    }
    out.push_str("</ul>\n");
}

/// One card: the first number large, then the text.
fn card(out: &mut String, name: &str, numbers: &[(&str, usize)], text: &str) {
    let attrs: String = numbers
        .iter()
        .map(|(k, v)| format!(" data-{k}=\"{v}\""))
        .collect();
    let first = numbers.first().map_or(0, |(_, v)| *v);
    let _ = writeln!(
        out,
        "<li data-count=\"{name}\"{attrs}><strong>{first}</strong>{}</li>",
        escape(text)
    );
}

fn contents(out: &mut String, p: &Parts<'_>) {
    out.push_str("<nav aria-label=\"Contents\"><p>");
    let mut items = Vec::new();
    if p.usage.is_some() {
        items.push(("usage", "Entitlement usage"));
    }
    if !p.trends.is_empty() {
        items.push(("trends", "Compute time trends"));
    }
    if p.trials.is_some() {
        items.push(("trials", "Trials timeline"));
    }
    items.push(("actions", "Rows that need action"));
    if !p.links.is_empty() {
        items.push(("files", "Files"));
    }
    let links: Vec<String> = items
        .iter()
        .map(|(id, t)| format!("<a href=\"#{id}\">{t}</a>"))
        .collect();
    out.push_str(&links.join(" · "));
    out.push_str("</p></nav>\n");
}

fn section(out: &mut String, id: &str, title: &str) {
    let _ = writeln!(out, "<h2 id=\"{id}\">{}</h2>", escape(title));
}

/// "What changed this week": a count per kind, then the limit changes, organizations
/// added or removed and trial events.
fn changes_section(out: &mut String, p: &Parts<'_>, week: &super::changes::WeekChanges) {
    section(out, "changes", "What changed this week");
    let _ = writeln!(
        out,
        r#"<p class="note">What the mirror saw change in the 7 days up to the as-of date; every row is in {}.</p>"#,
        link(p, crate::report::changes::REPORT)
    );
    if week.counts.is_empty() {
        out.push_str("<p>No changes.</p>\n");
        return;
    }
    out.push_str(concat!(
        r#"<table class="change-counts">"#,
        "\n",
        r#"<thead><tr><th scope="col">kind</th><th scope="col">changes</th></tr></thead>"#,
        "\n<tbody>\n"
    ));
    for (kind, n) in &week.counts {
        let _ = writeln!(
            out,
            r#"<tr data-kind="{k}"><td>{k}</td><td class="num">{n}</td></tr>"#,
            k = escape(kind)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    action_table(
        out,
        p,
        "Limits, organizations and trials",
        crate::report::changes::REPORT,
        &week.table,
    );
}

/// A link to a report's CSV next to the page (or its name when it was not written).
fn link(p: &Parts<'_>, report: &str) -> String {
    match p.links.iter().find(|(r, _)| r == report) {
        Some((_, file)) => format!("<a href=\"{f}\">{f}</a>", f = escape(file)),
        None => format!("the {} report", escape(report)),
    }
}

/// A chart with its caption and its numbers as a table. Each data row carries the
/// CSV row key and value it was drawn from (`data-*`), so tests can compare.
#[allow(clippy::too_many_arguments)]
fn figure(
    out: &mut String,
    id: &str,
    csv: &str,
    svg: &str,
    caption: &str,
    headers: &[&str],
    rows: &[Vec<String>],
    sources: &[Source],
) {
    let _ = writeln!(
        out,
        "<figure id=\"fig-{id}\" data-chart=\"{id}\" data-source=\"{}\" data-points=\"{}\">",
        escape(csv),
        sources.len()
    );
    out.push_str(svg);
    if !svg.ends_with('\n') {
        out.push('\n');
    }
    // The caption is built from escaped parts and links of this module.
    let _ = writeln!(out, "<figcaption>{caption}</figcaption>");
    let _ = writeln!(
        out,
        "<details><summary>The numbers in this chart ({} rows)</summary>\n<table class=\"chart-data\">\n<thead><tr>{}</tr></thead>\n<tbody>",
        rows.len(),
        headers
            .iter()
            .map(|h| format!("<th scope=\"col\">{}</th>", escape(h)))
            .collect::<String>()
    );
    for (row, src) in rows.iter().zip(sources) {
        let key: Vec<String> = src.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            out,
            "<tr data-key=\"{}\" data-column=\"{}\" data-value=\"{}\">",
            escape(&key.join(";")),
            escape(src.column),
            escape(&src.value)
        );
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</details>\n</figure>\n");
}

/// At most this many rows per action table on the page (the CSV has them all).
const MAX_ACTION_ROWS: usize = 200;

fn action_table(out: &mut String, p: &Parts<'_>, title: &str, report: &str, t: &ActionTable) {
    let _ = writeln!(
        out,
        "<h3>{} ({})</h3>\n<p class=\"note\">From {}.</p>",
        escape(title),
        t.rows.len(),
        link(p, report)
    );
    if t.rows.is_empty() {
        out.push_str("<p>None.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<table class=\"action\" data-report=\"{}\">\n<thead><tr>{}</tr></thead>\n<tbody>",
        escape(report),
        t.headers
            .iter()
            .map(|h| format!("<th scope=\"col\">{}</th>", escape(h)))
            .collect::<String>()
    );
    for (row, class) in t.rows.iter().zip(&t.classes).take(MAX_ACTION_ROWS) {
        let _ = write!(out, "<tr class=\"{}\">", escape(class));
        for cell in row {
            let numeric = cell
                .split(' ')
                .next()
                .is_some_and(|w| !w.is_empty() && w.replace(',', "").parse::<f64>().is_ok());
            if numeric {
                let _ = write!(out, "<td class=\"num\">{}</td>", escape(cell));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    if t.rows.len() > MAX_ACTION_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"note\">… and {} more in {}.</p>",
            t.rows.len() - MAX_ACTION_ROWS,
            link(p, report)
        );
    }
}
