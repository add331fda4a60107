//! The page around the charts: one XHTML-compatible document with its own styles,
//! no scripts and no outside resources, readable at 1280×800 and in print.
//!
//! Written with maud templates, which escape every value spliced into them, so no
//! text is escaped by hand here. Each `<h2>` section is one function returning a
//! [`Section`]; the contents list at the top is made from the same list.

use super::PageInfo;
use super::data::{self, ActionTable, Source};
use super::moment::{self, cell};
use crate::calendar::Shown;
use crate::report::attention::Counts;
use crate::report::attention::{LIMIT_TABLE, PROJECT_TABLE, TRIAL_TABLE};
use crate::report::status::CLASS_COLOURS;
use crate::report::units::{human, metric_label};
use crate::report::{entitlements, project_compute, trials};
use maud::{DOCTYPE, Markup, PreEscaped, html};

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
figure.metric { display: inline-block; width: 520px; max-width: 100%; margin: 0.4em 14px 0.8em 0; vertical-align: top; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; margin: 0.4em 0 0.8em; }
th, td { border-bottom: 1px solid #e3e5e8; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
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

/// The coloured left edge of an action row, one rule per class of
/// [`CLASS_COLOURS`] (the workbook colours its cells from the same list).
fn class_rules() -> String {
    CLASS_COLOURS
        .iter()
        .map(|(class, rgb)| {
            format!("tr.{class} td:first-child {{ border-left: 4px solid #{rgb:06x}; }}\n")
        })
        .collect()
}

/// maud writes void elements the HTML way (`<meta ...>`), which an XML parser reads
/// as never closed; the page's only void elements are these two fixed ones.
const HEAD_META: &str = "<meta charset=\"utf-8\"/>\n\
    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";

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
    /// The organizations with a page of their own (`orgs/<id>.html`): (id, name).
    pub orgs: Vec<(i64, String)>,
    /// Report tables shown as they are (custom reports, and the built-in ones
    /// `super::tables::LISTED` names).
    pub tables: Vec<super::tables::Shown>,
}

/// One `<h2>` section of the page, listed in the contents at the top.
struct Section {
    id: &'static str,
    title: &'static str,
    body: Markup,
}

/// The whole document.
pub fn render(p: &Parts<'_>) -> String {
    let as_of = p.info.as_of.format("%Y-%m-%d").to_string();
    let sections: Vec<Section> = [
        usage(p),
        trends(p, &as_of),
        trials(p),
        changes(p),
        Some(actions(p)),
        report_tables(p),
        organizations(p),
        files(p),
    ]
    .into_iter()
    .flatten()
    .collect();
    let main = html! {
        h1 { "Organization report as of " (as_of) } "\n"
        (source(p.info, &as_of))
        (cards(p))
        (contents(&sections))
        @for s in &sections {
            h2 id=(s.id) { (s.title) } "\n"
            (s.body)
        }
    };
    document(&format!("orgledger report as of {as_of}"), main)
}

/// A whole document: the head every page shares, and `main`'s content.
pub(super) fn document(title: &str, main: Markup) -> String {
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" xmlns="http://www.w3.org/1999/xhtml" {
            "\n"
            head {
                "\n"
                (PreEscaped(HEAD_META))
                title { (title) } "\n"
                // The style sheet is this module's constant, with no `<` or `&` in it.
                style { (PreEscaped(STYLE)) (PreEscaped(class_rules())) } "\n"
            } "\n"
            body {
                "\n"
                main { "\n" (main) } "\n"
            } "\n"
        } "\n"
    };
    xml_chars(page.into_string())
}

/// Every organization, linked to its own page.
fn organizations(p: &Parts<'_>) -> Option<Section> {
    if p.orgs.is_empty() {
        return None;
    }
    let body = html! {
        p.note { "A page per organization: its limits and their use over the last 90 days, trials, projects, members, changes and alerts." } "\n"
        details {
            summary { (p.orgs.len()) " organizations" } "\n"
            ul.orgs {
                @for (id, name) in &p.orgs {
                    li { a href=(super::org::href(*id)) { (name) } " (" (id) ")" } "\n"
                }
            } "\n"
        } "\n"
    };
    Some(Section {
        id: "organizations",
        title: "Organizations",
        body,
    })
}

/// XML, and so XHTML, has no place for most control characters. A name from the
/// API may still carry one, and neither maud nor plotters drops them; none is
/// anything a person reads.
fn xml_chars(mut page: String) -> String {
    page.retain(|c| !c.is_control() || c == '\n' || c == '\t');
    page
}

