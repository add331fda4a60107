//! Erasing a person: `orgledger forget` and the retention of people who left the
//! service (`[privacy] forget_removed_after_days`).
//!
//! An erasure empties the fields that say who the person is (name, username,
//! address, company, photo, job title, payment id) in their rows of every version
//! (current and `_history`), takes their addresses and names out of every free-text
//! cell of every table (`_moves` included, alert events and deliveries, sync
//! errors), and out of the raw documents (decompressed, cleaned, compressed again).
//! It keeps their id and every number, so reports still add up. Then the file is
//! rewritten (`VACUUM`) and the WAL folded back and truncated, so no copy stays in
//! free pages, in the unused space of a page or in the WAL. The erasure is
//! recorded (`erasures`: whose id and when, never what).

use crate::mirror::privacy::{self, Reason};
use crate::mirror::scrub::{self, Texts};
use crate::mirror::table::content_hash;
use crate::mirror::{MirrorError, raw, spec};
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Transaction, params};
use std::collections::{BTreeMap, HashSet};
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
    /// Another process kept the WAL from being folded back.
    #[error(
        "the erasure is committed, but copies of the erased data may stay in the WAL of {} until it \
         is folded back: another process is reading the mirror; run the same `orgledger forget` \
         again once it is done",
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
    if opts.dry_run {
        tx.rollback()?;
        return Ok(erased);
    }
    privacy::record_erasure(&tx, user_id, Reason::Request, opts.keep_redacted)?;
    tx.commit()?;
    rewrite(conn, db)?;
    Ok(erased)
}

/// Erases everyone who left the service more than `days` days before the last
/// sync observed it (no current row of theirs, the last one removed before that)
/// and was not erased since; returns their ids.
pub fn apply_retention(
    conn: &mut Connection,
    db: &Path,
    days: u32,
) -> Result<Vec<i64>, ForgetError> {
    let due = due_for_retention(conn, days)?;
    if due.is_empty() {
        return Ok(due);
    }
    conn.pragma_update(None, "secure_delete", true)?;
    let tx = conn.transaction()?;
    for &user_id in &due {
        erase(&tx, user_id, None)?;
        privacy::record_erasure(&tx, user_id, Reason::Retention, false)?;
    }
    tx.commit()?;
    rewrite(conn, db)?;
    Ok(due)
}

/// Every place a person's rows are: a table, the column with their id.
fn person_rows() -> impl Iterator<Item = (&'static spec::TableSpec, &'static str)> {
    privacy::person_tables().flat_map(|t| {
        privacy::personal_columns(t)
            .iter()
            .filter(|(_, fields)| *fields == privacy::PERSON_FIELDS)
            .map(move |(id, _)| (t, *id))
    })
}

