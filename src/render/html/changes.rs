//! The numbers of the page's "What changed this week" section, from the `changes`
//! report's frame: a count per kind, and the limit changes, organizations added or
//! removed and trial events as a table; and what a change did in words
//! ([`detail`]), for this table and the organization pages' changes.

use super::data::ActionTable;
use crate::calendar::{Shown, for_a_person};
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
        headers: vec!["observed", "kind", "entity", "id", "change"],
        ..ActionTable::default()
    };
    for i in (0..kind.len()).filter(|&i| listed(&kind[i])) {
        let field = field[i].strip_prefix("limit_").unwrap_or(&field[i]);
        table.rows.push(vec![
            at[i].clone(),
            kind[i].clone(),
            name[i].clone(),
            id[i].clone(),
            detail(&kind[i], field, &before[i], &after[i]),
        ]);
        table.classes.push(kind[i].replace('.', "-"));
    }
    Ok(WeekChanges { counts, table })
}

/// What a change did, as a person reads it beside its kind: a date or time set
/// where there was none is the kind's event and its day ("upgraded on
/// 2026-11-01T12:00:00.000Z", which the page shows by its day with the exact time
/// on hover); another change of a field is `field: before → after` ("none" for an
/// empty side); a change without a field says no more than its kind.
pub fn detail(kind: &str, field: &str, before: &str, after: &str) -> String {
    if field.is_empty() {
        return String::new();
    }
    let is_moment = |v: &str| for_a_person(v, Shown::Day).is_some();
    let event = kind.split_once('.').map_or(kind, |(_, event)| event);
    match (before, after) {
        ("", after) if is_moment(after) => format!("{} on {after}", event.replace('_', " ")),
        ("", after) => format!("{field}: {after}"),
        (before, "") => format!("{field}: {before} → none"),
        (before, after) => format!("{field}: {before} → {after}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_set_where_there_was_none_reads_as_the_event_and_its_day() {
        assert_eq!(
            detail(
                "trial.upgraded",
                "upgraded_date",
                "",
                "2026-11-01T12:00:00.000Z"
            ),
            "upgraded on 2026-11-01T12:00:00.000Z"
        );
        assert_eq!(
            detail("project.deleted", "deleted_date", "", "2026-11-24"),
            "deleted on 2026-11-24"
        );
        assert_eq!(detail("member.added", "role", "", "member"), "role: member");
        assert_eq!(
            detail("limit.changed", "total_storage", "100", "200"),
            "total_storage: 100 → 200"
        );
        assert_eq!(
            detail("trial.upgraded", "upgraded_date", "2026-11-01", ""),
            "upgraded_date: 2026-11-01 → none"
        );
        assert_eq!(detail("user.added", "", "", ""), "");
    }
}
