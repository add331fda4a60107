//! The mirror's personal data: the key of the reports' pseudonyms, the record of
//! erasures (`orgledger forget`, `[privacy] forget_removed_after_days`), the
//! people whose personal fields every later sync stores redacted, and the
//! personal fields the table specs declare (`crate::mirror::spec::Person`), as
//! the erasure, the writer and the reports read them.
//!
//! The key is made once per mirror, by migration 12, from SQLite's randomness
//! (ChaCha20 seeded from the operating system's generator), and stays in the mirror
//! (so in its backups, which hold the same personal data it protects). It is in no
//! spec: `export` writes only the specs' tables, no report reads it, and `query`'s
//! guard refuses to read it, so no file made from the mirror carries it.

use crate::mirror::MirrorError;
use crate::mirror::spec::{self, Identifies, Person, TableSpec};
use rusqlite::types::Value;
use rusqlite::{Connection, params};
use std::collections::HashSet;
use std::path::Path;

/// Tables `query` may not read: what they hold would undo the pseudonyms.
pub const UNREADABLE: &[&str] = &["privacy_key"];

/// The key of the pseudonyms: 32 random bytes, never printed.
#[derive(Clone)]
pub struct PseudonymKey([u8; 32]);

impl PseudonymKey {
    /// The key's bytes, for the keyed hash.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for PseudonymKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PseudonymKey([redacted])")
    }
}

/// The mirror's pseudonym key.
pub fn pseudonym_key(conn: &Connection) -> rusqlite::Result<PseudonymKey> {
    let bytes: Vec<u8> =
        conn.query_row("SELECT key FROM privacy_key WHERE id = 1", [], |r| r.get(0))?;
    let key: [u8; 32] = bytes.try_into().map_err(|_| {
        rusqlite::Error::InvalidColumnType(0, "key".into(), rusqlite::types::Type::Blob)
    })?;
    Ok(PseudonymKey(key))
}

/// The pseudonym key of the mirror at `db`, read through a read-only connection.
pub fn read_pseudonym_key(db: &Path) -> Result<PseudonymKey, MirrorError> {
    let conn = crate::mirror::open_ro(db)?;
    pseudonym_key(&conn).map_err(|e| MirrorError::open(db, e))
}

/// Why a person was erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `orgledger forget`.
    Request,
    /// `[privacy] forget_removed_after_days`.
    Retention,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Request => "request",
            Reason::Retention => "retention",
        }
    }
}

/// Notes that a person's personal data was erased: when and whose (the id), never
/// what.
pub fn record_erasure(
    conn: &Connection,
    user_id: i64,
    reason: Reason,
    keep_redacted: bool,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO erasures (user_id, at, reason, keep_redacted) VALUES (?1, ?2, ?3, ?4)",
        params![
            user_id,
            crate::mirror::now_text(),
            reason.as_str(),
            keep_redacted
        ],
    )?;
    Ok(())
}

/// The `erasures` section of `orgledger status`.
pub const STATUS_SQL: &str = "SELECT user_id, at, reason, keep_redacted FROM erasures \
    ORDER BY at DESC, id DESC LIMIT 20";

/// The people whose personal fields every sync stores redacted (erased while still
/// on the service, with `--keep-redacted`).
pub fn kept_redacted(conn: &Connection) -> rusqlite::Result<HashSet<i64>> {
    conn.prepare("SELECT DISTINCT user_id FROM erasures WHERE keep_redacted = 1")?
        .query_map([], |r| r.get(0))?
        .collect()
}

/// Every person the tables' specs declare (`crate::mirror::spec::Person`), with
/// their table.
pub fn people() -> impl Iterator<Item = (&'static TableSpec, &'static Person)> {
    spec::tables()
        .iter()
        .copied()
        .flat_map(|table| table.personal.iter().map(move |person| (table, person)))
}

/// Every place a person's own records are: a table and the column with their id.
pub fn own_records() -> impl Iterator<Item = (&'static TableSpec, &'static str)> {
    people()
        .filter(|(_, person)| person.owns_the_row())
        .map(|(table, person)| (table, person.id_column()))
}

/// Whether `column` of `table` holds someone's personal data.
pub fn is_personal(table: &TableSpec, column: &str) -> bool {
    table
        .personal
        .iter()
        .any(|person| person.fields.iter().any(|f| f.column == column))
}

/// Whether the row (values in `table`'s column order) holds `person` as one of
/// `people`.
fn theirs(table: &TableSpec, person: &Person, row: &[Value], people: &HashSet<i64>) -> bool {
    table
        .index_of(person.id_column())
        .and_then(|i| row.get(i))
        .is_some_and(|v| matches!(v, Value::Integer(id) if people.contains(id)))
}

/// Sets the personal fields of `row` (values in `table`'s column order) to NULL
/// when they belong to one of `people`; whether it did.
pub fn redact_row(table: &TableSpec, row: &mut [Value], people: &HashSet<i64>) -> bool {
    let mut redacted = false;
    for person in table.personal {
        if theirs(table, person, row, people) {
            for field in person.fields {
                if let Some(i) = table.index_of(field.column) {
                    row[i] = Value::Null;
                }
            }
            redacted = true;
        }
    }
    redacted
}

