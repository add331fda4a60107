//! The numbers of the page's "What changed this week" section, from the `changes`
//! report's frame: a count per kind, and the limit changes, organizations added or
//! removed and trial events as a table.

use super::data::ActionTable;
use crate::report::changes::KINDS;
use polars::prelude::DataFrame;

/// The section's content.
#[derive(Debug, Clone, Default)]
pub struct WeekChanges {
    /// (kind, rows) for every kind with at least one row, in [`KINDS`] order.
    pub counts: Vec<(&'static str, usize)>,
    /// The rows of the table.
    pub table: ActionTable,
}

/// Whether a kind's rows are listed one by one (the others are only counted).
fn listed(kind: &str) -> bool {
    kind == "limit.changed"
        || kind == "organization.added"
        || kind == "organization.removed"
        || kind.starts_with("trial.")
}

/// Reads the frame; text columns only, so a missing or odd column yields empty cells.
pub fn week(df: &DataFrame) -> WeekChanges {
    let col = |name: &str| -> Vec<String> {
        df.column(name)
            .ok()
            .and_then(|c| {
                c.str()
                    .ok()
                    .map(|ca| ca.iter().map(|v| v.unwrap_or("").to_string()).collect())
            })
            .unwrap_or_else(|| vec![String::new(); df.height()])
    };
    let (at, kind, name, id, field, before, after) = (
        col("observed_at"),
        col("kind"),
        col("entity_name"),
        col("entity_id"),
        col("field"),
        col("before"),
        col("after"),
    );
    let counts = KINDS
        .iter()
        .map(|k| (*k, kind.iter().filter(|x| x == k).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    let mut table = ActionTable {
        headers: vec![
            "observed", "kind", "entity", "id", "field", "before", "after",
        ],
        ..ActionTable::default()
    };
    for i in (0..kind.len()).filter(|&i| listed(&kind[i])) {
        table.rows.push(vec![
            at[i].get(..10).unwrap_or(&at[i]).to_string(),
            kind[i].clone(),
            name[i].clone(),
            id[i].clone(),
            field[i]
                .strip_prefix("limit_")
                .unwrap_or(&field[i])
                .to_string(),
            before[i].clone(),
            after[i].clone(),
        ]);
        table.classes.push(kind[i].replace('.', "-"));
    }
    WeekChanges { counts, table }
}
