//! Erasing a person: `orgledger forget` and the retention of people who left the
//! service (`[privacy] forget_removed_after_days`).
//!
//! An erasure empties the fields the table specs declare personal
//! (`crate::mirror::spec::Person`: name, username, address, company, photo, job
//! title, payment id, a project's owner) in the person's rows of every version
//! (current and `_history`), takes their addresses and names out of every
//! free-text cell of every table (`_moves` included, alert events and deliveries,
//! sync errors), and out of the raw documents (decompressed, cleaned, compressed
//! again). It keeps their id and every number, so reports still add up. The
//! erasure is recorded (`erasures`: whose id and when, never what).
//!
//! It fails closed: a raw document it cannot decode or read, or a text too long
//! to look for, may still hold the person, so the erasure is refused, naming
//! each, and the mirror is left as it was (all of it is one transaction), unless
//! the user chose to go on (`--leave-unchecked`); the result then lists what was
//! left unchecked.
//!
//! Then the file is rewritten (`VACUUM`) and the WAL folded back and truncated,
//! so no copy stays in free pages, in the unused space of a page or in the WAL.
//! Both steps are atomic, so a crash leaves the mirror as it was or as erased; a
//! rewrite cut short is owed (a bit of `PRAGMA user_version`, set in the
//! erasure's transaction) and done by the next `forget` or sync.

mod documents;
mod kept;
mod text;

pub(crate) use kept::{Body, KeptRedacted};

use crate::mirror::MirrorError;
use crate::mirror::privacy::{self, Reason};
use crate::mirror::scrub::Texts;
use crate::mirror::spec::Identifies;
use rusqlite::{Connection, Transaction};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whom to forget.
#[derive(Debug, Clone)]
pub enum Target {
    /// A user id.
    User(i64),
    /// An e-mail address the mirror holds (now or in its history).
    Email(String),
}

/// How to forget.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The person is still on the service: erase them anyway, and store their
    /// personal fields redacted in every later sync.
    pub keep_redacted: bool,
    /// Count what would be erased, change nothing.
    pub dry_run: bool,
    /// Erase what can be even when something cannot be looked through, and list
    /// it, instead of refusing.
    pub leave_unchecked: bool,
}

/// What an erasure took out (or would, in a dry run).
#[derive(Debug, Clone, Default)]
pub struct Erased {
    /// The person.
    pub user_id: i64,
    /// Rows of theirs whose personal fields were emptied, by table.
    pub rows: BTreeMap<String, u64>,
    /// Rows of other tables whose free text held their address or name, by table.
    pub texts: BTreeMap<String, u64>,
    /// Raw documents that held them.
    pub documents: u64,
    /// What could not be looked through, so may still hold them.
    pub unchecked: Vec<Unchecked>,
}

/// Something an erasure could not look through: it may still hold the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    /// What it is: `raw_documents (get-organization, 12)`.
    pub what: String,
    /// Why it could not be looked through.
    pub why: String,
}

impl std::fmt::Display for Unchecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.why)
    }
}