/// Where the numbers come from and when the page was made.
pub(super) fn source(info: &PageInfo<'_>, as_of: &str) -> Markup {
    html! {
        p.meta {
            "Data from the mirror as it stood at the end of " (as_of) " (UTC); "
            @match (info.run_id, info.observed_at) {
                (Some(id), Some(at)) => { "sync run " (id) ", observed " (moment::moment(at, Shown::Minute)) }
                _ => "no finished sync run before that date",
            }
            ". Generated " (moment::moment(info.generated_at, Shown::Minute)) "."
            @if info.redacted {
                " Personal data is replaced by pseudonyms."
            }
        } "\n"
    }
}

/// The counts a person sees first: the first number large, then the text. Each
/// card carries its numbers as `data-*` attributes (the terminal summary prints
/// the same [`Counts`]).
fn cards(p: &Parts<'_>) -> Markup {
    let c = &p.counts;
    html! {
        ul.cards {
            "\n"
            @if p.actions.limits.is_some() {
                li data-count="limits" data-value=(c.limits) data-organizations=(c.limit_orgs)
                    data-exceeded=(c.exceeded) data-at-limit=(c.at_limit) data-warning=(c.warning) {
                    strong { (c.limits) }
                    "limits at warning, at the limit or over, in " (c.limit_orgs)
                    " organization(s) (" (c.exceeded) " exceeded, " (c.at_limit)
                    " at the limit, " (c.warning) " warning)"
                } "\n"
            }
            @if p.actions.trials.is_some() {
                li data-count="trials" data-value=(c.trials) data-expired=(c.trials_expired)
                    data-expiring=(c.trials_expiring) {
                    strong { (c.trials) }
                    "trials expiring or expired (" (c.trials_expired) " expired, "
                    (c.trials_expiring) " expiring)"
                } "\n"
            }
            @if p.actions.projects.is_some() {
                li data-count="projects" data-value=(c.projects) {
                    strong { (c.projects) }
                    "projects over the budget flag"
                } "\n"
            }
            @if p.actions.incomplete {
                li data-count="incomplete" data-value=(c.incomplete) {
                    strong { (c.incomplete) }
                    "rows with incomplete figures (see their " code { "missing" } " column)"
                } "\n"
            }
        } "\n"
    }
}

fn contents(sections: &[Section]) -> Markup {
    html! {
        nav aria-label="Contents" {
            p {
                @for (i, s) in sections.iter().enumerate() {
                    @if i > 0 { " · " }
                    a href={ "#" (s.id) } { (s.title) }
                }
            }
        } "\n"
    }
}

fn usage(p: &Parts<'_>) -> Option<Section> {
    let (usage, chart) = p.usage.as_ref()?;
    let caption = html! {
        "Share of each limit used, most urgent first (exceeded, then at the limit, \
         then warning, then the rest, by percentage). Red: exceeded (over the limit); \
         purple: at the limit (nothing more fits); orange: warning (from the warning \
         threshold up to the limit); green: ok. Storage in GB, compute time in hours."
        @if usage.total > usage.bars.len() {
            " The " (usage.bars.len()) " most urgent of " (usage.total)
            " limits are shown; all are in " (link(p, entitlements::NAME.as_str())) "."
        }
    };
    let rows = usage
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
    let body = figure(&Figure {
        id: "usage",
        csv: "entitlements.csv",
        svg: chart,
        caption,
        headers: &[
            "Organization",
            "Metric",
            "Used",
            "Limit",
            "Used %",
            "Status",
        ],
        rows,
        sources: usage.bars.iter().map(|b| b.source()).collect(),
    });
    Some(Section {
        id: "usage",
        title: "Entitlement usage",
        body,
    })
}

fn trends(p: &Parts<'_>, as_of: &str) -> Option<Section> {
    if p.trends.is_empty() {
        return None;
    }
    let body = html! {
        p.note {
            "The white label total and the 10 users with the most compute time in each \
             window (the top 3 in colour, the others in grey). The last 30 days use the \
             report's day rows, the last 90 days its week rows (13 ISO weeks) and the last \
             365 days its month rows (12 calendar months); the current week and month run \
             up to " (as_of) ". Hours = compute seconds / 3600."
        } "\n"
        @for (trend, chart) in &p.trends {
            (trend_figure(trend, chart))
        }
    };
    Some(Section {
        id: "trends",
        title: "Compute time trends",
        body,
    })
}

