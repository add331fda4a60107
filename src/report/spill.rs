//! A report table kept on disk for the rest of the run: its batches go to an
//! uncompressed Parquet file as they come, and its readers take it back a slice at
//! a time ([`Spill::for_each_batch`], through [`crate::report::kept`]). The file is
//! anonymous (`O_TMPFILE` in `TMPDIR`, or created and unlinked at once where that
//! is missing): no name points at it from the moment it exists, so the system
//! frees it when the run ends, however it ends (a `kill -9` included), and no other
//! process can open it.

use crate::output::parquet::{Reader, batched, typed};
use crate::report::error::{ReportError, pl};
use polars::prelude::DataFrame;
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;
use polars_io::parquet::write::BatchedWriter;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::sync::{Mutex, PoisonError};

/// Rows read back at a time: the table's memory while it is read, whatever the
/// size of the world.
const SLICE_ROWS: usize = 32_768;

/// A report table on disk, written batch by batch, read back in slices.
pub struct Spill {
    report: String,
    /// None until the first batch (the file's schema is the first batch's). The
    /// reading handle shares its offset with the writer's: a read seeks it, under
    /// the lock.
    file: Option<Mutex<File>>,
    /// Boxed: polars' writer is 700 bytes, the spill is moved once finished.
    writer: Option<Box<BatchedWriter<File>>>,
    rows: usize,
    slice_rows: usize,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("report", &self.report)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Spill {
    /// An empty spill for `report`'s rows.
    pub fn new(report: &str) -> Spill {
        Spill {
            report: report.to_string(),
            file: None,
            writer: None,
            rows: 0,
            slice_rows: SLICE_ROWS,
        }
    }

    /// Read back `rows` at a time (tests: slices smaller than a test world).
    #[cfg(test)]
    pub(crate) fn with_slice_rows(mut self, rows: usize) -> Spill {
        self.slice_rows = rows.max(1);
        self
    }

    /// Its rows.
    pub fn height(&self) -> usize {
        self.rows
    }

    /// Appends a batch.
    pub(crate) fn add(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        let batch = typed(batch).map_err(pl(&self.report, "preparing a batch to keep on disk"))?;
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.open(&batch)?,
        };
        writer
            .write_batch(&batch)
            .map_err(pl(&self.report, "keeping a batch on disk"))?;
        self.rows += batch.height();
        Ok(())
    }

    fn open(&mut self, first: &DataFrame) -> Result<&mut BatchedWriter<File>, ReportError> {
        let io = |cause| ReportError::Io {
            path: std::env::temp_dir(),
            cause,
        };
        let file = tempfile::tempfile().map_err(io)?;
        let out = file.try_clone().map_err(io)?;
        let writer = batched(out, first.schema(), Reader::Run)
            .map_err(pl(&self.report, "keeping a batch on disk"))?;
        self.file = Some(Mutex::new(file));
        Ok(self.writer.insert(Box::new(writer)))
    }

    /// Writes the file's footer: the spill can be read from now on.
    pub(crate) fn finish(&mut self) -> Result<(), ReportError> {
        if let Some(writer) = self.writer.take() {
            writer
                .finish()
                .map_err(pl(&self.report, "keeping the table on disk"))?;
        }
        Ok(())
    }

    /// Hands every slice of the table to `each`, in table order: a table without
    /// rows is one empty slice with its columns, one without batches none.
    pub fn for_each_batch(
        &self,
        mut each: impl FnMut(&DataFrame) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        for offset in (0..self.rows.max(1)).step_by(self.slice_rows) {
            each(&self.slice(file, offset)?)?;
        }
        Ok(())
    }

    fn slice(&self, file: &Mutex<File>, offset: usize) -> Result<DataFrame, ReportError> {
        // A reader that panicked left nothing half done: each read seeks first.
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        // polars maps the file from the handle's offset, which the writer left at
        // its end.
        file.seek(SeekFrom::Start(0))
            .map_err(|cause| ReportError::Io {
                path: std::env::temp_dir(),
                cause,
            })?;
        ParquetReader::new(&mut *file)
            .with_slice(Some((offset, self.slice_rows)))
            .finish()
            .map_err(pl(&self.report, "reading the table kept on disk"))
    }

    /// Where the file's descriptor points (`/proc/self/fd`): an anonymous file
    /// reads as `… (deleted)`, or `/tmp/#N` for an `O_TMPFILE` one.
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn file_target(&self) -> Option<String> {
        use std::os::fd::AsRawFd;
        let file = self.file.as_ref()?.lock().ok()?;
        let link = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        Some(link.display().to_string())
    }
}