/// The first few of `items`, and how many more.
fn listed(items: &[Unchecked]) -> String {
    const SHOWN: usize = 5;
    let mut text = items
        .iter()
        .take(SHOWN)
        .map(Unchecked::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > SHOWN {
        text.push_str(&format!("; and {} more", items.len() - SHOWN));
    }
    text
}

impl Erased {
    /// Rows changed in all.
    pub fn total_rows(&self) -> u64 {
        self.rows.values().chain(self.texts.values()).sum()
    }
}

/// Why a person could not be forgotten.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    /// No row of the mirror names the person.
    #[error("the mirror {} holds no user {what}; nothing was erased", .db.display())]
    Unknown {
        /// The mirror.
        db: PathBuf,
        /// The user as given.
        what: String,
    },
    /// The address is that of several users.
    #[error(
        "the address belongs to several users in the mirror {} (ids {ids}); nothing was erased: forget each with --user ID",
        .db.display()
    )]
    Ambiguous {
        /// The mirror.
        db: PathBuf,
        /// Their ids.
        ids: String,
    },
    /// The person is still on the service.
    #[error(
        "user {user_id} still exists on the service (a current row in {table} as of the last sync); \
         nothing was erased: the next sync would store their personal data again. Remove them from \
         the service first, or pass --keep-redacted to erase them now and store their personal \
         fields redacted in every later sync"
    )]
    StillThere {
        /// The person.
        user_id: i64,
        /// A table that holds them as current.
        table: &'static str,
    },
    /// Something could not be looked through, and the user did not choose to go on.
    #[error(
        "{} in the mirror {} cannot be looked through for user {user_id} and may hold them, so \
         nothing was erased: {}. Repair or remove what is named (a later sync stores a document \
         again), or pass --leave-unchecked to erase everything else and leave these as they are",
        if .items.len() == 1 { "one thing".to_string() } else { format!("{} things", .items.len()) },
        .db.display(),
        listed(.items)
    )]
    Unchecked {
        /// The mirror.
        db: PathBuf,
        /// The person.
        user_id: i64,
        /// What could not be looked through.
        items: Vec<Unchecked>,
    },
    /// Another process kept the WAL from being folded back.
    #[error(
        "the erasure is committed, but copies of the erased data may stay in the WAL of {} until it \
         is folded back: another process is reading the mirror; once it is done, the next \
         `orgledger forget` or sync finishes the rewrite",
        .db.display()
    )]
    Busy {
        /// The mirror.
        db: PathBuf,
    },
    /// The mirror failed.
    #[error(transparent)]
    Mirror(#[from] MirrorError),
}

impl From<rusqlite::Error> for ForgetError {
    fn from(e: rusqlite::Error) -> Self {
        ForgetError::Mirror(MirrorError::Sql(e))
    }
}

/// Erases one person (see the module's documentation). The caller holds the sync
/// lock, so no sync writes them back meanwhile.
pub fn forget(
    conn: &mut Connection,
    db: &Path,
    target: &Target,
    opts: Options,
) -> Result<Erased, ForgetError> {
    finish_rewrite(conn, db)?;
    let user_id = resolve(conn, db, target)?;
    if !opts.keep_redacted
        && let Some(table) = current_in(conn, user_id)?
    {
        return Err(ForgetError::StillThere { user_id, table });
    }
    let given = match target {
        Target::Email(address) => Some(address.as_str()),
        Target::User(_) => None,
    };
    conn.pragma_update(None, "secure_delete", true)?;
    let tx = conn.transaction()?;
    let erased = erase(&tx, user_id, given)?;
    if !opts.leave_unchecked {
        refuse_unchecked(db, &erased)?;
    }
    if opts.dry_run {
        tx.rollback()?;
        return Ok(erased);
    }
    privacy::record_erasure(&tx, user_id, Reason::Request, opts.keep_redacted)?;
    owe_rewrite(&tx, true)?;
    tx.commit()?;
    rewrite(conn, db)?;
    Ok(erased)
}

/// Erases everyone who left the service more than `days` days before the last
/// sync observed it (no current row of theirs, the last one removed before that)
/// and was not erased since; returns their ids. Nobody is erased while anything
/// cannot be looked through for one of them.
pub fn apply_retention(
    conn: &mut Connection,
    db: &Path,
    days: u32,
) -> Result<Vec<i64>, ForgetError> {
    finish_rewrite(conn, db)?;
    let due = due_for_retention(conn, days)?;
    if due.is_empty() {
        return Ok(due);
    }
    conn.pragma_update(None, "secure_delete", true)?;
    let tx = conn.transaction()?;
    for &user_id in &due {
        refuse_unchecked(db, &erase(&tx, user_id, None)?)?;
        privacy::record_erasure(&tx, user_id, Reason::Retention, false)?;
    }
    owe_rewrite(&tx, true)?;
    tx.commit()?;
    rewrite(conn, db)?;
    Ok(due)
}

