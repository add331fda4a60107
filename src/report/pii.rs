//! Pseudonymization of personal data (`--redact-pii`).
//!
//! Columns that hold a person's name or an e-mail address are replaced by stable
//! pseudonyms (`user-<first 8 hex of sha256(value)>`): the same person gets the same
//! pseudonym in every file and every run, so rows can still be joined and counted.
//! Every other text cell is scanned for embedded e-mail addresses (free-text notes,
//! custom queries), which are replaced the same way.

use crate::report::error::{ReportError, pl};
use polars::prelude::{DataFrame, DataType, IntoColumn, StringChunked};
use regex::Regex;
use sha2::{Digest, Sha256};
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

/// The pseudonym of a value.
pub fn pseudonym(value: &str) -> String {
    let digest = Sha256::digest(value.trim().to_lowercase().as_bytes());
    format!("user-{}", hex::encode(&digest[..4]))
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
pub fn redact(report: &str, df: DataFrame, custom: bool) -> Result<DataFrame, ReportError> {
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
                    Mode::Whole => pseudonym(s),
                    Mode::UserRows if user_rows.as_ref().is_some_and(|u| u[i]) => pseudonym(s),
                    _ => scrub_emails(s),
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

/// Replaces every e-mail address inside a text with its pseudonym.
pub fn scrub_emails(text: &str) -> String {
    if !text.contains('@') {
        return text.to_string();
    }
    EMAIL
        .replace_all(text, |m: &regex::Captures<'_>| pseudonym(&m[0]))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_inside_text_are_replaced_stably() {
        let a = scrub_emails("ask Jöns.Ö@example.com or bob+x@mail.example.org.");
        assert!(!a.contains('@'), "{a}");
        assert!(a.ends_with('.'), "{a}");
        assert_eq!(scrub_emails("no mail here"), "no mail here");
        assert_eq!(scrub_emails("@handle and a@b"), "@handle and a@b");
        assert_eq!(pseudonym("Bob@Example.com"), pseudonym("bob@example.com"));
        assert_eq!(pseudonym("x").len(), "user-".len() + 8);
    }
}
