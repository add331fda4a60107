//! A digest of the mirror's current state: every live row of every mirrored table,
//! data columns only (no bookkeeping), in key order. Two mirrors with the same
//! digest hold the same facts; the fault and crash tests compare a mirror built
//! under faults or kills with one built cleanly.

use orgledger::mirror::spec::TABLES;
use orgledger::mirror::table::content_hash;
use rusqlite::Connection;
use rusqlite::types::Value;
use sha2::{Digest, Sha256};

/// Hex SHA-256 over the current state of every mirrored table.
pub fn current_state(conn: &Connection) -> rusqlite::Result<String> {
    let mut hasher = Sha256::new();
    for spec in TABLES {
        let cols: Vec<String> = spec
            .all_columns()
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let key: Vec<String> = spec.key.iter().map(|c| format!("\"{}\"", c.name)).collect();
        let sql = format!(
            "SELECT {} FROM main.{} WHERE removed_at IS NULL ORDER BY {}",
            cols.join(", "),
            spec.name,
            key.join(", ")
        );
        let mut stmt = conn.prepare(&sql)?;
        let width = spec.width();
        let mut rows = stmt.query([])?;
        hasher.update(spec.name.as_bytes());
        while let Some(row) = rows.next()? {
            let values: Vec<Value> = (0..width).map(|i| row.get(i)).collect::<Result<_, _>>()?;
            hasher.update(content_hash(&values));
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
