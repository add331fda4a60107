//! The HTML part's frame, shared by the digests and the report messages: one
//! document with inline styles (mail clients drop style sheets and never load
//! anything from elsewhere), a table for rows, the status colours of the page and
//! the workbook. maud escapes every value spliced in.

use crate::render::html::data::ActionTable;
use crate::report::status::CLASS_COLOURS;
use maud::{DOCTYPE, Markup, html};

const BODY: &str = "margin:0;padding:16px;background:#f5f6f8;color:#1d1d1f;\
    font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;line-height:1.45";
const MAIN: &str = "max-width:860px;margin:0 auto;padding:16px 20px;background:#fff";
const TABLE: &str = "border-collapse:collapse;width:100%;font-size:14px;margin:6px 0 14px";
const TH: &str =
    "background:#f0f2f4;border-bottom:1px solid #e3e5e8;padding:4px 8px;text-align:left";
const TD: &str =
    "border-bottom:1px solid #e3e5e8;padding:4px 8px;text-align:left;vertical-align:top";
/// The style of the small print under a message.
pub const NOTE: &str = "color:#666;font-size:13px";

/// A whole HTML document: `title` in the head and as the heading, then `body`.
pub fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
            }
            body style=(BODY) {
                div style=(MAIN) {
                    h1 style="font-size:22px;margin:4px 0 8px" { (title) }
                    (body)
                }
            }
        }
    }
    .into_string()
}

/// The colour of a status class (`exceeded`, `expiring`…), as the page shows it.
pub fn colour(class: &str) -> Option<String> {
    CLASS_COLOURS
        .iter()
        .find(|(c, _)| *c == class)
        .map(|(_, rgb)| format!("#{rgb:06x}"))
}

/// A heading over a table or a list.
pub fn heading(text: &str) -> Markup {
    html! { h2 style="font-size:17px;margin:18px 0 4px;border-bottom:2px solid #e3e5e8" { (text) } }
}

/// Label and value pairs as a two-column table.
pub fn figures(rows: &[(String, String)]) -> Markup {
    html! {
        table style=(format!("{TABLE};width:auto")) {
            tbody {
                @for (label, value) in rows {
                    tr { th scope="row" style=(TH) { (label) } td style=(TD) { (value) } }
                }
            }
        }
    }
}

/// An action table of the page: its headers and cells, each row's first cell
/// edged in its status colour.
pub fn action_table(table: &ActionTable) -> Markup {
    html! {
        table style=(TABLE) {
            thead { tr { @for h in &table.headers { th scope="col" style=(TH) { (h) } } } }
            tbody {
                @for (i, row) in table.rows.iter().enumerate() {
                    @let edge = table.classes.get(i).and_then(|c| colour(c))
                        .map(|c| format!("{TD};border-left:4px solid {c}"))
                        .unwrap_or_else(|| TD.to_string());
                    tr {
                        @for (j, cell) in row.iter().enumerate() {
                            td style=(if j == 0 { edge.as_str() } else { TD }) { (cell) }
                        }
                    }
                }
            }
        }
    }
}

/// An action table as plain text: one line per row, `header: cell` pairs.
pub fn action_lines(table: &ActionTable) -> String {
    table
        .rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = table
                .headers
                .iter()
                .zip(row)
                .filter(|(_, cell)| !cell.is_empty())
                .map(|(h, cell)| format!("{h}: {cell}"))
                .collect();
            format!("- {}\n", cells.join(", "))
        })
        .collect()
}
