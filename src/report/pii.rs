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
//!
//! Which columns are a person's comes from the mirror's one declaration of
//! personal fields (`crate::mirror::spec::Person`, read through
//! `crate::mirror::privacy::personal_names`), by name: a column named after a
//! personal field (`email`, `username`, `job_title`), or after a field prefixed
//! with what the reports call the person (`user_name`, `owner_email`, `member_name`;
//! a field name that is also a column no one owns, `name`, counts only so), and
//! any column whose name holds an address field's (`user_email`, `emails`). A
//! `changes` row's `before` and `after` are a person's when its entity type and
//! field name such a column (`user` and `name`: `user_name`).

use crate::mirror::privacy::{self, PersonalNames};
use crate::mirror::spec::Identifies;
use crate::report::error::{ReportError, SqlSite, pl};
use hmac::{Hmac, KeyInit, Mac};
use polars::prelude::{DataFrame, DataType, IntoColumn, StringChunked};
use regex::Regex;
use sha2::Sha256;
use std::path::Path;
use std::sync::LazyLock;

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
    /// Personal only on rows whose entity is a person (`entity_type`).
    PersonRows,
    /// Personal on rows whose entity type and `field` name a personal column (a
    /// `changes` row's `before` and `after`).
    PersonalField,
    /// Not personal as a whole: replace e-mail addresses inside it.
    Scan,
}

/// Whether a column named `column` holds a person's field, by the mirror's
/// declaration (see the module's documentation). In a custom report, whose columns
/// the report layer cannot know, a name shared with columns no one owns (`name`,
/// `full_name`) counts too.
fn names_a_person(names: &PersonalNames, column: &str, custom: bool) -> bool {
    let column = column.to_ascii_lowercase();
    names.fields.iter().any(|field| {
        let named = column == field.name || column.ends_with(&format!("_{}", field.name));
        let whose = !field.shared
            || custom
            || names
                .roles
                .iter()
                .any(|role| column.ends_with(&format!("{role}_{}", field.name)));
        let inside = field.identifies == Identifies::Address && column.contains(field.name);
        (named && whose) || inside
    })
}

fn mode(names: &PersonalNames, column: &str, custom: bool, changes: bool) -> Mode {
    if names_a_person(names, column, custom) {
        Mode::Whole
    } else if column.eq_ignore_ascii_case("entity_name") {
        Mode::PersonRows
    } else if changes && matches!(column, "before" | "after") {
        Mode::PersonalField
    } else {
        Mode::Scan
    }
}

/// A string column's values, or `None` when the frame has no such column.
fn texts(
    df: &DataFrame,
    report: &str,
    column: &str,
) -> Result<Option<Vec<Option<String>>>, ReportError> {
    match df.column(column) {
        Ok(c) if c.dtype() == &DataType::String => {
            let ca = c.str().map_err(pl(report, "redacting"))?;
            Ok(Some(ca.iter().map(|v| v.map(str::to_string)).collect()))
        }
        _ => Ok(None),
    }
}

/// Which rows' `entity_name` is a person's, and which rows' `before` and `after`.
struct PersonalRows {
    entity: Option<Vec<bool>>,
    field: Option<Vec<bool>>,
}

impl PersonalRows {
    fn of(names: &PersonalNames, report: &str, df: &DataFrame) -> Result<Self, ReportError> {
        let types = texts(df, report, "entity_type")?;
        let entity = types.as_ref().map(|types| {
            types
                .iter()
                .map(|t| t.as_deref().is_some_and(|t| names.own_roles.contains(&t)))
                .collect()
        });
        let field = match (&types, texts(df, report, "field")?) {
            (Some(types), Some(fields)) => Some(
                types
                    .iter()
                    .zip(&fields)
                    .map(|(t, f)| match (t, f) {
                        (Some(t), Some(f)) => names_a_person(names, &format!("{t}_{f}"), false),
                        _ => false,
                    })
                    .collect(),
            ),
            _ => None,
        };
        Ok(PersonalRows { entity, field })
    }

    fn personal(&self, mode: Mode, row: usize) -> bool {
        let at = |rows: &Option<Vec<bool>>| rows.as_ref().is_some_and(|r| r[row]);
        match mode {
            Mode::Whole => true,
            Mode::PersonRows => at(&self.entity),
            Mode::PersonalField => at(&self.field),
            Mode::Scan => false,
        }
    }
}