/// One window's chart: the white label total first, then the users.
fn trend_figure(trend: &data::Trend, chart: &str) -> Markup {
    let mut rows = Vec::new();
    let mut sources = Vec::new();
    for s in trend.whitelabels.iter().take(1).chain(trend.users.iter()) {
        for ((i, v), src) in s.points.iter().zip(data::trend_sources(s, trend)) {
            rows.push(vec![
                format!("{} {}", s.entity_type, s.name),
                trend.starts.get(*i).cloned().unwrap_or_default(),
                human(Some(*v), "seconds"),
            ]);
            sources.push(src);
        }
    }
    figure(&Figure {
        id: &format!("trend-{}", trend.period),
        csv: "compute_trends.csv",
        svg: chart,
        caption: html! {
            "Compute time, " (trend.window) " (from the " (trend.period)
            " rows of compute_trends)."
        },
        headers: &["Series", "Period start", "Compute time"],
        rows,
        sources,
    })
}

fn trials(p: &Parts<'_>) -> Option<Section> {
    let (trials, chart) = p.trials.as_ref()?;
    let rows = trials
        .bars
        .iter()
        .map(|b| {
            let (from, to) = b.span.unwrap_or_default();
            vec![
                data::trial_label(b, data::WHOLE),
                b.status.clone(),
                data::day_label(from),
                data::day_label(to),
            ]
        })
        .collect();
    // One row per bar; the checked value is the date the bar ends on.
    let sources = trials
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
    let caption = html! {
        "Expired trials (red) from expiry to the deletion due date, then trials \
         expiring within the threshold (orange) from today to expiration."
        @if trials.total > trials.bars.len() {
            " The " (trials.bars.len()) " most pressing of " (trials.total)
            " are shown; all are in the table below."
        }
    };
    let body = figure(&Figure {
        id: "trials",
        csv: "trials.csv",
        svg: chart,
        caption,
        headers: &["Trial", "Status", "From", "To"],
        rows,
        sources,
    });
    Some(Section {
        id: "trials",
        title: "Trials timeline",
        body,
    })
}

fn actions(p: &Parts<'_>) -> Section {
    let tables = [
        (LIMIT_TABLE.0, entitlements::NAME, &p.actions.limits),
        (TRIAL_TABLE.0, trials::NAME, &p.actions.trials),
        (PROJECT_TABLE.0, project_compute::NAME, &p.actions.projects),
    ];
    let body = html! {
        @for (title, report, table) in tables {
            @if let Some(table) = table {
                (action_table(p, title, report.as_str(), table))
            }
        }
    };
    Section {
        id: "actions",
        title: "Rows that need action",
        body,
    }
}

/// The report tables shown as they are: each one's first rows, with its count.
fn report_tables(p: &Parts<'_>) -> Option<Section> {
    if p.tables.is_empty() {
        return None;
    }
    let body = html! {
        @for t in &p.tables {
            h3 { (t.title) } "\n"
            p.note {
                (t.about) " "
                @if t.total > t.rows.len() {
                    "The first " (t.rows.len()) " of " (t.total) " rows; all are in "
                } @else {
                    (t.total) @if t.total == 1 { " row" } @else { " rows" } "; also in "
                }
                (link(p, &t.report)) "."
            } "\n"
            @if !t.rows.is_empty() {
                table.report data-report=(t.report) {
                    "\n"
                    (header_row(&t.headers.iter().map(String::as_str).collect::<Vec<_>>()))
                    tbody {
                        "\n"
                        @for row in &t.rows {
                            tr {
                                @for text in row {
                                    td class=[numeric(text).then_some("num")] { (cell(text)) }
                                }
                            } "\n"
                        }
                    } "\n"
                } "\n"
            }
        }
    };
    Some(Section {
        id: "tables",
        title: "More reports",
        body,
    })
}

fn files(p: &Parts<'_>) -> Option<Section> {
    if p.links.is_empty() {
        return None;
    }
    let body = html! {
        ul {
            "\n"
            @for (report, file) in &p.links {
                li { a href=(file) { (file) } " (" (report) ")" } "\n"
            }
            li { a href="manifest.json" { "manifest.json" } } "\n"
        } "\n"
    };
    Some(Section {
        id: "files",
        title: "Files",
        body,
    })
}