/// The refusal when the erasure could not look through everything (its
/// transaction, dropped unfinished, then rolls back).
fn refuse_unchecked(db: &Path, erased: &Erased) -> Result<(), ForgetError> {
    match erased.unchecked.is_empty() {
        true => Ok(()),
        false => Err(ForgetError::Unchecked {
            db: db.to_path_buf(),
            user_id: erased.user_id,
            items: erased.unchecked.clone(),
        }),
    }
}

fn due_for_retention(conn: &Connection, days: u32) -> rusqlite::Result<Vec<i64>> {
    let union: Vec<String> = privacy::own_records()
        .map(|(t, id)| format!("SELECT \"{id}\" AS user_id, removed_at FROM {}", t.name))
        .collect();
    let sql = format!(
        "WITH gone AS (SELECT user_id, MAX(removed_at) AS gone_at FROM ({}) \
           WHERE user_id IS NOT NULL GROUP BY user_id HAVING COUNT(*) = COUNT(removed_at)), \
         last AS (SELECT MAX(observed_at) AS at FROM sync_runs WHERE status IN ('succeeded', 'partial')) \
         SELECT user_id FROM gone, last \
          WHERE julianday(gone_at) < julianday(last.at) - ?1 \
            AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.user_id = gone.user_id AND e.at >= gone.gone_at) \
          ORDER BY user_id",
        union.join(" UNION ALL ")
    );
    conn.prepare(&sql)?
        .query_map([days], |r| r.get(0))?
        .collect()
}

