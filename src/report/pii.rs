//! Pseudonymization of personal data (`--redact-pii`).
//!
//! Columns that hold a person's name or an e-mail address are replaced by stable
//! pseudonyms: `user-` and the first 16 hex digits (64 bits) of
//! HMAC-SHA256(the mirror's key, the trimmed lower-case value). The same person gets
//! the same pseudonym in every file and every run over the same mirror, so rows can
//! still be joined and counted; without the key (`crate::mirror::privacy`, never in
//! a report) nobody can compute the pseudonym of a name or address they guess, and
//! 64 bits make two people sharing one unlikely (about 1 in 10^10 among 50,000).
//! Every other text cell is scanned for embedded e-mail addresses (free-text notes,
//! custom queries), which are replaced the same way.

use crate::report::error::{ReportError, SqlSite, pl};
use hmac::{Hmac, KeyInit, Mac};
use polars::prelude::{DataFrame, DataType, IntoColumn, StringChunked};
use regex::Regex;
use sha2::Sha256;
use std::path::Path;
use std::sync::LazyLock;

/// Column names (exact, lower case) that hold a person's name.
const PERSON_COLUMNS: &[&str] = &[
    "user_name",
    "username",
    "owner",
    "owner_name",
    "person_name",
    "full_name",
    "member_name",
    "collaborator_name",
];

/// The pseudonyms of one mirror: its key.
#[derive(Debug, Clone)]
pub struct Pseudonyms {
    key: crate::mirror::privacy::PseudonymKey,
}

impl Pseudonyms {
    /// The pseudonyms of the mirror open on `conn`.
    pub fn read(conn: &rusqlite::Connection) -> Result<Self, ReportError> {
        let key =
            crate::mirror::privacy::pseudonym_key(conn).map_err(|cause| ReportError::Query {
                site: SqlSite::boxed("pseudonyms", "the mirror", "its pseudonym key"),
                cause,
            })?;
        Ok(Pseudonyms { key })
    }

    /// The pseudonyms of the mirror at `db`.
    pub fn of_mirror(db: &Path) -> Result<Self, ReportError> {
        Ok(Pseudonyms {
            key: crate::mirror::privacy::read_pseudonym_key(db)?,
        })
    }

    /// The pseudonym of a value.
    pub fn pseudonym(&self, value: &str) -> String {
        // HMAC takes a key of any length: 32 bytes cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.key.bytes())
            .expect("HMAC accepts any key length");
        mac.update(value.trim().to_lowercase().as_bytes());
        let digest = mac.finalize().into_bytes();
        format!("user-{}", hex::encode(&digest[..8]))
    }
}

/// How one text column is treated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every value is personal: replace it whole.
    Whole,
    /// Personal only on rows whose `entity_type` is `user`.
    UserRows,
    /// Not personal as a whole: replace e-mail addresses inside it.
    Scan,
}

fn mode(column: &str, custom: bool) -> Mode {
    let lower = column.to_ascii_lowercase();
    // A custom query's `name` may be anyone's: treat it as a person's.
    let custom_name = custom && lower == "name";
    if lower.contains("email")
        || PERSON_COLUMNS.contains(&lower.as_str())
        || lower.ends_with("_user_name")
        || custom_name
    {
        Mode::Whole
    } else if lower == "entity_name" {
        Mode::UserRows
    } else {
        Mode::Scan
    }
}

/// Returns the frame with personal data pseudonymized. In a custom report (whose
/// columns the report layer cannot know) a column named `name` counts as a person's.
pub fn redact(
    names: &Pseudonyms,
    report: &str,
    df: DataFrame,
    custom: bool,
) -> Result<DataFrame, ReportError> {
    let user_rows: Option<Vec<bool>> = match df.column("entity_type") {
        Ok(c) if c.dtype() == &DataType::String => {
            let ca = c.str().map_err(pl(report, "redacting"))?;
            // A member row's name is its user's too.
            Some(
                ca.iter()
                    .map(|v| matches!(v, Some("user" | "member")))
                    .collect(),
            )
        }
        _ => None,
    };
    let mut columns = Vec::with_capacity(df.width());
    for col in df.columns() {
        if col.dtype() != &DataType::String {
            columns.push(col.clone());
            continue;
        }
        let ca = col.str().map_err(pl(report, "redacting"))?;
        let m = mode(col.name(), custom);
        let out: StringChunked = ca
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.map(|s| match m {
                    Mode::Whole => names.pseudonym(s),
                    Mode::UserRows if user_rows.as_ref().is_some_and(|u| u[i]) => {
                        names.pseudonym(s)
                    }
                    _ => names.scrub_emails(s),
                })
            })
            .collect();
        columns.push(out.with_name(col.name().clone()).into_column());
    }
    DataFrame::new(df.height(), columns).map_err(pl(report, "redacting"))
}

/// An e-mail address inside free text: a local part, `@`, and a domain of at least
/// two dot-separated labels. `\w` is Unicode-aware, so internationalized addresses
/// match too; a sentence's final dot is not part of the domain.
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[\w.%+'-]+@[\w-]+(?:\.[\w-]+)+").expect("the e-mail pattern is valid")
});

impl Pseudonyms {
    /// Replaces every e-mail address inside a text with its pseudonym.
    pub fn scrub_emails(&self, text: &str) -> String {
        if !text.contains('@') {
            return text.to_string();
        }
        EMAIL
            .replace_all(text, |m: &regex::Captures<'_>| self.pseudonym(&m[0]))
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(seed: u8) -> Pseudonyms {
        let conn = rusqlite::Connection::open_in_memory().expect("db");
        conn.execute_batch(&format!(
            "CREATE TABLE privacy_key (id INTEGER PRIMARY KEY, key BLOB NOT NULL); \
             INSERT INTO privacy_key VALUES (1, x'{}{seed:02x}')",
            "00".repeat(31)
        ))
        .expect("a key");
        Pseudonyms::read(&conn).expect("key")
    }

    #[test]
    fn emails_inside_text_are_replaced_stably() {
        let names = names(1);
        let a = names.scrub_emails("ask Jöns.Ö@example.com or bob+x@mail.example.org.");
        assert!(!a.contains('@'), "{a}");
        assert!(a.ends_with('.'), "{a}");
        assert_eq!(names.scrub_emails("no mail here"), "no mail here");
        assert_eq!(names.scrub_emails("@handle and a@b"), "@handle and a@b");
        assert_eq!(
            names.pseudonym("Bob@Example.com"),
            names.pseudonym(" bob@example.com")
        );
        assert_eq!(names.pseudonym("x").len(), "user-".len() + 16);
    }

    #[test]
    fn the_pseudonym_depends_on_the_key() {
        let (one, two) = (names(1), names(2));
        assert_ne!(
            one.pseudonym("ada@example.com"),
            two.pseudonym("ada@example.com")
        );
        // RFC 4231-style check that this is HMAC-SHA256 and not a plain digest.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(one.key.bytes()).expect("key");
        mac.update(b"ada@example.com");
        let expected = hex::encode(&mac.finalize().into_bytes()[..8]);
        assert_eq!(
            one.pseudonym("Ada@Example.com "),
            format!("user-{expected}")
        );
    }
}
