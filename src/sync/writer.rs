//! The single writer: one OS thread owns the SQLite connection and applies the
//! documents the fetch tasks send it, in batched transactions.
//!
//! Batching: the writer blocks for one message, then keeps its transaction open
//! for whatever arrives within a short window (up to a limit of documents). Under
//! load that gives large transactions (few commits); when the network is slow a
//! document is committed at most the window after it arrives. A document is always
//! applied whole inside one transaction, so a crash never leaves half of one; a
//! project list arrives as many partial documents of whole projects while it is
//! read (see `lists.rs`), its raw body last.
//!
//! A transaction also ends once its documents add up to [`BATCH_BYTES`]: what one
//! commit writes to the WAL, and what a crash or a full disk can take back, is then
//! bounded by the data, not by how many documents a fast machine gets through in the
//! window.

use crate::mirror::forget::{Body, KeptRedacted};
use crate::mirror::key_set::KeySet;
use crate::mirror::runs::{self, RunStatus, RunTotals, SyncErrorRecord};
use crate::mirror::spec::TABLES;
use crate::mirror::table::{RunStamp, TableSql, TableWriter, WriteStats};
use crate::mirror::{MirrorError, now_text};
use crate::sync::rows::{DocRows, RowSet};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

/// The tables' prepared statements for one run, by table name.
type Writers<'c> = HashMap<&'static str, TableWriter<'c>>;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Most documents applied in one transaction.
const BATCH_DOCS: usize = 256;

/// Most document bytes (as received) applied in one transaction. A large sync's
/// white label user documents are ~190 KB each, so this is ~20 of them per commit: few
/// enough commits that their fixed cost does not show, small enough that one
/// transaction's WAL stays in the tens of megabytes.
const BATCH_BYTES: usize = 4 << 20;

/// Longest a transaction stays open collecting documents. Each commit has a fixed
/// cost (WAL frame headers, SQLite's page-cache sweep); without the window a
/// writer that keeps up with the fetchers commits every few documents.
const BATCH_WINDOW: Duration = Duration::from_millis(100);

/// One fetched document, already mapped to rows.
#[derive(Debug)]
pub struct Doc {
    /// Operation name (`raw_documents.operation`).
    pub operation: &'static str,
    /// Entity key (`raw_documents.entity`), e.g. the organization id.
    pub entity: String,
    /// The body as received, encoded for storage (see [`crate::mirror::raw`]), kept
    /// so fields the models do not name survive. `None` when nothing was received
    /// and the stored body stays.
    pub raw: Option<crate::mirror::raw::Encoded>,
    /// The rows it becomes.
    pub rows: DocRows,
}

/// What the fetch side sends.
#[derive(Debug)]
pub enum WriterMsg {
    /// Store a document.
    Doc(Box<Doc>),
    /// Record a failure.
    Error(SyncErrorRecord),
}

/// How the run ended, decided by the fetch side once every task is done.
#[derive(Debug, Clone)]
pub struct Ending {
    /// Final status.
    pub status: RunStatus,
    /// Root tables whose every source was fetched completely: their unseen live
    /// rows are marked removed. Empty unless the run had no error.
    pub complete_tables: Vec<&'static str>,
    /// Requests and bytes.
    pub requests: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Summary message stored with the run.
    pub message: Option<String>,
}

/// Handle of the writer thread.
#[derive(Debug)]
pub struct Writer {
    tx: mpsc::Sender<WriterMsg>,
    ending: std::sync::mpsc::Sender<Ending>,
    thread: std::thread::JoinHandle<Result<RunTotals, MirrorError>>,
}

