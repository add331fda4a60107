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
#[derive(Debug, Clone)]
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
        body: Pieces(vec![compress(raw)]),
        hash: xxhash_rust::xxh3::xxh3_128(raw).to_le_bytes().to_vec(),
        size: raw.len(),
    }
}

/// Stored bytes in pieces: a compressed list of tens of megabytes is kept as
/// pieces of [`PIECE`] bytes, so it never needs one block of its size (growing one
/// by doubling copies it and holds up to twice its size), and is written into its
/// row piece by piece.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pieces(pub Vec<Vec<u8>>);

/// Size of the pieces a streamed body is compressed into.
pub const PIECE: usize = 1 << 20;

impl Pieces {
    /// Bytes in all pieces.
    pub fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    /// The bytes as one block.
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.concat()
    }
}

impl std::io::Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.last().is_none_or(|last| last.len() == PIECE) {
            self.0.push(Vec::with_capacity(PIECE));
        }
        let Some(last) = self.0.last_mut() else {
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
        StreamEncoder {
            frame: lz4_flex::frame::FrameEncoder::new(Pieces::default()),
            hash: xxhash_rust::xxh3::Xxh3::new(),
            size: 0,
            failed: None,
        }
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
#[error("the body could not be compressed for storage: {0}")]
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
        if let Some(last) = body.0.last_mut() {
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
        let piece = &encoded_big.body.0[0];
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
        assert!(streamed.body.0.iter().all(|p| p.len() <= PIECE));
        assert_eq!(
            decode(streamed.encoding, &streamed.body.to_vec()).expect("decodes"),
            body
        );
        assert!(decode("lz4-frame", b"garbage").is_err());
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
