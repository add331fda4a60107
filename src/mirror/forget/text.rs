//! The erasure's pass over the tables: the person's own fields emptied in every
//! version of their rows, and their addresses and names taken out of the text of
//! every other cell, each changed row's content hash made that of what it holds.

use super::Erased;
use crate::mirror::privacy;
use crate::mirror::scrub::Texts;
use crate::mirror::spec;
use crate::mirror::table::content_hash;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, Transaction};
use std::sync::Arc;

/// The SQL functions the erasure's statements use: `forget_hit(text, names_too)`,
/// `forget_scrub(text, names_too)` (see [`Texts`]; a BLOB in a text column is
/// looked through as bytes) and `forget_row_hash(values...)`, a row's content
/// hash, so a changed row's `content_hash` stays the hash of its values
/// (`orgledger check` verifies it, and the next sync compares with it).
pub(super) fn register_functions(tx: &Transaction<'_>, texts: &Arc<Texts>) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    let hits = texts.clone();
    tx.create_scalar_function("forget_hit", 2, flags, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => hits.hit(bytes, ctx.get::<bool>(1)?),
            _ => false,
        })
    })?;
    let scrubs = texts.clone();
    tx.create_scalar_function("forget_scrub", 2, flags, move |ctx| {
        let names_too = ctx.get::<bool>(1)?;
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(text) => {
                Value::Text(scrubs.scrub(&String::from_utf8_lossy(text), names_too))
            }
            ValueRef::Blob(bytes) => Value::Blob(scrubs.scrub_bytes(bytes, names_too)),
            _ => Value::Null,
        })
    })?;
    tx.create_scalar_function("forget_row_hash", -1, flags, |ctx| {
        let values = (0..ctx.len())
            .map(|i| ctx.get::<Value>(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(content_hash(&values).to_vec())
    })
}

/// `content_hash = forget_row_hash(...)` over `table`'s columns as `value` gives
/// each (its new value in the same UPDATE).
fn rehash(table: &spec::TableSpec, value: impl Fn(&str) -> String) -> String {
    let args: Vec<String> = table.all_columns().map(|c| value(c.name)).collect();
    format!("content_hash = forget_row_hash({})", args.join(", "))
}

/// Empties the person's fields in every version of their rows, as each table's
/// spec declares them.
pub(super) fn own_rows(
    tx: &Transaction<'_>,
    user_id: i64,
    erased: &mut Erased,
) -> rusqlite::Result<()> {
    for table in privacy::person_tables() {
        for person in table.personal {
            let fields: Vec<&str> = person.fields.iter().map(|f| f.column).collect();
            let mut set: Vec<String> = fields.iter().map(|f| format!("\"{f}\" = NULL")).collect();
            set.push(rehash(table, |c| match fields.contains(&c) {
                true => "NULL".to_string(),
                false => format!("\"{c}\""),
            }));
            let any: Vec<String> = fields
                .iter()
                .map(|f| format!("\"{f}\" IS NOT NULL"))
                .collect();
            for name in [table.name.to_string(), format!("{}_history", table.name)] {
                let sql = format!(
                    "UPDATE {name} SET {} WHERE \"{}\" = ?1 AND ({})",
                    set.join(", "),
                    person.id_column(),
                    any.join(" OR ")
                );
                let n = tx.execute(&sql, [user_id])? as u64;
                if n > 0 {
                    *erased.rows.entry(name).or_default() += n;
                }
            }
        }
    }
    Ok(())
}

/// Tables whose text is not looked through: the raw documents (their own pass),
/// the key, the erasures and the schema's bookkeeping.
const NOT_FREE_TEXT: &[&str] = &[
    "raw_documents",
    "privacy_key",
    "erasures",
    "schema_migrations",
];

/// The spec of a mirrored table, its history or its narrow history.
pub(super) fn spec_of(table: &str) -> Option<&'static spec::TableSpec> {
    let base = table
        .strip_suffix("_history")
        .or_else(|| table.strip_suffix("_moves"))
        .unwrap_or(table);
    spec::tables().iter().copied().find(|s| s.name == base)
}

/// One table's text columns: (column, whether names are looked for too).
/// Key columns are left (they identify rows, and are ids, days and kinds); in the
/// fields that say who someone is, only addresses are looked for, so a namesake
/// keeps their name.
fn text_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, bool)>> {
    let spec = spec_of(table);
    let keys: Vec<&str> = spec
        .map(|s| s.key.iter().map(|c| c.name).collect())
        .unwrap_or_default();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1) WHERE upper(type) = 'TEXT' AND pk = 0")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for name in names {
        let name = name?;
        if !keys.contains(&name.as_str()) {
            let names_too = !spec.is_some_and(|s| privacy::is_personal(s, &name));
            out.push((name, names_too));
        }
    }
    Ok(out)
}

/// Takes the person's addresses and names out of the text of every table.
pub(super) fn free_text(tx: &Transaction<'_>, erased: &mut Erased) -> rusqlite::Result<()> {
    let tables: Vec<String> = tx
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for table in tables
        .iter()
        .filter(|t| !NOT_FREE_TEXT.contains(&t.as_str()))
    {
        let columns = text_columns(tx, table)?;
        if columns.is_empty() {
            continue;
        }
        let new_value = |c: &str| match columns.iter().find(|(name, _)| name == c) {
            Some((_, names)) => format!(
                "CASE WHEN forget_hit(\"{c}\", {names}) THEN forget_scrub(\"{c}\", {names}) ELSE \"{c}\" END"
            ),
            None => format!("\"{c}\""),
        };
        let mut set: Vec<String> = columns
            .iter()
            .map(|(c, _)| format!("\"{c}\" = {}", new_value(c)))
            .collect();
        if let Some(spec) = spec_of(table).filter(|_| !table.ends_with("_moves")) {
            set.push(rehash(spec, new_value));
        }
        let hit: Vec<String> = columns
            .iter()
            .map(|(c, names)| format!("forget_hit(\"{c}\", {names})"))
            .collect();
        let sql = format!(
            "UPDATE \"{table}\" SET {} WHERE {}",
            set.join(", "),
            hit.join(" OR ")
        );
        let n = tx.execute(&sql, [])? as u64;
        if n > 0 {
            *erased.texts.entry(table.clone()).or_default() += n;
        }
    }
    Ok(())
}