/// "What changed this week": a count per kind, then the limit changes, organizations
/// added or removed and trial events.
fn changes(p: &Parts<'_>) -> Option<Section> {
    let week = p.changes.as_ref()?;
    let body = html! {
        p.note {
            "What the mirror saw change in the 7 days up to the as-of date; every row is in "
            (link(p, crate::report::changes::NAME.as_str())) "."
        } "\n"
        @if week.counts.is_empty() {
            p { "No changes." } "\n"
        } @else {
            table.change-counts {
                "\n"
                thead { tr { th scope="col" { "kind" } th scope="col" { "changes" } } } "\n"
                tbody {
                    "\n"
                    @for (kind, n) in &week.counts {
                        tr data-kind=(kind) { td { (kind) } td.num { (n) } } "\n"
                    }
                } "\n"
            } "\n"
            (action_table(
                p,
                "Limits, organizations and trials",
                crate::report::changes::NAME.as_str(),
                &week.table,
            ))
        }
    };
    Some(Section {
        id: "changes",
        title: "What changed this week",
        body,
    })
}

/// A link to a report's CSV next to the page (or its name when it was not written).
fn link(p: &Parts<'_>, report: &str) -> Markup {
    html! {
        @match p.links.iter().find(|(r, _)| r == report) {
            Some((_, file)) => a href=(file) { (file) },
            None => { "the " (report) " report" },
        }
    }
}

/// A chart with its caption and its numbers as a table.
struct Figure<'a> {
    id: &'a str,
    /// The CSV file the numbers come from.
    csv: &'a str,
    /// The chart from `charts.rs`.
    svg: &'a str,
    caption: Markup,
    headers: &'a [&'a str],
    rows: Vec<Vec<String>>,
    /// Per row, the CSV row key and value it was drawn from.
    sources: Vec<Source>,
}

/// Each data row carries the CSV row key and value it was drawn from (`data-*`),
/// so tests can compare.
fn figure(f: &Figure<'_>) -> Markup {
    html! {
        figure id={ "fig-" (f.id) } data-chart=(f.id) data-source=(f.csv)
            data-points=(f.sources.len()) {
            "\n"
            // Safe unescaped: plotters escapes the text it draws, and the title and
            // description `charts.rs` adds are escaped by maud there.
            (PreEscaped(f.svg))
            @if !f.svg.ends_with('\n') { "\n" }
            figcaption { (f.caption) } "\n"
            details {
                summary { "The numbers in this chart (" (f.rows.len()) " rows)" } "\n"
                table class="chart-data" {
                    "\n"
                    (header_row(f.headers))
                    tbody {
                        "\n"
                        @for (row, src) in f.rows.iter().zip(&f.sources) {
                            tr data-key=(row_key(src)) data-column=(src.column)
                                data-value=(src.value) {
                                @for text in row { td { (cell(text)) } }
                            } "\n"
                        }
                    } "\n"
                } "\n"
            } "\n"
        } "\n"
    }
}

/// A CSV row's key as `column=value` pairs joined by `;`.
fn row_key(src: &Source) -> String {
    let pairs: Vec<String> = src.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(";")
}

fn header_row(headers: &[&str]) -> Markup {
    html! {
        thead {
            tr {
                @for h in headers { th scope="col" { (h) } }
            }
        } "\n"
    }
}

/// At most this many rows per action table on the page (the CSV has them all).
const MAX_ACTION_ROWS: usize = 200;

fn action_table(p: &Parts<'_>, title: &str, report: &str, t: &ActionTable) -> Markup {
    html! {
        h3 { (title) " (" (t.rows.len()) ")" } "\n"
        p.note { "From " (link(p, report)) "." } "\n"
        @if t.rows.is_empty() {
            p { "None." } "\n"
        } @else {
            table.action data-report=(report) {
                "\n"
                (header_row(&t.headers))
                tbody {
                    "\n"
                    @for (row, class) in t.rows.iter().zip(&t.classes).take(MAX_ACTION_ROWS) {
                        tr class=(class) {
                            @for text in row {
                                td class=[numeric(text).then_some("num")] { (cell(text)) }
                            }
                        } "\n"
                    }
                } "\n"
            } "\n"
            @if t.rows.len() > MAX_ACTION_ROWS {
                p.note {
                    "… and " (t.rows.len() - MAX_ACTION_ROWS) " more in " (link(p, report)) "."
                } "\n"
            }
        }
    }
}

