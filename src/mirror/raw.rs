//! Raw documents: the body of every fetched document, kept so that fields the
//! models do not name (new fields appear without notice) are never lost.
//!
//! Bodies are stored LZ4-compressed. JSON of this shape compresses about 5-8x and
//! LZ4 runs at gigabytes per second, so keeping every byte costs a fraction of the
//! disk and write time that plain text would (a `large` world is over a gigabyte of
//! JSON per sync). `orgledger query` registers `raw_json(encoding, body)` to read
//! them back: `SELECT raw_json(encoding, body) FROM raw_documents WHERE ...`.

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

/// A body ready to store.
#[derive(Debug)]
pub struct Encoded {
    /// `lz4`: LZ4 block with the uncompressed size prepended.
    pub encoding: &'static str,
    /// The stored bytes, in pieces.
    pub body: Pieces,
    /// 16-byte digest of the uncompressed body (unchanged digest: nothing is written).
    pub hash: Vec<u8>,
    /// Size of the body as received, in bytes.
    pub size: usize,
}

/// Compresses and digests a body (done on the fetch tasks, in parallel).
pub fn encode(raw: &[u8]) -> Encoded {
    Encoded {
        encoding: "lz4",
        body: Pieces {
            memory: vec![compress(raw)],
            ..Pieces::default()
        },
        hash: xxhash_rust::xxh3::xxh3_128(raw).to_le_bytes().to_vec(),
        size: raw.len(),
    }
}

/// Stored bytes in pieces: a compressed list of tens of megabytes is kept as
/// pieces of [`PIECE`] bytes, so it never needs one block of its size (growing one
/// by doubling copies it and holds up to twice its size), and is written into its
/// row piece by piece. Past [`SPILL_AT`], when given a [`Scratch`] place, the bytes
/// go to a scratch file instead of memory.
#[derive(Debug, Default)]
pub struct Pieces {
    memory: Vec<Vec<u8>>,
    spilled: Option<Spilled>,
    scratch: Option<Scratch>,
}

/// Size of the pieces a streamed body is compressed into.
pub const PIECE: usize = 1 << 20;

/// Encoded bytes held in memory before the rest goes to a scratch file. The
/// compressed `xlarge` project list (162 MB of JSON, 14-19 MB of LZ4) would
/// otherwise wait for the writer while 150,000 documents are queued and a dozen
/// white label users are in flight, the sync's peak: hand-run xlarge syncs peaked
/// at 82-89 MB with it on a file, 104-105 MB with it in memory. Lists smaller than
/// this are many (one per user) and cost less in memory than a file each.
pub const SPILL_AT: usize = 4 * PIECE;

/// Where bodies that outgrow [`SPILL_AT`] go: files next to the mirror (its file
/// system, its folder's permissions), each unlinked as soon as it is open, so
/// nothing is left behind whatever happens to the process.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// The mirror's path; a scratch file is named after it.
    mirror: std::sync::Arc<std::path::Path>,
}

/// A body's bytes on a scratch file, with the name it was created under (for
/// errors: the file has no name any more).
#[derive(Debug)]
struct Spilled {
    file: std::fs::File,
    path: std::path::PathBuf,
    len: usize,
}

impl Scratch {
    /// Scratch files beside the mirror at `mirror`.
    pub fn beside(mirror: &std::path::Path) -> Self {
        Scratch {
            mirror: mirror.into(),
        }
    }

    fn create(&self) -> std::io::Result<Spilled> {
        use std::os::unix::fs::OpenOptionsExt;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut name = self.mirror.as_os_str().to_owned();
        name.push(format!(".body-{}-{n}", std::process::id()));
        let path = std::path::PathBuf::from(name);
        // Private like the mirror: the bodies hold the same personal data.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| named(&path, e))?;
        std::fs::remove_file(&path).map_err(|e| named(&path, e))?;
        Ok(Spilled { file, path, len: 0 })
    }
}

impl Spilled {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        std::io::Write::write_all(&mut self.file, bytes).map_err(|e| named(&self.path, e))?;
        self.len += bytes.len();
        Ok(())
    }
}

/// An error of a scratch file, naming it (the cause alone would not say which file).
fn named(path: &std::path::Path, e: std::io::Error) -> std::io::Error {
    let message = format!("scratch file {}: {}", path.display(), crate::cause::io(&e));
    std::io::Error::new(e.kind(), message)
}

impl Pieces {
    fn spilling_to(scratch: Option<Scratch>) -> Self {
        Pieces {
            scratch,
            ..Pieces::default()
        }
    }