impl Writer {
    /// Starts the writer on `conn` for run `stamp`. `queue` bounds the documents
    /// waiting to be written (back-pressure on the fetchers, and a memory bound).
    pub fn start(conn: Connection, stamp: RunStamp, queue: usize) -> Self {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let (ending_tx, ending_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("orgledger-writer".into())
            .spawn(move || {
                let mut state = State::new(conn, stamp)?;
                state.drain(rx)?;
                let ending = ending_rx.recv().unwrap_or(Ending {
                    status: RunStatus::Aborted,
                    complete_tables: Vec::new(),
                    requests: 0,
                    bytes: 0,
                    message: Some("the sync stopped before it ended".into()),
                });
                state.finish(&ending)
            });
        // Spawning a thread fails only when the OS is out of resources; the sync
        // cannot run at all then, and `finish` reports it.
        let thread = match thread {
            Ok(handle) => handle,
            Err(e) => std::thread::spawn(move || Err(MirrorError::Writer(e.to_string()))),
        };
        Writer {
            tx,
            ending: ending_tx,
            thread,
        }
    }

    /// A sender for fetch tasks.
    pub fn sender(&self) -> mpsc::Sender<WriterMsg> {
        self.tx.clone()
    }

    /// Ends the run: waits for every queued document, applies removals, stores the
    /// run's totals. Returns the totals.
    pub async fn finish(self, ending: Ending) -> Result<RunTotals, MirrorError> {
        let Writer {
            tx,
            ending: ending_tx,
            thread,
        } = self;
        drop(tx);
        // The receiver is gone only if the thread already died; its result says why.
        let _ = ending_tx.send(ending);
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .map_err(|e| MirrorError::Writer(e.to_string()))?
            .map_err(|_| MirrorError::Writer("it panicked".into()))?
    }
}

/// What one transaction applied, folded into the run's totals once committed.
#[derive(Default)]
struct Batch {
    docs: usize,
    bytes: usize,
    stats: WriteStats,
    errors: u64,
}

/// What this run wrote so far. A failed transaction fails the whole run, so
/// entries are added as rows are written, not at commit.
#[derive(Default)]
struct Seen {
    /// Keys of root rows, per table: what a complete run keeps (everything else
    /// is marked removed).
    roots: HashMap<&'static str, KeySet>,
    /// Scopes of child rows, per table.
    scopes: HashMap<&'static str, KeySet>,
}

/// A second write of an entity in one run (list-projects and list-user-projects
/// both list a project, with its children) was compared once already: counting it
/// again made a first sync into an empty mirror report unchanged rows.
fn count_once(mut stats: WriteStats, first: bool) -> WriteStats {
    if !first {
        stats.unchanged = 0;
    }
    stats
}

impl Batch {
    fn apply(
        &mut self,
        tx: &Transaction,
        writers: &mut Writers,
        (stamp, kept): (&RunStamp, &KeptRedacted),
        msg: WriterMsg,
        seen: &mut Seen,
    ) -> Result<(), MirrorError> {
        self.docs += 1;
        match msg {
            WriterMsg::Doc(mut doc) => {
                self.bytes += doc.raw.as_ref().map_or(0, |raw| raw.size);
                if !kept.is_empty() {
                    redact(&mut doc, kept)?;
                }
                let stats = apply_doc(tx, writers, stamp, *doc, seen)?;
                self.stats.add(stats);
            }
            WriterMsg::Error(err) => {
                runs::record_error(tx, stamp.run_id, &err)?;
                self.errors += 1;
            }
        }
        Ok(())
    }
}

struct State {
    conn: Connection,
    stamp: RunStamp,
    /// People erased while still on the service: stored redacted.
    kept: KeptRedacted,
    tables: HashMap<&'static str, TableSql>,
    seen: Seen,
    stats: WriteStats,
    errors: u64,
}

impl State {
    fn new(conn: Connection, stamp: RunStamp) -> Result<Self, MirrorError> {
        let tables = TABLES
            .iter()
            .map(|spec| (spec.name, TableSql::new(spec)))
            .collect();
        Ok(State {
            kept: KeptRedacted::read(&conn)?,
            conn,
            stamp,
            tables,
            seen: Seen::default(),
            stats: WriteStats::default(),
            errors: 0,
        })
    }

    fn drain(&mut self, mut rx: mpsc::Receiver<WriterMsg>) -> Result<(), MirrorError> {
        // Waits for the next document with a deadline (a blocking receive has none).
        let waiter = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| MirrorError::Writer(e.to_string()))?;
        let mut writers: Writers = self
            .tables
            .iter()
            .map(|(name, sql)| Ok((*name, sql.writer(&self.conn, &self.stamp)?)))
            .collect::<rusqlite::Result<_>>()?;
        // A closed channel ends the loop at the next receive.
        while let Some(first) = rx.blocking_recv() {
            let started = Instant::now();
            // Unchecked: the prepared statements borrow the connection too. This
            // thread is its only user, so no other transaction can be open.
            // Immediate: a deferred transaction that reads first and then writes
            // fails at once (SQLITE_BUSY_SNAPSHOT) when another process (`check`,
            // `backup`, `alerts`) wrote in between; taking the write lock at the
            // start waits for it instead, within the connection's busy timeout.
            let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
            let mut batch = Batch::default();
            let mut next = Some(first);
            while let Some(msg) = next.take() {
                batch.apply(
                    &tx,
                    &mut writers,
                    (&self.stamp, &self.kept),
                    msg,
                    &mut self.seen,
                )?;
                if batch.docs >= BATCH_DOCS || batch.bytes >= BATCH_BYTES {
                    break;
                }
                next = match rx.try_recv() {
                    Ok(msg) => Some(msg),
                    Err(mpsc::error::TryRecvError::Disconnected) => None,
                    // Nothing queued: wait for more within the window (the queue is
                    // empty, so no fetcher is held up meanwhile).
                    Err(mpsc::error::TryRecvError::Empty) => {
                        let left = BATCH_WINDOW.saturating_sub(started.elapsed());
                        waiter
                            // The timer must be made inside the runtime.
                            .block_on(async { tokio::time::timeout(left, rx.recv()).await })
                            .ok()
                            .flatten()
                    }
                };
            }
            tx.commit()?;
            // Counted only once committed, so the totals match what is on disk.
            self.stats.add(batch.stats);
            self.errors += batch.errors;
        }
        Ok(())
    }

