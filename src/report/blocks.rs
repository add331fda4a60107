//! Report rows turned into text in blocks, on two threads for big files, and written
//! in order.
//!
//! The JSON of `compute_trends` over an xlarge mirror (2.2 million rows, 775 MB) is
//! the last thing a report run waits for: its CSV and the other reports are done
//! while it is still being formatted on one core. Formatting alternate blocks on two
//! threads while the calling thread writes and hashes them uses the idle core. A few
//! blocks are in flight at once, so memory stays bounded whatever the file's size.

use std::io::Write;
use std::ops::Range;
use std::sync::mpsc::{Receiver, sync_channel};

/// Rows formatted into one block.
const BLOCK_ROWS: usize = 4096;

/// Files with fewer rows are formatted on the calling thread alone (threads cost
/// more than they save).
const PARALLEL_ROWS: usize = 50_000;

/// Blocks a formatting thread may have finished ahead of the writer.
const AHEAD: usize = 2;

/// Formats rows `0..rows` block by block with `format` (which appends the text of a
/// range of rows to a buffer) and writes the blocks to `out` in row order; `io`
/// turns a write error into `E`.
pub(crate) fn write_rows<W, E, F>(
    out: &mut W,
    rows: usize,
    format: F,
    io: impl Fn(std::io::Error) -> E,
) -> Result<(), E>
where
    W: Write,
    E: Send,
    F: Fn(Range<usize>, &mut Vec<u8>) -> Result<(), E> + Sync,
{
    if rows < PARALLEL_ROWS {
        let mut buf = Vec::new();
        for block in blocks(rows, 0, 1) {
            buf.clear();
            format(block, &mut buf)?;
            out.write_all(&buf).map_err(&io)?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let format = &format;
        let formatted: Vec<Receiver<Result<Vec<u8>, E>>> = (0..2)
            .map(|first| {
                let (give, formatted) = sync_channel(AHEAD);
                scope.spawn(move || {
                    for block in blocks(rows, first, 2) {
                        let mut buf = Vec::new();
                        let text = format(block, &mut buf).map(|()| buf);
                        let failed = text.is_err();
                        // A closed channel: the writer stopped (an error); so do we.
                        if give.send(text).is_err() || failed {
                            return;
                        }
                    }
                });
                formatted
            })
            .collect();
        for i in 0..rows.div_ceil(BLOCK_ROWS) {
            match formatted[i % 2].recv() {
                Ok(Ok(text)) => out.write_all(&text).map_err(&io)?,
                Ok(Err(e)) => return Err(e),
                // Returning drops the receivers, which stops the other thread.
                Err(_) => return Err(io(std::io::Error::other("a formatting thread stopped"))),
            }
        }
        Ok(())
    })
}

/// Every `step`-th block of rows from block `first` on.
fn blocks(rows: usize, first: usize, step: usize) -> impl Iterator<Item = Range<usize>> {
    (first * BLOCK_ROWS..rows)
        .step_by(step * BLOCK_ROWS)
        .map(move |start| start..(start + BLOCK_ROWS).min(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(rows: usize) -> Vec<u8> {
        let mut out = Vec::new();
        write_rows(
            &mut out,
            rows,
            |range, buf: &mut Vec<u8>| {
                for r in range {
                    writeln!(buf, "{r}")?;
                }
                Ok(())
            },
            |e| e,
        )
        .expect("written");
        out
    }

    #[test]
    fn rows_arrive_once_each_in_order_whatever_the_count() {
        for rows in [0, 1, BLOCK_ROWS, PARALLEL_ROWS - 1, PARALLEL_ROWS, 123_457] {
            let expected: String = (0..rows).map(|r| format!("{r}\n")).collect();
            assert_eq!(String::from_utf8(numbers(rows)).expect("text"), expected);
        }
    }

    #[test]
    fn a_formatting_error_is_returned_from_either_thread() {
        for bad_block in [3, 4] {
            let failed = write_rows(
                &mut Vec::new(),
                PARALLEL_ROWS * 2,
                |range, _buf: &mut Vec<u8>| {
                    if range.start == bad_block * BLOCK_ROWS {
                        Err(format!("block {bad_block}"))
                    } else {
                        Ok(())
                    }
                },
                |e| e.to_string(),
            );
            assert_eq!(failed, Err(format!("block {bad_block}")));
        }
    }

    #[test]
    fn a_failing_write_stops_the_formatting() {
        // /dev/full refuses every write with "no space left on device".
        let Ok(mut full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let failed = write_rows(
            &mut full,
            PARALLEL_ROWS * 4,
            |range, buf: &mut Vec<u8>| {
                buf.resize(range.len(), b'x');
                Ok(())
            },
            |e| e,
        )
        .expect_err("no space");
        assert_eq!(failed.raw_os_error(), Some(28), "{failed}");
    }
}