/// A cell that starts with a number (such as "12.5 GB") is aligned right.
fn numeric(cell: &str) -> bool {
    cell.split(' ')
        .next()
        .is_some_and(|w| !w.is_empty() && w.replace(',', "").parse::<f64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Thresholds;
    use chrono::NaiveDate;

    /// Markup, quotes and a control character, as a name from the API may carry.
    const HOSTILE: &str = "<b>Tom & \"Jerry's\"</b>\u{7}";

    fn parse(page: &str) -> roxmltree::Document<'_> {
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        roxmltree::Document::parse_with_options(page, options).expect("well-formed")
    }

    /// A page without charts, with these action tables and one linked file.
    fn parts<'a>(
        info: &'a PageInfo<'a>,
        actions: data::Actions,
        (report, file): (&str, &str),
    ) -> Parts<'a> {
        Parts {
            info,
            usage: None,
            trends: Vec::new(),
            trials: None,
            counts: Counts::default(),
            actions,
            changes: None,
            links: vec![(report.to_string(), file.to_string())],
            orgs: vec![(7, HOSTILE.to_string())],
            tables: vec![super::super::tables::Shown {
                report: report.to_string(),
                title: HOSTILE.to_string(),
                about: HOSTILE.to_string(),
                headers: vec![HOSTILE.to_string()],
                rows: vec![vec![HOSTILE.to_string()]],
                total: 3,
            }],
        }
    }

    #[test]
    fn text_from_the_data_is_escaped_and_the_page_stays_well_formed() {
        let thresholds = Thresholds::default();
        let info = PageInfo {
            as_of: NaiveDate::from_ymd_opt(2026, 1, 5).expect("date"),
            run_id: Some(3),
            observed_at: Some(HOSTILE),
            generated_at: "2026-01-05T10:00:00Z",
            redacted: false,
            thresholds: &thresholds,
        };
        let table = ActionTable {
            headers: vec!["Trial", "Days"],
            rows: vec![vec![HOSTILE.to_string(), "12.5 days".to_string()]],
            classes: vec!["expired\" onclick=\"x".to_string()],
        };
        let actions = data::Actions {
            limits: None,
            trials: Some(table),
            projects: None,
            incomplete: false,
        };
        let page = render(&parts(&info, actions, ("trials", "trials <&>.csv")));
        let doc = parse(&page);

        assert!(doc.descendants().all(|n| !n.has_tag_name("b")));
        let cells: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("td")).collect();
        assert_eq!(cells[0].text(), Some("<b>Tom & \"Jerry's\"</b>"));
        assert_eq!(cells[1].attribute("class"), Some("num"));
        let row = cells[0].parent().expect("row");
        assert_eq!(row.attribute("class"), Some("expired\" onclick=\"x"));
        assert_eq!(row.attribute("onclick"), None);
        let hrefs: Vec<_> = doc
            .descendants()
            .filter_map(|n| n.attribute("href"))
            .collect();
        assert!(hrefs.contains(&"trials <&>.csv"), "{hrefs:?}");
        assert!(hrefs.contains(&"#actions"), "{hrefs:?}");
        assert!(!page.contains('\u{7}'));
    }

    #[test]
    fn each_section_is_in_the_contents_and_links_to_its_heading() {
        let thresholds = Thresholds::default();
        let info = PageInfo {
            as_of: NaiveDate::from_ymd_opt(2026, 1, 5).expect("date"),
            run_id: None,
            observed_at: None,
            generated_at: "2026-01-05T10:00:00Z",
            redacted: true,
            thresholds: &thresholds,
        };
        let actions = data::Actions {
            limits: Some(ActionTable::default()),
            trials: None,
            projects: None,
            incomplete: false,
        };
        let page = render(&parts(&info, actions, ("entitlements", "entitlements.csv")));
        let doc = parse(&page);
        let headings: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("h2"))
            .filter_map(|n| n.attribute("id"))
            .collect();
        assert_eq!(headings, ["actions", "tables", "organizations", "files"]);
        let nav = doc
            .descendants()
            .find(|n| n.has_tag_name("nav"))
            .expect("contents");
        let targets: Vec<_> = nav
            .descendants()
            .filter_map(|n| n.attribute("href"))
            .collect();
        assert_eq!(targets, ["#actions", "#tables", "#organizations", "#files"]);
        assert!(page.contains("no finished sync run before that date"));
        assert!(page.contains("Personal data is replaced by pseudonyms."));
        assert!(page.contains("<p>None.</p>"));
    }
}