fn due_for_retention(conn: &Connection, days: u32) -> rusqlite::Result<Vec<i64>> {
    let union: Vec<String> = person_rows()
        .map(|(t, id)| format!("SELECT {id} AS user_id, removed_at FROM {}", t.name))
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

/// The user id a target names.
fn resolve(conn: &Connection, db: &Path, target: &Target) -> Result<i64, ForgetError> {
    let (sql_where, what) = match target {
        Target::User(id) => ("{id} = ?1", format!("with id {id}")),
        Target::Email(_) => (
            "lower(trim(email)) = lower(trim(?1))",
            "with that address".to_string(),
        ),
    };
    let union: Vec<String> = person_rows()
        .flat_map(|(t, id)| {
            let cond = sql_where.replace("{id}", id);
            [t.name.to_string(), format!("{}_history", t.name)]
                .map(|table| format!("SELECT {id} FROM {table} WHERE {cond}"))
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
    for (table, id) in person_rows() {
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM {} WHERE {id} = ?1 AND removed_at IS NULL)",
            table.name
        );
        if conn.query_row(&sql, [user_id], |r| r.get::<_, bool>(0))? {
            return Ok(Some(table.name));
        }
    }
    Ok(None)
}

/// The person's addresses and names, from every version of their rows.
fn texts_of(conn: &Connection, user_id: i64, given: Option<&str>) -> rusqlite::Result<Texts> {
    let (mut emails, mut names) = (Vec::new(), Vec::new());
    emails.extend(given.map(str::to_string));
    for (table, id) in person_rows() {
        for name in [table.name.to_string(), format!("{}_history", table.name)] {
            let sql = format!("SELECT DISTINCT email, name, username FROM {name} WHERE {id} = ?1");
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([user_id])?;
            while let Some(row) = rows.next()? {
                emails.extend(row.get::<_, Option<String>>(0)?);
                names.extend(row.get::<_, Option<String>>(1)?);
                names.extend(row.get::<_, Option<String>>(2)?);
            }
        }
    }
    for table in ["projects", "projects_history"] {
        let sql = format!(
            "SELECT DISTINCT owner FROM {table} WHERE owner_user_id = ?1 OR developer_profile_user_id = ?1"
        );
        let mut stmt = conn.prepare(&sql)?;
        let owners = stmt.query_map([user_id], |r| r.get::<_, Option<String>>(0))?;
        for owner in owners {
            names.extend(owner?);
        }
    }
    Ok(Texts::new(
        emails.iter().map(String::as_str),
        names.iter().map(String::as_str),
    ))
}

/// Erases one person inside `tx`; what was erased.
fn erase(tx: &Transaction<'_>, user_id: i64, given: Option<&str>) -> Result<Erased, ForgetError> {
    // Read before the rows are emptied: they are where the texts come from.
    let texts = Arc::new(texts_of(tx, user_id, given)?);
    let mut erased = Erased {
        user_id,
        ..Erased::default()
    };
    register_functions(tx, &texts)?;
    own_rows(tx, user_id, &mut erased)?;
    if !texts.is_empty() {
        free_text(tx, &mut erased)?;
    }
    erased.documents = documents(tx, user_id, &texts)?;
    Ok(erased)
}

/// The SQL functions the erasure's statements use: `forget_hit(text, names_too)`,
/// `forget_scrub(text, names_too)` (see [`Texts`]) and `forget_row_hash(values...)`,
/// a row's content hash, so a changed row's `content_hash` stays the hash of its
/// values (`orgledger check` verifies it, and the next sync compares with it).
fn register_functions(tx: &Transaction<'_>, texts: &Arc<Texts>) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    let hits = texts.clone();
    tx.create_scalar_function("forget_hit", 2, flags, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(text) => hits.hit(text, ctx.get::<bool>(1)?),
            _ => false,
        })
    })?;
    let scrubs = texts.clone();
    tx.create_scalar_function("forget_scrub", 2, flags, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(text) => {
                let text = String::from_utf8_lossy(text);
                Some(scrubs.scrub(&text, ctx.get::<bool>(1)?))
            }
            _ => None,
        })
    })?;
    tx.create_scalar_function("forget_row_hash", -1, flags, |ctx| {
        let values = (0..ctx.len())
            .map(|i| ctx.get::<rusqlite::types::Value>(i))
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

/// Empties the person's fields in every version of their rows.
fn own_rows(tx: &Transaction<'_>, user_id: i64, erased: &mut Erased) -> rusqlite::Result<()> {
    for table in privacy::person_tables() {
        for (id, fields) in privacy::personal_columns(table) {
            let mut set: Vec<String> = fields.iter().map(|f| format!("{f} = NULL")).collect();
            set.push(rehash(table, |c| match fields.contains(&c) {
                true => "NULL".to_string(),
                false => format!("\"{c}\""),
            }));
            let any: Vec<String> = fields.iter().map(|f| format!("{f} IS NOT NULL")).collect();
            for name in [table.name.to_string(), format!("{}_history", table.name)] {
                let sql = format!(
                    "UPDATE {name} SET {} WHERE {id} = ?1 AND ({})",
                    set.join(", "),
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
fn spec_of(table: &str) -> Option<&'static spec::TableSpec> {
    let base = table
        .strip_suffix("_history")
        .or_else(|| table.strip_suffix("_moves"))
        .unwrap_or(table);
    spec::TABLES.iter().copied().find(|s| s.name == base)
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
    let personal: Vec<&str> = spec.map(privacy::personal_fields).unwrap_or_default();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1) WHERE upper(type) = 'TEXT' AND pk = 0")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for name in names {
        let name = name?;
        if !keys.contains(&name.as_str()) {
            let names_too = !personal.contains(&name.as_str());
            out.push((name, names_too));
        }
    }
    Ok(out)
}

/// Takes the person's addresses and names out of the text of every table.
fn free_text(tx: &Transaction<'_>, erased: &mut Erased) -> rusqlite::Result<()> {
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

/// Takes the person out of every raw document that holds them; how many did.
fn documents(tx: &Transaction<'_>, user_id: i64, texts: &Texts) -> Result<u64, ForgetError> {
    let people = HashSet::from([user_id]);
    // The person's id as a user's or an owner's, in JSON.
    let id_field = regex::bytes::Regex::new(&format!(
        r#""(?:id|ownerUserId|developerProfileUserId)"\s*:\s*{user_id}(?:[^0-9.eE]|$)"#
    ))
    .expect("an integer in an escaped pattern is a valid regex");
    let mut cleaned: Vec<(i64, Vec<u8>)> = Vec::new();
    {
        let mut stmt = tx.prepare("SELECT rowid, encoding, body FROM raw_documents")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let encoding: String = row.get(1)?;
            let body = match row.get_ref(2)? {
                ValueRef::Blob(b) => b,
                _ => continue,
            };
            let Ok(json) = raw::decode(&encoding, body) else {
                continue;
            };
            // Cheap tests first: a document that names neither the person's id nor
            // one of their texts holds nothing of theirs.
            let may_hold = texts.hit(&json, true) || id_field.is_match(&json);
            if !may_hold {
                continue;
            }
            if let Some(clean) = scrub::document(&json, &people, texts) {
                cleaned.push((row.get(0)?, clean));
            }
        }
    }
    let mut update =
        tx.prepare("UPDATE raw_documents SET encoding = ?1, body = ?2 WHERE rowid = ?3")?;
    for (rowid, clean) in &cleaned {
        let encoded = raw::encode(clean);
        update.execute(params![encoded.encoding, bytes_of(&encoded.body)?, rowid])?;
    }
    Ok(cleaned.len() as u64)
}

/// Takes `texts` out of the text values of a row (not its key; in the fields that
/// say who someone is, addresses only, as [`text_columns`] does); whether any was.
fn scrub_row(
    table: &spec::TableSpec,
    values: &mut [rusqlite::types::Value],
    texts: &Texts,
) -> bool {
    let personal = privacy::personal_fields(table);
    let mut changed = false;
    for (i, column) in table.all_columns().enumerate().skip(table.key.len()) {
        let names_too = !personal.contains(&column.name);
        if let Some(rusqlite::types::Value::Text(text)) = values.get_mut(i)
            && texts.hit(text.as_bytes(), names_too)
        {
            *text = texts.scrub(text, names_too);
            changed = true;
        }
    }
    changed
}

/// A stored body's bytes in one block.
fn bytes_of(body: &raw::Pieces) -> Result<Vec<u8>, MirrorError> {
    let mut out = Vec::with_capacity(body.len());
    body.write_to(raw::PIECE, |piece| {
        out.extend_from_slice(piece);
        Ok(())
    })?;
    Ok(out)
}

/// Rewrites the file so no erased byte stays in free pages, in the free space of a
/// page or in the WAL: `VACUUM` copies only live rows into fresh pages, and a
/// truncating checkpoint folds the WAL into the file and empties it.
pub fn rewrite(conn: &Connection, db: &Path) -> Result<(), ForgetError> {
    conn.execute_batch("VACUUM")?;
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    if busy != 0 {
        return Err(ForgetError::Busy {
            db: db.to_path_buf(),
        });
    }
    Ok(())
}

/// The writer's part for people erased while still on the service: their rows'
/// personal fields and their raw documents, redacted before they are stored.
#[derive(Debug, Default)]
pub(crate) struct KeptRedacted {
    people: HashSet<i64>,
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
    pub fn rows(&self, rows: &mut [(&spec::TableSpec, &mut crate::mirror::table::Row)]) {
        if self.people.is_empty() {
            return;
        }
        let (mut emails, mut names) = (Vec::new(), Vec::new());
        for (table, row) in rows.iter() {
            for (field, text) in privacy::texts_of_row(table, &row.values, &self.people) {
                match field {
                    "email" => emails.push(text),
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

    /// A body to store without them, under the digest of the body as received (so
    /// an unchanged answer is not written again). None: it holds nothing of theirs.
    pub fn body(&self, received: &raw::Encoded) -> Result<Option<raw::Encoded>, MirrorError> {
        if self.people.is_empty() {
            return Ok(None);
        }
        let stored = bytes_of(&received.body)?;
        let Ok(json) = raw::decode(received.encoding, &stored) else {
            return Ok(None);
        };
        Ok(
            scrub::document(&json, &self.people, &Texts::default()).map(|clean| raw::Encoded {
                hash: received.hash.clone(),
                ..raw::encode(&clean)
            }),
        )
    }
}
