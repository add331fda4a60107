//! The bytes of a series: a format byte, then one record per day, newest first. A
//! record is the step in days from the previous record (from day 0, 1970-01-01, for
//! the first) as a zigzag LEB128 varint, a tag (two bits per value: null, integer or
//! real) as a varint, then each integer as a zigzag varint and each real as its 8
//! little-endian bytes.
//!
//! Written out here rather than through a serialization crate: through bincode's
//! derived decoder the same records cost 60 ns each, 9 % of the CPU of all six
//! reports over large; this loop takes a few nanoseconds a record.

use super::{VALUES, Value};

/// The first byte of every series written by this build.
pub(super) const FORMAT: u8 = 1;

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Appends one record.
pub(super) fn put_record(out: &mut Vec<u8>, gap: i64, values: &[Value; VALUES]) {
    put_varint(out, zigzag(gap));
    let tag = values.iter().enumerate().fold(0u64, |tag, (i, value)| {
        let code = match value {
            Value::Null => 0,
            Value::Int(_) => 1,
            Value::Real(_) => 2,
        };
        tag | code << (2 * i)
    });
    put_varint(out, tag);
    for value in values {
        match *value {
            Value::Null => {}
            Value::Int(n) => put_varint(out, zigzag(n)),
            Value::Real(f) => out.extend_from_slice(&f.to_le_bytes()),
        }
    }
}

/// Reads a series' records one at a time.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn value(&mut self, code: u64) -> Option<Value> {
        Some(match code {
            0 => Value::Null,
            1 => Value::Int(unzigzag(self.varint()?)),
            2 => {
                let bytes = self.bytes.get(self.at..self.at + 8)?;
                self.at += 8;
                Value::Real(f64::from_le_bytes(bytes.try_into().ok()?))
            }
            _ => return None,
        })
    }

    /// The next record's gap and values; None when the bytes are not one.
    pub(super) fn record(&mut self) -> Option<(i64, [Value; VALUES])> {
        let gap = unzigzag(self.varint()?);
        let tag = self.varint()?;
        let mut values = [Value::Null; VALUES];
        for (i, value) in values.iter_mut().enumerate() {
            *value = self.value((tag >> (2 * i)) & 3)?;
        }
        Some((gap, values))
    }
}