/// Returns the frame with personal data pseudonymized. In a custom report (whose
/// columns the report layer cannot know) a column named like a personal field
/// counts as a person's whatever else the name could be.
pub fn redact(
    names: &Pseudonyms,
    report: &str,
    df: DataFrame,
    custom: bool,
) -> Result<DataFrame, ReportError> {
    let declared = privacy::personal_names();
    let rows = PersonalRows::of(&declared, report, &df)?;
    let changes = df.column("field").is_ok();
    let mut columns = Vec::with_capacity(df.width());
    for col in df.columns() {
        if col.dtype() != &DataType::String {
            columns.push(col.clone());
            continue;
        }
        let ca = col.str().map_err(pl(report, "redacting"))?;
        let m = mode(&declared, col.name().as_str(), custom, changes);
        let out: StringChunked = ca
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.map(|s| match rows.personal(m, i) {
                    true => names.pseudonym(s),
                    false => names.scrub_emails(s),
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

    /// A frame of text columns.
    fn frame(columns: &[(&str, &[&str])]) -> DataFrame {
        let height = columns.first().map_or(0, |(_, v)| v.len());
        let columns = columns
            .iter()
            .map(|(name, values)| {
                let ca: StringChunked = values.iter().map(|v| Some(*v)).collect();
                ca.with_name((*name).into()).into_column()
            })
            .collect();
        DataFrame::new(height, columns).expect("frame")
    }

    fn cells(df: &DataFrame, column: &str) -> Vec<String> {
        df.column(column)
            .expect("column")
            .str()
            .expect("text")
            .iter()
            .map(|v| v.unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn report_columns_named_after_a_personal_field_are_a_person_s() {
        let declared = privacy::personal_names();
        for personal in [
            "user_name",
            "user_email",
            "owner",
            "owner_name",
            "member_name",
            "collaborator_name",
            "admin_user_name",
            "username",
            "job_title",
            "emails",
        ] {
            assert!(names_a_person(&declared, personal, false), "{personal}");
        }
        for not in [
            "name",
            "organization_name",
            "project_name",
            "whitelabel_name",
            "tier",
        ] {
            assert!(!names_a_person(&declared, not, false), "{not}");
        }
        for custom in ["name", "full_name", "person_name"] {
            assert!(names_a_person(&declared, custom, true), "{custom}");
        }
    }

    #[test]
    fn a_changed_personal_field_is_a_pseudonym_before_and_after() {
        let names = names(1);
        let df = frame(&[
            (
                "entity_type",
                &["user", "member", "project", "project", "organization"],
            ),
            ("entity_name", &["Ada", "Ada in Org", "P", "Q", "Org"]),
            ("field", &["name", "job_title", "owner", "name", "name"]),
            ("before", &["Ada", "Engineer", "Ada", "Old P", "Old Org"]),
            ("after", &["Ada L.", "Countess", "Bob", "P", "Org"]),
        ]);
        let out = redact(&names, "changes", df, false).expect("redact");
        let pseudonym = |v: &str| names.pseudonym(v);
        assert_eq!(
            cells(&out, "before"),
            [
                pseudonym("Ada"),
                pseudonym("Engineer"),
                pseudonym("Ada"),
                "Old P".into(),
                "Old Org".into()
            ]
        );
        assert_eq!(
            cells(&out, "after")[3..],
            ["P".to_string(), "Org".to_string()]
        );
        assert_eq!(
            cells(&out, "entity_name"),
            [
                pseudonym("Ada"),
                pseudonym("Ada in Org"),
                "P".into(),
                "Q".into(),
                "Org".into()
            ]
        );
    }

    #[test]
    fn a_personal_column_added_to_the_spec_is_redacted_with_no_other_change() {
        let names = names(1);
        let rows = || {
            frame(&[
                ("phone", &["+1 555 0100"]),
                ("user_phone", &["+1 555 0100"]),
                ("tier", &["pro"]),
            ])
        };
        let change = || {
            frame(&[
                ("entity_type", &["user", "user"]),
                ("field", &["phone", "tier"]),
                ("before", &["+1 555 0100", "free"]),
                ("after", &["+1 555 0101", "pro"]),
            ])
        };
        // Not declared: as they are.
        let plain = redact(&names, "custom", rows(), false).expect("redact");
        assert_eq!(cells(&plain, "phone"), ["+1 555 0100"]);
        let plain = redact(&names, "changes", change(), false).expect("redact");
        assert_eq!(cells(&plain, "before")[0], "+1 555 0100");
        // Declared on the users' spec, and nothing else changed.
        crate::mirror::spec::with_tables(crate::mirror::testkit::tables_with_a_phone(), || {
            let out = redact(&names, "custom", rows(), false).expect("redact");
            let alias = names.pseudonym("+1 555 0100");
            assert_eq!(cells(&out, "phone"), cells(&out, "user_phone"));
            assert_eq!(cells(&out, "phone")[0], alias);
            assert_eq!(cells(&out, "tier"), ["pro"]);
            let out = redact(&names, "changes", change(), false).expect("redact");
            assert_eq!(cells(&out, "before"), [alias, "free".to_string()]);
            assert_eq!(cells(&out, "after")[0], names.pseudonym("+1 555 0101"));
        });
    }
}