    /// Bytes in all pieces.
    pub fn len(&self) -> usize {
        self.memory.iter().map(Vec::len).sum::<usize>() + self.spilled.as_ref().map_or(0, |s| s.len)
    }

    /// The bytes, when they are one block in memory.
    pub fn whole(&self) -> Option<&[u8]> {
        match (&self.memory[..], &self.spilled) {
            ([whole], None) => Some(whole),
            _ => None,
        }
    }

    /// Hands the bytes to `write` in order, at most `max` at a time.
    pub fn write_to(
        &self,
        max: usize,
        mut write: impl FnMut(&[u8]) -> Result<(), super::MirrorError>,
    ) -> Result<(), super::MirrorError> {
        if let Some(spilled) = &self.spilled {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![0; max.min(spilled.len)];
            let mut at = 0;
            while at < spilled.len {
                let n = buf.len().min(spilled.len - at);
                spilled
                    .file
                    .read_exact_at(&mut buf[..n], at as u64)
                    .map_err(|e| super::MirrorError::Io(spilled.path.clone(), e))?;
                write(&buf[..n])?;
                at += n;
            }
        }
        for piece in self.memory.iter().flat_map(|p| p.chunks(max)) {
            write(piece)?;
        }
        Ok(())
    }

    /// The bytes as one block.
    pub fn bytes(&self) -> Result<Vec<u8>, super::MirrorError> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(PIECE, |piece| {
            out.extend_from_slice(piece);
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Pieces::bytes`], in tests.
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes().expect("readable")
    }

    /// Moves what memory holds to a scratch file, once it holds [`SPILL_AT`].
    fn spill_if_due(&mut self) -> std::io::Result<()> {
        let Some(scratch) = &self.scratch else {
            return Ok(());
        };
        if self.spilled.is_some() || self.len() < SPILL_AT {
            return Ok(());
        }
        let mut spilled = scratch.create()?;
        for piece in std::mem::take(&mut self.memory) {
            spilled.append(&piece)?;
        }
        self.spilled = Some(spilled);
        Ok(())
    }
}

impl std::io::Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(spilled) = &mut self.spilled {
            spilled.append(buf)?;
            return Ok(buf.len());
        }
        if self.memory.last().is_none_or(|last| last.len() == PIECE) {
            self.spill_if_due()?;
            if self.spilled.is_some() {
                return self.write(buf);
            }
            self.memory.push(Vec::with_capacity(PIECE));
        }
        let Some(last) = self.memory.last_mut() else {
            return Ok(0);
        };
        let n = buf.len().min(PIECE - last.len());
        last.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A body encoded as it passes, chunk by chunk: a list read as a stream is never
/// whole in memory, and neither is its body. It is stored as an LZ4 frame
/// (`lz4-frame`, the format of the `lz4` command), which is written block by block.
pub struct StreamEncoder {
    frame: lz4_flex::frame::FrameEncoder<Pieces>,
    hash: xxhash_rust::xxh3::Xxh3,
    size: usize,
    failed: Option<std::io::Error>,
}

impl Default for StreamEncoder {
    fn default() -> Self {
        StreamEncoder::spilling_to(None)
    }
}

impl std::fmt::Debug for StreamEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEncoder")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// A body that could not be encoded for storage.
#[derive(Debug, thiserror::Error)]
#[error("the body could not be kept for storage: {0}")]
pub struct EncodeError(String);

impl crate::api::list_stream::Tap for StreamEncoder {
    fn feed(&mut self, chunk: &[u8]) {
        use std::io::Write;
        self.hash.update(chunk);
        self.size += chunk.len();
        if self.failed.is_none()
            && let Err(e) = self.frame.write_all(chunk)
        {
            self.failed = Some(e);
        }
    }
}

impl StreamEncoder {
    /// An encoder whose bytes go to `scratch` once they pass [`SPILL_AT`].
    pub fn spilling_to(scratch: Option<Scratch>) -> Self {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        // lz4_flex picks the block size from the first write when not told: 4 MB
        // blocks when a list's first chunk passes 256 KB, 12 MB of buffers for one
        // list. Linked 64 KB blocks keep LZ4's 64 KB window across blocks: the
        // xlarge project list (160 MB) packs into 14.2 MB in 147 ms, against 19.4 MB
        // in 166 ms with independent 64 KB blocks.
        let info = FrameInfo::new()
            .block_size(BlockSize::Max64KB)
            .block_mode(BlockMode::Linked);
        StreamEncoder {
            frame: FrameEncoder::with_frame_info(info, Pieces::spilling_to(scratch)),
            hash: xxhash_rust::xxh3::Xxh3::new(),
            size: 0,
            failed: None,
        }
    }

    /// The whole body, encoded; its digest is the one [`encode`] gives the same bytes.
    pub fn finish(self) -> Result<Encoded, EncodeError> {
        if let Some(e) = self.failed {
            return Err(EncodeError(e.to_string()));
        }
        let mut body = self
            .frame
            .finish()
            .map_err(|e| EncodeError(e.to_string()))?;
        // The last piece only is partly filled.
        if let Some(last) = body.memory.last_mut() {
            last.shrink_to_fit();
        }
        Ok(Encoded {
            encoding: "lz4-frame",
            body,
            hash: self.hash.digest128().to_le_bytes().to_vec(),
            size: self.size,
        })
    }
}

/// Bodies up to this size compress through a per-thread scratch buffer.
const SCRATCH_MAX: usize = 8 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// LZ4 block with the uncompressed size prepended (as `compress_prepend_size`).
///
/// `compress_prepend_size` zeroes a fresh buffer of the worst-case size for every
/// body; compressing into a reused buffer and copying out the (much smaller)
/// result saves that for the gigabyte of bodies a large sync compresses.
fn compress(raw: &[u8]) -> Vec<u8> {
    let worst = lz4_flex::block::get_maximum_output_size(raw.len());
    if worst > SCRATCH_MAX {
        return compress_alone(raw);
    }
    SCRATCH.with_borrow_mut(|scratch| {
        if scratch.len() < worst {
            scratch.resize(worst, 0);
        }
        match lz4_flex::block::compress_into(raw, scratch) {
            Ok(n) => {
                let mut body = Vec::with_capacity(4 + n);
                body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
                body.extend_from_slice(&scratch[..n]);
                body
            }
            Err(_) => compress_alone(raw),
        }
    })
}

/// `compress_prepend_size` without its slack: it returns its worst-case buffer
/// (the body's size and more) holding a body that is 5-8x smaller, and that
/// buffer would travel to the writer and wait there with the document (20 MB for
/// the organization list of a large world).
fn compress_alone(raw: &[u8]) -> Vec<u8> {
    let mut body = lz4_flex::compress_prepend_size(raw);
    body.shrink_to_fit();
    body
}

/// A stored body that cannot be decoded.
#[derive(Debug, thiserror::Error)]
#[error("raw document in encoding {encoding:?} cannot be decoded: {reason}")]
pub struct DecodeError {
    encoding: String,
    reason: String,
}

/// The original bytes of a stored body.
pub fn decode(encoding: &str, body: &[u8]) -> Result<Vec<u8>, DecodeError> {
    match encoding {
        "lz4" => lz4_flex::decompress_size_prepended(body).map_err(|e| DecodeError {
            encoding: encoding.into(),
            reason: e.to_string(),
        }),
        "lz4-frame" => {
            use std::io::Read;
            let mut out = Vec::new();
            lz4_flex::frame::FrameDecoder::new(body)
                .read_to_end(&mut out)
                .map(|_| out)
                .map_err(|e| DecodeError {
                    encoding: encoding.into(),
                    reason: e.to_string(),
                })
        }
        "json" => Ok(body.to_vec()),
        other => Err(DecodeError {
            encoding: other.into(),
            reason: "unknown encoding".into(),
        }),
    }
}

/// Registers `raw_json(encoding, body)` on a connection.
pub fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "raw_json",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let encoding: String = ctx.get(0)?;
            let body: Vec<u8> = ctx.get(1)?;
            let bytes = decode(&encoding, &body)
                .map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        },
    )
}

/// Text that LZ4 barely shrinks (hex digits of a xorshift sequence), for tests of
/// bodies of a given stored size.
#[cfg(test)]
pub(crate) fn noise(bytes: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut out = Vec::with_capacity(bytes + 16);
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(format!("{x:016x}").as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_compresses_json() {
        let body = br#"{"success":true,"dailyMetrics":[{"totalUsers":1},{"totalUsers":1},{"totalUsers":1},{"totalUsers":1}]}"#.repeat(20);
        let encoded = encode(&body);
        assert!(
            encoded.body.len() * 3 < body.len(),
            "{} -> {}",
            body.len(),
            encoded.body.len()
        );
        assert_eq!(
            decode(encoded.encoding, &encoded.body.to_vec()).expect("decodes"),
            body
        );
        // The scratch-buffer path writes what lz4_flex's own helper writes, also
        // after a larger body left bytes in the buffer.
        for raw in [&body[..], b"{}", &body[..7]] {
            assert_eq!(
                encode(raw).body.to_vec(),
                lz4_flex::compress_prepend_size(raw)
            );
        }
        // A body too big for the scratch buffer: the same bytes, and no slack kept.
        let big = body.repeat((SCRATCH_MAX / body.len()) + 1);
        let encoded_big = encode(&big);
        let piece = &encoded_big.body.memory[0];
        assert_eq!(piece, &lz4_flex::compress_prepend_size(&big));
        assert_eq!(piece.capacity(), piece.len());
        assert!(decode("zip", &encoded.body.to_vec()).is_err());
        assert!(decode("lz4", b"garbage").is_err());
    }

    #[test]
    fn a_body_encoded_as_it_passes_decodes_and_digests_like_a_whole_one() {
        let body =
            br#"{"success":true,"projects":[{"id":1,"name":"Zo\u00eb"},{"id":2}]}"#.repeat(5000);
        use crate::api::list_stream::Tap;
        let mut stream = StreamEncoder::default();
        for chunk in body.chunks(7777) {
            stream.feed(chunk);
        }
        let streamed = stream.finish().expect("encodes");
        let whole = encode(&body);
        assert_eq!(
            streamed.hash, whole.hash,
            "an unchanged body is not rewritten"
        );
        assert_eq!(streamed.size, body.len());
        assert!(streamed.body.len() * 5 < body.len());
        assert!(streamed.body.memory.iter().all(|p| p.len() <= PIECE));
        assert_eq!(
            decode(streamed.encoding, &streamed.body.to_vec()).expect("decodes"),
            body
        );
        assert!(decode("lz4-frame", b"garbage").is_err());
    }

    #[test]
    fn a_list_frame_has_linked_64_kb_blocks_whatever_its_first_chunk() {
        use crate::api::list_stream::Tap;
        let body = br#"{"success":true,"projects":[{"id":1,"name":"x"}]}"#.repeat(40_000);
        let mut stream = StreamEncoder::default();
        stream.feed(&body);
        let stored = stream.finish().expect("encodes").body.to_vec();
        // After the magic number: FLG (bit 5 set for independent blocks) and BD
        // (bits 4-6: 4 for 64 KB).
        assert_eq!(stored[4] & 0x20, 0, "linked blocks");
        assert_eq!((stored[5] >> 4) & 7, 4, "64 KB blocks");
        assert_eq!(decode("lz4-frame", &stored).expect("decodes"), body);
    }

    #[test]
    fn a_large_body_goes_to_an_unnamed_scratch_file_and_reads_back_whole() {
        use crate::api::list_stream::Tap;
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::beside(&dir.path().join("m.db"));
        let body = noise(SPILL_AT + 3 * PIECE);
        let mut stream = StreamEncoder::spilling_to(Some(scratch.clone()));
        for chunk in body.chunks(64 << 10) {
            stream.feed(chunk);
        }
        let spilled = stream.finish().expect("encodes");
        assert!(spilled.body.spilled.is_some() && spilled.body.memory.is_empty());
        assert!(spilled.body.whole().is_none());
        assert_eq!(spilled.hash, encode(&body).hash);
        assert_eq!(
            decode(spilled.encoding, &spilled.body.to_vec()).expect("decodes"),
            body
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
        assert!(left.is_empty(), "the scratch file has no name: {left:?}");
        // A body below the mark stays in memory.
        let mut small = StreamEncoder::spilling_to(Some(scratch));
        small.feed(&body[..PIECE]);
        let small = small.finish().expect("encodes");
        assert!(small.body.spilled.is_none());
        assert_eq!(
            decode(small.encoding, &small.body.to_vec()).expect("decodes"),
            &body[..PIECE]
        );
        // A scratch file that cannot be made: the body is not kept, and the reason
        // names the file.
        let nowhere = Scratch::beside(&dir.path().join("missing").join("m.db"));
        let mut lost = StreamEncoder::spilling_to(Some(nowhere));
        lost.feed(&body);
        let error = lost.finish().expect_err("no scratch file").to_string();
        assert!(
            error.contains("scratch file") && error.contains("missing"),
            "{error}"
        );
    }

    #[test]
    fn sql_function_reads_stored_bodies() {
        let conn = Connection::open_in_memory().expect("db");
        register_functions(&conn).expect("register");
        let encoded = encode(r#"{"a":"Zoë"}"#.as_bytes());
        let text: String = conn
            .query_row(
                "SELECT raw_json(?1, ?2)",
                rusqlite::params![encoded.encoding, encoded.body.to_vec()],
                |r| r.get(0),
            )
            .expect("query");
        assert_eq!(text, r#"{"a":"Zoë"}"#);
    }
}
