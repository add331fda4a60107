//! The numbers of the page's "What changed this week" section, from the `changes`
//! report's frame: a count per kind, and the limit changes, organizations added or
//! removed and trial events as a table.

use super::data::ActionTable;
use crate::report::ReportError;
use crate::report::changes::Changes;
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

/// Reads the `changes` table.
pub fn week(df: &DataFrame) -> Result<WeekChanges, ReportError> {
    let t = Changes::read(df)?;
    let col = |values: &[Option<&str>]| -> Vec<String> {
        values.iter().map(|v| v.unwrap_or("").to_string()).collect()
    };
    let (at, kind, name, id, field, before, after) = (
        col(&t.observed_at),
        col(&t.kind),
        col(&t.entity_name),
        col(&t.entity_id),
        col(&t.field),
        col(&t.before),
        col(&t.after),
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
    Ok(WeekChanges { counts, table })
}
