//! List documents read as a stream: `{"success": true, "projects": [ ... ]}` is
//! parsed while its body arrives, and the list's elements are handed on in batches
//! as soon as each batch is complete, so neither the body nor the whole list is
//! ever held in memory (the project list of a white label with 100,000 projects is
//! over 150 MB of JSON).
//!
//! The parse runs on a blocking thread: serde_json reads from a [`ChunkReader`]
//! that the async side feeds with the body's chunks through a small channel, so a
//! slow consumer holds the download back instead of letting chunks pile up.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};

/// What a list document said besides its elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEnd {
    /// The envelope's `success`.
    pub success: bool,
    /// The envelope's `error`.
    pub error: Option<String>,
    /// Elements handed on.
    pub elements: usize,
}

/// Bytes one element of a list may take (the first one counts the envelope before
/// the list too). Elements are kilobytes; one that never ends (an endless string)
/// is cut here rather than growing in memory, with an I/O error of kind
/// `FileTooLarge` that the client reports as such.
pub const ELEMENT_LIMIT: u64 = 16 << 20;

/// Bytes read so far, and where the current element started.
#[derive(Default)]
struct Meter {
    read: Cell<u64>,
    element_start: Cell<u64>,
}

impl Meter {
    /// An element ended: the next one starts here.
    fn element_done(&self) {
        self.element_start.set(self.read.get());
    }
}

/// A reader that counts its bytes and fails once one element passes the limit.
struct Metered<'m, R> {
    inner: R,
    meter: &'m Meter,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let meter = self.meter;
        meter.read.set(meter.read.get() + n as u64);
        if meter.read.get() - meter.element_start.get() > ELEMENT_LIMIT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!(
                    "one element of the list passes {} MB; the rest was not read",
                    ELEMENT_LIMIT >> 20
                ),
            ));
        }
        Ok(n)
    }
}

/// Parses one list document from `reader`: the elements of the array under `field`
/// go to `sink` in batches of at most `batch` (a `null` or absent list is empty);
/// `success` and `error` are read as the response models read them, and every
/// other field is skipped. Batches already handed on stay handed on when the
/// document turns out broken later: the caller decides what a partial list means.
pub fn parse_list<T, R, F>(
    reader: R,
    field: &str,
    batch: usize,
    sink: &mut F,
) -> Result<ListEnd, serde_json::Error>
where
    T: DeserializeOwned,
    R: Read,
    F: FnMut(Vec<T>),
{
    let meter = Meter::default();
    let reader = Metered {
        inner: reader,
        meter: &meter,
    };
    // serde_json reads a reader byte by byte; a buffer makes each read a copy from
    // memory rather than a call into the channel reader.
    let reader = std::io::BufReader::with_capacity(64 << 10, reader);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let end = de::Deserializer::deserialize_map(
        &mut de,
        Document {
            field,
            batch: batch.max(1),
            sink,
            meter: &meter,
            element: PhantomData,
        },
    )?;
    de.end()?;
    Ok(end)
}

/// The top-level object of a list document.
struct Document<'a, T, F> {
    field: &'a str,
    batch: usize,
    sink: &'a mut F,
    meter: &'a Meter,
    element: PhantomData<fn() -> T>,
}

impl<'de, T, F> de::Visitor<'de> for Document<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(Vec<T>),
{
    type Value = ListEnd;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with `success` and a `{}` list", self.field)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ListEnd, A::Error> {
        let (mut success, mut error, mut elements) = (None, None, 0);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "success" => success = Some(map.next_value::<bool>()?),
                "error" => error = map.next_value::<Option<String>>()?,
                k if k == self.field => {
                    elements += map.next_value_seed(Elements::<T, F> {
                        batch: self.batch,
                        sink: &mut *self.sink,
                        meter: self.meter,
                        element: PhantomData,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let success = success.ok_or_else(|| de::Error::missing_field("success"))?;
        Ok(ListEnd {
            success,
            error,
            elements,
        })
    }
}

/// The list itself (or `null`), handed on in batches; its value is the count.
struct Elements<'a, T, F> {
    batch: usize,
    sink: &'a mut F,
    meter: &'a Meter,
    element: PhantomData<fn() -> T>,
}

impl<'de, T, F> DeserializeSeed<'de> for Elements<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(Vec<T>),
{
    type Value = usize;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T, F> de::Visitor<'de> for Elements<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(Vec<T>),
{
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // serde's own words for a vector, so errors read as they did when lists
        // were parsed whole.
        f.write_str("a sequence")
    }

    fn visit_none<E: de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_unit<E: de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut count = 0;
        let mut pending = Vec::with_capacity(self.batch);
        while let Some(element) = seq.next_element::<T>()? {
            self.meter.element_done();
            pending.push(element);
            count += 1;
            if pending.len() == self.batch {
                (self.sink)(std::mem::replace(
                    &mut pending,
                    Vec::with_capacity(self.batch),
                ));
            }
        }
        if !pending.is_empty() {
            (self.sink)(pending);
        }
        Ok(count)
    }
}

/// What sees every byte of a streamed body as it passes (the mirror's encoder
/// hashes and compresses it).
pub trait Tap: Send + 'static {
    /// The body's next bytes.
    fn feed(&mut self, chunk: &[u8]);
}

/// No tap: the bytes are only parsed.
impl Tap for () {
    fn feed(&mut self, _: &[u8]) {}
}

/// A reader over chunks that arrive on a channel (the body of a response as the
/// async side receives it). The channel closing is the end of the body; `tap` sees
/// every chunk as it is consumed (hashing and compressing the raw bytes as they pass).
pub struct ChunkReader<C, P> {
    chunks: tokio::sync::mpsc::Receiver<C>,
    current: Option<C>,
    offset: usize,
    tap: P,
    head: Vec<u8>,
}