/// The user id a target names: by id, or by an address in any version of their
/// own records.
fn resolve(conn: &Connection, db: &Path, target: &Target) -> Result<i64, ForgetError> {
    let what = match target {
        Target::User(id) => format!("with id {id}"),
        Target::Email(_) => "with that address".to_string(),
    };
    let union: Vec<String> = privacy::people()
        .filter(|(_, person)| person.owns_the_row())
        .flat_map(|(t, person)| {
            let id = person.id_column();
            let cond = match target {
                Target::User(_) => format!("\"{id}\" = ?1"),
                Target::Email(_) => person
                    .fields
                    .iter()
                    .filter(|f| f.identifies == Identifies::Address)
                    .map(|f| format!("lower(trim(\"{}\")) = lower(trim(?1))", f.column))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            };
            [t.name.to_string(), format!("{}_history", t.name)]
                .map(|table| format!("SELECT \"{id}\" FROM {table} WHERE {cond}"))
                .into_iter()
                .filter(move |_| !cond.is_empty())
        })
        .collect();
    let sql = format!(
        "SELECT DISTINCT * FROM ({}) ORDER BY 1",
        union.join(" UNION ")
    );
    let mut stmt = conn.prepare(&sql)?;
    let ids: Vec<i64> = match target {
        Target::User(id) => stmt
            .query_map([id], |r| r.get(0))?
            .collect::<Result<_, _>>()?,
        Target::Email(address) => stmt
            .query_map([address], |r| r.get(0))?
            .collect::<Result<_, _>>()?,
    };
    match ids.as_slice() {
        [] => Err(ForgetError::Unknown {
            db: db.to_path_buf(),
            what,
        }),
        [one] => Ok(*one),
        many => Err(ForgetError::Ambiguous {
            db: db.to_path_buf(),
            ids: many
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// A table that holds the person as current (not marked removed), if any.
fn current_in(conn: &Connection, user_id: i64) -> rusqlite::Result<Option<&'static str>> {
    for (table, id) in privacy::own_records() {
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM {} WHERE \"{id}\" = ?1 AND removed_at IS NULL)",
            table.name
        );
        if conn.query_row(&sql, [user_id], |r| r.get::<_, bool>(0))? {
            return Ok(Some(table.name));
        }
    }
    Ok(None)
}

/// The person's addresses and names: every field declared to identify them
/// (`crate::mirror::spec::Identifies`), in every version of every row that is
/// theirs or names them.
fn texts_of(conn: &Connection, user_id: i64, given: Option<&str>) -> rusqlite::Result<Texts> {
    let (mut emails, mut names) = (Vec::new(), Vec::new());
    emails.extend(given.map(str::to_string));
    for (table, person) in privacy::people() {
        let fields: Vec<_> = person
            .fields
            .iter()
            .filter(|f| f.identifies != Identifies::Other)
            .collect();
        if fields.is_empty() {
            continue;
        }
        let columns: Vec<String> = fields.iter().map(|f| format!("\"{}\"", f.column)).collect();
        for name in [table.name.to_string(), format!("{}_history", table.name)] {
            let sql = format!(
                "SELECT DISTINCT {} FROM {name} WHERE \"{}\" = ?1",
                columns.join(", "),
                person.id_column()
            );
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([user_id])?;
            while let Some(row) = rows.next()? {
                for (i, field) in fields.iter().enumerate() {
                    let text: Option<String> = row.get(i)?;
                    match field.identifies {
                        Identifies::Address => emails.extend(text),
                        _ => names.extend(text),
                    }
                }
            }
        }
    }
    Ok(Texts::new(
        emails.iter().map(String::as_str),
        names.iter().map(String::as_str),
    ))
}

/// Erases one person inside `tx`; what was erased, and what could not be looked
/// through.
fn erase(tx: &Transaction<'_>, user_id: i64, given: Option<&str>) -> Result<Erased, ForgetError> {
    // Read before the rows are emptied: they are where the texts come from.
    let texts = Arc::new(texts_of(tx, user_id, given)?);
    let mut erased = Erased {
        user_id,
        ..Erased::default()
    };
    if let Some(longest) = texts.too_long().iter().max() {
        erased.unchecked.push(Unchecked {
            what: format!("the addresses and names of user {user_id}"),
            why: format!(
                "{} of them are too long to look for (the longest has {longest} bytes)",
                texts.too_long().len()
            ),
        });
    }
    text::register_functions(tx, &texts)?;
    text::own_rows(tx, user_id, &mut erased)?;
    if !texts.is_empty() {
        text::free_text(tx, &mut erased)?;
    }
    documents::documents(tx, user_id, &texts, &mut erased)?;
    Ok(erased)
}

/// The bit of `PRAGMA user_version` that says a file rewrite is owed: set in an
/// erasure's transaction, cleared once the rewrite is done, so one cut short (a
/// crash, a reader holding the WAL) is done by the next `forget` or sync.
const REWRITE_OWED: i64 = 1;

/// Sets or clears [`REWRITE_OWED`].
fn owe_rewrite(conn: &Connection, owed: bool) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let version = match owed {
        true => version | REWRITE_OWED,
        false => version & !REWRITE_OWED,
    };
    conn.pragma_update(None, "user_version", version)
}

/// Does the rewrite an earlier erasure owes, if any (see [`REWRITE_OWED`]). The
/// caller holds the sync lock.
pub fn finish_rewrite(conn: &Connection, db: &Path) -> Result<(), ForgetError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version & REWRITE_OWED != 0 {
        tracing::info!(db = %db.display(), "rewriting the mirror as an earlier erasure owes");
        rewrite(conn, db)?;
    }
    Ok(())
}

/// Rewrites the file so no erased byte stays in free pages, in the free space of a
/// page or in the WAL: `VACUUM` copies only live rows into fresh pages, and a
/// truncating checkpoint folds the WAL into the file and empties it. Then the
/// rewrite is no longer owed.
pub fn rewrite(conn: &Connection, db: &Path) -> Result<(), ForgetError> {
    conn.execute_batch("VACUUM")?;
    fold_wal(conn, db)?;
    owe_rewrite(conn, false)?;
    // The cleared bit is one more header page in the WAL.
    fold_wal(conn, db)
}

/// Folds the WAL into the file and truncates it, unless a reader holds it.
fn fold_wal(conn: &Connection, db: &Path) -> Result<(), ForgetError> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    match busy {
        0 => Ok(()),
        _ => Err(ForgetError::Busy {
            db: db.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests;
