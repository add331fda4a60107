//! Parquet files through polars' writer: zstd, statistics, one row group per chunk
//! (a table's chunk for `export`, a batch of rows for a report).
//! Every file is an [`AtomicFile`] (temporary name, hashed while written, renamed
//! into place), the same as the report files.

use crate::file_mode::FileMode;
use crate::output::AtomicFile;
use polars::prelude::{DataFrame, DataType, IntoColumn, PolarsResult, Schema};
use polars_io::parquet::write::{
    BatchedWriter, ParquetCompression, ParquetWriter, StatisticsOptions,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Whom a Parquet file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// People and their tools (`export`, `report --format parquet`): zstd, with
    /// statistics.
    Published,
    /// The run that wrote it, reading it back (a report table kept on disk):
    /// uncompressed, encoding speed over size.
    Run,
}

/// The writer of every Parquet file of orgledger, batch by batch, for rows of
/// `schema`.
pub fn batched<W: Write>(
    out: W,
    schema: &Schema,
    reader: Reader,
) -> PolarsResult<BatchedWriter<W>> {
    let writer = ParquetWriter::new(out);
    match reader {
        Reader::Published => writer
            .with_compression(ParquetCompression::Zstd(None))
            .with_statistics(StatisticsOptions::default()),
        Reader::Run => writer.with_compression(ParquetCompression::Uncompressed),
    }
    .batched(schema)
}

/// A batch as Parquet takes it: columns with no type at all (only nulls) as text.
pub fn typed(df: &DataFrame) -> PolarsResult<DataFrame> {
    let mut df = df.clone();
    let untyped: Vec<String> = df
        .columns()
        .iter()
        .filter(|c| c.dtype() == &DataType::Null)
        .map(|c| c.name().to_string())
        .collect();
    for name in untyped {
        let text = df.column(&name)?.cast(&DataType::String)?;
        df.replace(&name, text)?;
    }
    Ok(df)
}

/// The file a [`BatchedWriter`] writes into: shared with the part that owns it, so
/// the part can commit the file once polars has written the footer (a report's
/// part moves between the report threads, hence the mutex).
struct Sink(Arc<Mutex<AtomicFile>>);

impl Sink {
    fn file(&self) -> std::io::Result<std::sync::MutexGuard<'_, AtomicFile>> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("a Parquet writer panicked"))
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file()?.flush()
    }
}

/// One Parquet file being written, chunk by chunk.
pub struct Part {
    path: PathBuf,
    file: Arc<Mutex<AtomicFile>>,
    writer: BatchedWriter<Sink>,
    rows: usize,
}

/// A finished file: where, rows, hex SHA-256, bytes.
pub struct Finished {
    /// The file.
    pub path: PathBuf,
    /// Data rows.
    pub rows: usize,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Why a part failed: the file system or polars.
pub enum PartError {
    /// Creating, writing or renaming the file.
    Io(PathBuf, std::io::Error),
    /// Encoding a chunk.
    Polars(PathBuf, polars::prelude::PolarsError),
}

impl Part {
    /// Creates `path` (its folder too) for rows of `schema`, with `mode`.
    pub fn create(path: &Path, schema: &Schema, mode: FileMode) -> Result<Part, PartError> {
        let io = |e| PartError::Io(path.to_path_buf(), e);
        if let Some(dir) = path.parent() {
            mode.create_dir_all(dir).map_err(io)?;
        }
        let file = Arc::new(Mutex::new(AtomicFile::create(path, mode).map_err(io)?));
        let writer = batched(Sink(file.clone()), schema, Reader::Published)
            .map_err(|e| PartError::Polars(path.to_path_buf(), e))?;
        Ok(Part {
            path: path.to_path_buf(),
            file,
            writer,
            rows: 0,
        })
    }

    /// Appends a chunk as one row group.
    pub fn write(&mut self, df: &DataFrame) -> Result<(), PartError> {
        self.rows += df.height();
        self.writer
            .write_batch(df)
            .map_err(|e| PartError::Polars(self.path.clone(), e))
    }

    /// Writes the footer and renames the file into place.
    pub fn finish(self) -> Result<Finished, PartError> {
        let Part {
            path,
            file,
            writer,
            rows,
        } = self;
        writer
            .finish()
            .map_err(|e| PartError::Polars(path.clone(), e))?;
        drop(writer);
        let held = || {
            PartError::Io(
                path.clone(),
                std::io::Error::other("the Parquet writer still holds the file"),
            )
        };
        let file = Arc::try_unwrap(file)
            .map_err(|_| held())?
            .into_inner()
            .map_err(|_| held())?;
        let (sha256, bytes) = file.commit().map_err(|e| PartError::Io(path.clone(), e))?;
        Ok(Finished {
            path,
            rows,
            sha256,
            bytes,
        })
    }
}

/// A typed empty frame of `schema` (the one row group of a table without rows).
pub fn empty(schema: &Schema) -> DataFrame {
    let columns = schema
        .iter()
        .map(|(name, dtype)| polars::prelude::Series::new_empty(name.clone(), dtype).into_column())
        .collect();
    DataFrame::new(0, columns).unwrap_or_default()
}