/// The texts that name one of `people` in their own row: what each of their
/// fields that identifies them (an address, a login name, a name) holds.
pub fn texts_of_row(
    table: &TableSpec,
    row: &[Value],
    people: &HashSet<i64>,
) -> Vec<(Identifies, String)> {
    let mut out = Vec::new();
    for person in table.personal {
        if !theirs(table, person, row, people) {
            continue;
        }
        for field in person.fields {
            if field.identifies != Identifies::Other
                && let Some(Value::Text(text)) =
                    table.index_of(field.column).and_then(|i| row.get(i))
            {
                out.push((field.identifies, text.clone()));
            }
        }
    }
    out
}

/// The declared personal fields as names, for outputs that carry them under
/// column names of their own (the reports' `--redact-pii`).
#[derive(Debug, Clone, Default)]
pub struct PersonalNames {
    /// Each personal field once.
    pub fields: Vec<NamedField>,
    /// What the people are called (`user`, `member`, `owner`), each once.
    pub roles: Vec<&'static str>,
    /// The roles of people in their own records (`user`, `member`, `collaborator`):
    /// an entity of that type is a person.
    pub own_roles: Vec<&'static str>,
}

/// One personal field's name.
#[derive(Debug, Clone, Copy)]
pub struct NamedField {
    /// The column name.
    pub name: &'static str,
    /// What it says about its person.
    pub identifies: Identifies,
    /// Whether some table has a column of that name that is no one's (`name`, an
    /// organization's or a project's): the name alone does not say it is personal.
    pub shared: bool,
}

/// The declaration of every table's personal fields, as names.
pub fn personal_names() -> PersonalNames {
    let mut names = PersonalNames::default();
    for (_, person) in people() {
        push_once(&mut names.roles, person.role);
        if person.owns_the_row() {
            push_once(&mut names.own_roles, person.role);
        }
        for field in person.fields {
            if !names.fields.iter().any(|f| f.name == field.column) {
                names.fields.push(NamedField {
                    name: field.column,
                    identifies: field.identifies,
                    shared: spec::tables().iter().any(|t| {
                        t.index_of(field.column).is_some() && !is_personal(t, field.column)
                    }),
                });
            }
        }
    }
    names
}

fn push_once(list: &mut Vec<&'static str>, item: &'static str) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The tables that hold someone's personal fields.
pub fn person_tables() -> impl Iterator<Item = &'static TableSpec> {
    spec::tables()
        .iter()
        .copied()
        .filter(|t| !t.personal.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::spec::{PROJECTS, USERS};
    use crate::mirror::testkit::{i, row, t};

    #[test]
    fn every_personal_field_is_a_column_of_its_table_and_not_a_moving_one() {
        for (table, person) in people() {
            let id = person.id_column();
            assert!(table.index_of(id).is_some(), "{}.{id}", table.name);
            for f in person.fields {
                assert!(
                    table.index_of(f.column).is_some(),
                    "{}.{}",
                    table.name,
                    f.column
                );
                // The erasure empties `<table>` and `<table>_history`; a moving
                // column is also archived in `<table>_moves`.
                assert!(
                    !table.moving.contains(&f.column),
                    "{}.{} is personal and moving",
                    table.name,
                    f.column
                );
            }
        }
        assert_eq!(own_records().count(), 3, "users, members, collaborators");
    }

    #[test]
    fn only_the_people_named_lose_their_fields() {
        let people = HashSet::from([7]);
        let mut mine = row(
            &USERS,
            &[
                ("id", i(7)),
                ("email", t("a@b.example")),
                ("tier", t("pro")),
            ],
        );
        let mut theirs = row(&USERS, &[("id", i(8)), ("email", t("c@d.example"))]);
        redact_row(&USERS, &mut mine, &people);
        redact_row(&USERS, &mut theirs, &people);
        assert_eq!(mine[USERS.index_of("email").expect("email")], Value::Null);
        assert_eq!(mine[USERS.index_of("tier").expect("tier")], t("pro"));
        assert_eq!(mine[0], i(7));
        assert_eq!(
            theirs[USERS.index_of("email").expect("email")],
            t("c@d.example")
        );
        let mut project = row(
            &PROJECTS,
            &[("id", i(1)), ("owner", t("Ada")), ("owner_user_id", i(7))],
        );
        redact_row(&PROJECTS, &mut project, &people);
        assert_eq!(
            project[PROJECTS.index_of("owner").expect("owner")],
            Value::Null
        );
    }

    #[test]
    fn the_key_is_made_once_random_and_never_shown() {
        let mut a = Connection::open_in_memory().expect("db");
        let mut b = Connection::open_in_memory().expect("db");
        crate::mirror::schema::migrate_to(&mut a, crate::mirror::schema::CURRENT_VERSION)
            .expect("migrate");
        crate::mirror::schema::migrate_to(&mut b, crate::mirror::schema::CURRENT_VERSION)
            .expect("migrate");
        let (ka, kb) = (
            pseudonym_key(&a).expect("key"),
            pseudonym_key(&b).expect("key"),
        );
        assert_ne!(ka.bytes(), kb.bytes(), "each mirror has its own key");
        assert_ne!(ka.bytes(), &[0; 32]);
        assert_eq!(format!("{ka:?}"), "PseudonymKey([redacted])");
        let again = pseudonym_key(&a).expect("key");
        assert_eq!(ka.bytes(), again.bytes());
    }
}
