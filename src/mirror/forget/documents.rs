//! The erasure's pass over the raw documents: each one that may hold the person
//! is decoded, cleaned (`crate::mirror::scrub::document`) and stored again; one
//! that cannot be decoded or read is named as unchecked.

use super::{Erased, ForgetError, Unchecked};
use crate::mirror::raw;
use crate::mirror::scrub::{self, Texts};
use regex::bytes::Regex;
use rusqlite::types::ValueRef;
use rusqlite::{Transaction, params};
use std::collections::HashSet;

/// Takes the person out of every raw document that holds them; counts them in
/// `erased`, and names the documents that cannot be looked through.
pub(super) fn documents(
    tx: &Transaction<'_>,
    user_id: i64,
    texts: &Texts,
    erased: &mut Erased,
) -> Result<(), ForgetError> {
    let people = HashSet::from([user_id]);
    let id_field = scrub::id_pattern(user_id);
    let mut cleaned: Vec<(i64, Vec<u8>)> = Vec::new();
    {
        let mut stmt =
            tx.prepare("SELECT rowid, operation, entity, encoding, body FROM raw_documents")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let what = || {
                let (operation, entity) = (row.get::<_, String>(1), row.get::<_, String>(2));
                format!(
                    "raw_documents ({}, {})",
                    operation.unwrap_or_default(),
                    entity.unwrap_or_default()
                )
            };
            let body = match row.get_ref(4)? {
                ValueRef::Blob(bytes) | ValueRef::Text(bytes) => bytes,
                other => {
                    erased.unchecked.push(Unchecked {
                        what: what(),
                        why: format!("its body is {:?}, not bytes", other.data_type()),
                    });
                    continue;
                }
            };
            let json = match raw::decode(&row.get::<_, String>(3)?, body) {
                Ok(json) => json,
                Err(e) => {
                    erased.unchecked.push(Unchecked {
                        what: what(),
                        why: e.to_string(),
                    });
                    continue;
                }
            };
            if !may_hold(&json, texts, &id_field) {
                continue;
            }
            match scrub::document(&json, &people, texts) {
                Ok(Some(clean)) => cleaned.push((row.get(0)?, clean)),
                Ok(None) => {}
                Err(e) => erased.unchecked.push(Unchecked {
                    what: what(),
                    why: e.to_string(),
                }),
            }
        }
    }
    let mut update =
        tx.prepare("UPDATE raw_documents SET encoding = ?1, body = ?2 WHERE rowid = ?3")?;
    for (rowid, clean) in &cleaned {
        let encoded = raw::encode(clean);
        update.execute(params![encoded.encoding, encoded.body.bytes()?, rowid])?;
    }
    erased.documents = cleaned.len() as u64;
    Ok(())
}

/// The cheap test, before a document is parsed: whether its bytes name the
/// person's id or hold one of their texts. JSON may spell a character as an
/// escape (`\u00e9`, `\u0040`) that the matchers would not see, so a document
/// with escapes is parsed whatever.
fn may_hold(json: &[u8], texts: &Texts, id_field: &Regex) -> bool {
    texts.hit(json, true) || id_field.is_match(json) || memchr::memmem::find(json, b"\\u").is_some()
}