    fn finish(mut self, ending: &Ending) -> Result<RunTotals, MirrorError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for table in &ending.complete_tables {
            if let Some(sql) = self.tables.get(table) {
                let empty = KeySet::default();
                let seen = self.seen.roots.get(table).unwrap_or(&empty);
                self.stats.removed += sql.remove_unseen_keys(&tx, &self.stamp, seen)?;
            }
        }
        let totals = RunTotals {
            requests: ending.requests,
            bytes: ending.bytes,
            rows: self.stats,
            errors: self.errors,
        };
        runs::finish(
            &tx,
            self.stamp.run_id,
            ending.status,
            &totals,
            ending.message.as_deref(),
        )?;
        tx.commit()?;
        // Fold the WAL back into the main file so readers start from a small WAL.
        let _ = self.conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
        Ok(totals)
    }
}

/// Takes the people erased while still on the service out of a document's rows
/// (their personal fields) and its body, before anything of it is stored.
fn redact(doc: &mut Doc, kept: &KeptRedacted) -> Result<(), MirrorError> {
    let mut rows = Vec::new();
    for set in &mut doc.rows.sets {
        match set {
            RowSet::Root { table, row } => rows.push((*table, row)),
            RowSet::Scope {
                table, rows: scope, ..
            } => {
                rows.extend(scope.iter_mut().map(|row| (*table, row)));
            }
            RowSet::Kept { .. } => {}
        }
    }
    kept.rows(&mut rows);
    if let Some(raw) = &doc.raw {
        match kept.body(raw)? {
            Body::AsReceived => {}
            Body::Redacted(clean) => doc.raw = Some(clean),
            Body::Withheld(why) => {
                tracing::warn!(
                    operation = %doc.operation,
                    entity = %doc.entity,
                    "a body not stored, as it cannot be redacted for the people erased while still on the service: {why}"
                );
                doc.raw = None;
            }
        }
    }
    Ok(())
}

fn apply_doc(
    tx: &Transaction,
    writers: &mut Writers,
    stamp: &RunStamp,
    doc: Doc,
    seen: &mut Seen,
) -> Result<WriteStats, MirrorError> {
    if let Some(raw) = &doc.raw {
        store_raw(tx, stamp, &doc, raw)?;
    }
    let mut stats = WriteStats::default();
    for set in doc.rows.sets {
        match set {
            RowSet::Root { table, row } => {
                let first = seen
                    .roots
                    .entry(table.name)
                    .or_default()
                    .insert(&row.values[..table.key.len()]);
                let written = table_writer(writers, table.name)?.upsert(row)?;
                stats.add(count_once(written, first));
            }
            RowSet::Scope { table, scope, rows } => {
                let first = seen.scopes.entry(table.name).or_default().insert(&scope);
                let written = table_writer(writers, table.name)?.replace_scope(&scope, rows)?;
                stats.add(count_once(written, first));
            }
            RowSet::Kept { table, key } => {
                seen.roots.entry(table.name).or_default().insert(&key);
            }
        }
    }
    for problem in &doc.rows.problems {
        runs::record_error(
            tx,
            stamp.run_id,
            &SyncErrorRecord {
                operation: doc.operation.to_string(),
                entity: Some(problem.entity.clone().unwrap_or_else(|| doc.entity.clone())),
                http_status: None,
                message: problem.message.clone(),
                attempts: 1,
            },
        )?;
    }
    Ok(stats)
}

fn table_writer<'a, 'c>(
    writers: &'a mut Writers<'c>,
    name: &str,
) -> Result<&'a mut TableWriter<'c>, MirrorError> {
    writers
        .get_mut(name)
        .ok_or_else(|| MirrorError::Sql(rusqlite::Error::InvalidParameterName(name.to_string())))
}

