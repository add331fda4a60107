//! The writer's part for people erased while still on the service
//! (`orgledger forget --keep-redacted`): their rows' personal fields and their
//! raw documents, redacted before they are stored.

use crate::mirror::scrub::{self, Texts};
use crate::mirror::spec::{Identifies, TableSpec};
use crate::mirror::table::{Row, content_hash};
use crate::mirror::{MirrorError, privacy, raw};
use rusqlite::Connection;
use rusqlite::types::Value;
use std::collections::HashSet;

/// What the writer stores of a body received while someone is kept redacted.
#[derive(Debug)]
pub(crate) enum Body {
    /// The body as received: it holds nothing of theirs.
    AsReceived,
    /// This body instead, without them.
    Redacted(raw::Encoded),
    /// No body: it cannot be looked through, so it may hold them unredacted
    /// (why, in words). The document's previous body stays.
    Withheld(String),
}

/// The people erased while still on the service.
#[derive(Debug, Default)]
pub(crate) struct KeptRedacted {
    pub(super) people: HashSet<i64>,
}

impl KeptRedacted {
    /// The people of the mirror's erasures with `keep_redacted`.
    pub fn read(conn: &Connection) -> rusqlite::Result<Self> {
        Ok(KeptRedacted {
            people: privacy::kept_redacted(conn)?,
        })
    }

    /// Whether there is no one to redact.
    pub fn is_empty(&self) -> bool {
        self.people.is_empty()
    }

    /// The rows of one document without them: their personal fields emptied, and
    /// their addresses and names (read from their own rows of the document) taken
    /// out of every other text, as `forget` leaves the mirror. A changed row's hash
    /// becomes the one of what is stored, so an unchanged answer writes nothing.
    pub fn rows(&self, rows: &mut [(&TableSpec, &mut Row)]) {
        if self.people.is_empty() {
            return;
        }
        let (mut emails, mut names) = (Vec::new(), Vec::new());
        for (table, row) in rows.iter() {
            for (identifies, text) in privacy::texts_of_row(table, &row.values, &self.people) {
                match identifies {
                    Identifies::Address => emails.push(text),
                    _ => names.push(text),
                }
            }
        }
        let texts = Texts::new(
            emails.iter().map(String::as_str),
            names.iter().map(String::as_str),
        );
        for (table, row) in rows.iter_mut() {
            let mut changed = privacy::redact_row(table, &mut row.values, &self.people);
            if !texts.is_empty() {
                changed |= scrub_row(table, &mut row.values, &texts);
            }
            if changed {
                row.hash = content_hash(&row.values);
            }
        }
    }

    /// What to store of a body as received: a redacted body keeps the digest of
    /// the body as received (so an unchanged answer is not written again). A body
    /// that cannot be decoded or read is withheld rather than stored unredacted.
    pub fn body(&self, received: &raw::Encoded) -> Result<Body, MirrorError> {
        if self.people.is_empty() {
            return Ok(Body::AsReceived);
        }
        let stored = received.body.bytes()?;
        let json = match raw::decode(received.encoding, &stored) {
            Ok(json) => json,
            Err(e) => return Ok(Body::Withheld(e.to_string())),
        };
        Ok(
            match scrub::document(&json, &self.people, &Texts::default()) {
                Ok(None) => Body::AsReceived,
                Ok(Some(clean)) => Body::Redacted(raw::Encoded {
                    hash: received.hash.clone(),
                    ..raw::encode(&clean)
                }),
                Err(e) => Body::Withheld(e.to_string()),
            },
        )
    }
}

/// Takes `texts` out of the text values of a row (not its key; in the fields that
/// say who someone is, addresses only, as `forget` does); whether any was.
fn scrub_row(table: &TableSpec, values: &mut [Value], texts: &Texts) -> bool {
    let mut changed = false;
    for (i, column) in table.all_columns().enumerate().skip(table.key.len()) {
        let names_too = !privacy::is_personal(table, column.name);
        if let Some(Value::Text(text)) = values.get_mut(i)
            && texts.hit(text.as_bytes(), names_too)
        {
            *text = texts.scrub(text, names_too);
            changed = true;
        }
    }
    changed
}