/// Bytes of the body's start a reader keeps, to describe a body that is not JSON.
const HEAD: usize = 4096;

impl<C: AsRef<[u8]>, P: Tap> ChunkReader<C, P> {
    /// A reader over `chunks`, showing each chunk to `tap` once.
    pub fn new(chunks: tokio::sync::mpsc::Receiver<C>, tap: P) -> Self {
        ChunkReader {
            chunks,
            current: None,
            offset: 0,
            tap,
            head: Vec::new(),
        }
    }

    /// The start of the body (up to 4 KB), for error messages.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The tap, once the reader is done with.
    pub fn into_tap(self) -> P {
        self.tap
    }
}

impl<C: AsRef<[u8]>, P: Tap> Read for ChunkReader<C, P> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(chunk) = &self.current {
                let rest = &chunk.as_ref()[self.offset..];
                if !rest.is_empty() {
                    let n = rest.len().min(buf.len());
                    buf[..n].copy_from_slice(&rest[..n]);
                    self.offset += n;
                    return Ok(n);
                }
            }
            // Called on a blocking thread (never inside the runtime).
            match self.chunks.blocking_recv() {
                Some(chunk) => {
                    let bytes = chunk.as_ref();
                    if self.head.len() < HEAD {
                        let take = bytes.len().min(HEAD - self.head.len());
                        self.head.extend_from_slice(&bytes[..take]);
                    }
                    self.tap.feed(bytes);
                    self.current = Some(chunk);
                    self.offset = 0;
                }
                None => return Ok(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::IdOnly;

    fn ids(body: &str, batch: usize) -> (Result<ListEnd, serde_json::Error>, Vec<Vec<i64>>) {
        let mut batches = Vec::new();
        let end = parse_list::<IdOnly, _, _>(
            body.as_bytes(),
            "organizations",
            batch,
            &mut |b: Vec<IdOnly>| batches.push(b.iter().filter_map(|o| o.id).collect()),
        );
        (end, batches)
    }

    #[test]
    fn reads_the_envelope_wherever_it_stands_and_batches_the_list() {
        let body = r#"{"organizations":[{"id":1,"x":[1,{"y":2}]},{"id":2},{"id":3}],"extra":{"a":[]},"success":true}"#;
        let (end, batches) = ids(body, 2);
        let end = end.expect("parses");
        assert_eq!(
            end,
            ListEnd {
                success: true,
                error: None,
                elements: 3
            }
        );
        assert_eq!(batches, vec![vec![1, 2], vec![3]]);
        let (end, batches) = ids(r#"{"success":false,"error":"no","organizations":null}"#, 2);
        let end = end.expect("parses");
        assert!(!end.success);
        assert_eq!(end.error.as_deref(), Some("no"));
        assert!(batches.is_empty());
    }

    #[test]
    fn rejects_what_the_response_models_reject() {
        for body in [
            r#"{"organizations":[]}"#,
            r#"{"success":null,"organizations":[]}"#,
            r#"{"success":true,"organizations":{}}"#,
            r#"{"success":true,"organizations":[{"id":1}"#,
            r#"{"success":true} trailing"#,
            "<html></html>",
            "",
        ] {
            assert!(ids(body, 10).0.is_err(), "{body}");
        }
    }

    #[test]
    fn an_element_that_never_ends_is_cut_at_the_limit() {
        let mut body = br#"{"success":true,"organizations":[{"id":1},{"id":2,"name":""#.to_vec();
        // The buffer reads ahead up to 64 KB, so the cut comes within that of the limit.
        body.resize(body.len() + ELEMENT_LIMIT as usize + (64 << 10) + 1, b'x');
        let mut handed = 0;
        let end =
            parse_list::<IdOnly, _, _>(&body[..], "organizations", 1, &mut |b: Vec<IdOnly>| {
                handed += b.len()
            });
        let error = end.expect_err("cut");
        assert_eq!(
            error.io_error_kind(),
            Some(std::io::ErrorKind::FileTooLarge)
        );
        assert!(
            error
                .to_string()
                .contains("one element of the list passes 16 MB"),
            "{error}"
        );
        assert_eq!(handed, 1, "the element before it was handed on");
        // Many elements that together pass the limit are fine.
        let mut many = br#"{"success":true,"organizations":["#.to_vec();
        let element = format!(r#"{{"id":1,"name":"{}"}},"#, "x".repeat(1 << 20));
        for _ in 0..20 {
            many.extend_from_slice(element.as_bytes());
        }
        many.extend_from_slice(br#"{"id":2}]}"#);
        let (end, _) = ids(std::str::from_utf8(&many).expect("utf-8"), 5);
        assert_eq!(end.expect("parses").elements, 21);
    }

    #[test]
    fn hands_on_batches_before_the_body_ends() {
        // The body's first half only: the batches it holds are handed on before the
        // reader runs dry, while the second half has not been sent yet.
        let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(1);
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let parser = std::thread::spawn(move || {
            let reader = ChunkReader::new(rx, ());
            parse_list::<IdOnly, _, _>(reader, "organizations", 2, &mut |b: Vec<IdOnly>| {
                let _ = seen_tx.send(b.len());
            })
        });
        let first = br#"{"success":true,"organizations":[{"id":1},{"id":2},{"id":3},"#;
        tx.blocking_send(first.to_vec()).expect("parser listening");
        let handed = seen_rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a batch before the end of the body");
        assert_eq!(handed, 2);
        tx.blocking_send(br#"{"id":4}]}"#.to_vec())
            .expect("parser listening");
        drop(tx);
        let end = parser.join().expect("no panic").expect("parses");
        assert_eq!(end.elements, 4);
        assert_eq!(seen_rx.iter().collect::<Vec<_>>(), vec![2]);
    }
}