/// Bodies from this size on are written into their row piece by piece: binding
/// one whole makes SQLite copy it twice (the bound value and the record), and the
/// C allocator keeps that memory once a list of tens of megabytes passed through.
/// The row is inserted with `zeroblob(size)`, which SQLite leaves unexpanded only
/// because `body` is the table's last column (migration 6).
const BODY_IN_PIECES: usize = 1 << 20;

/// Pieces of a body written at a time.
const BODY_PIECE: usize = 256 << 10;

/// Keeps the latest body of each document; rewritten only when it changed.
fn store_raw(
    tx: &Transaction,
    stamp: &RunStamp,
    doc: &Doc,
    raw: &crate::mirror::raw::Encoded,
) -> Result<(), MirrorError> {
    let hash = &raw.hash;
    let old: Option<Vec<u8>> = tx
        .prepare_cached(
            "SELECT content_hash FROM raw_documents WHERE operation = ?1 AND entity = ?2",
        )?
        .query_row(params![doc.operation, doc.entity], |row| row.get(0))
        .optional()?;
    if old.as_ref() == Some(hash) {
        return Ok(());
    }
    let size = raw.body.len();
    if let Some(body) = raw.body.whole()
        && size < BODY_IN_PIECES
    {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO raw_documents (operation, entity, content_hash, encoding, body, run_id, fetched_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            doc.operation,
            doc.entity,
            hash,
            raw.encoding,
            body,
            stamp.run_id,
            now_text()
        ])?;
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT OR REPLACE INTO raw_documents (operation, entity, content_hash, encoding, body, run_id, fetched_at) \
         VALUES (?1, ?2, ?3, ?4, zeroblob(?5), ?6, ?7)",
    )?
    .execute(params![
        doc.operation,
        doc.entity,
        hash,
        raw.encoding,
        size as i64,
        stamp.run_id,
        now_text()
    ])?;
    let mut blob = tx.blob_open(
        rusqlite::MAIN_DB,
        c"raw_documents",
        c"body",
        tx.last_insert_rowid(),
        false,
    )?;
    let mut at = 0;
    raw.body.write_to(BODY_PIECE, |piece| {
        blob.write_at(piece, at)?;
        at += piece.len();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::list_stream::Tap;
    use crate::mirror::raw::{self, StreamEncoder, noise};

    fn stream_encoded(body: &[u8], scratch: Option<raw::Scratch>) -> raw::Encoded {
        let mut encoder = StreamEncoder::spilling_to(scratch);
        for chunk in body.chunks(64 << 10) {
            encoder.feed(chunk);
        }
        encoder.finish().expect("encodes")
    }

    fn stored(conn: &Connection) -> (String, Vec<u8>, i64) {
        conn.query_row(
            "SELECT encoding, body, run_id FROM raw_documents WHERE operation = 'list-projects'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("one stored body")
    }

    /// The body of a large list, spilled to a scratch file past
    /// [`raw::SPILL_AT`] and held in memory below it, is written into its row whole.
    #[test]
    fn a_body_of_many_pieces_is_stored_whole_and_rewritten_only_when_it_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mirror = dir.path().join("m.db");
        let mut conn = crate::mirror::open_rw(&mirror).expect("open");
        let scratch = raw::Scratch::beside(&mirror);
        let doc = |run_id: i64, body: &[u8]| {
            let stamp = RunStamp {
                run_id,
                observed_at: "2026-03-01T12:00:00.000Z".into(),
            };
            let doc = Doc {
                operation: "list-projects",
                entity: "all".into(),
                raw: Some(stream_encoded(body, Some(scratch.clone()))),
                rows: DocRows::default(),
            };
            (stamp, doc)
        };
        let store = |conn: &mut Connection, (stamp, doc): (RunStamp, Doc)| {
            let tx = conn.transaction().expect("tx");
            let raw = doc.raw.as_ref().expect("a body");
            assert!(raw.body.whole().is_none() && raw.body.len() >= BODY_IN_PIECES);
            store_raw(&tx, &stamp, &doc, raw).expect("stored");
            tx.commit().expect("commit");
        };
        for (run_id, body) in [
            (1, noise(raw::SPILL_AT + 2 * raw::PIECE)),
            (2, noise(3 * raw::PIECE)),
        ] {
            store(&mut conn, doc(run_id, &body));
            let (encoding, stored_body, stored_run) = stored(&conn);
            assert_eq!(raw::decode(&encoding, &stored_body).expect("decodes"), body);
            assert_eq!(stored_run, run_id);
            store(&mut conn, doc(run_id + 10, &body));
            assert_eq!(
                stored(&conn).2,
                run_id,
                "an unchanged body is not rewritten"
            );
        }
    }
}
