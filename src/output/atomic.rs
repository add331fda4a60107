//! Files that appear whole or not at all.
//!
//! A file is written under a temporary name in the same folder (`tempfile`'s
//! `NamedTempFile`, removed if dropped) and renamed into place on commit, so a crash
//! of the process never leaves a half-written file under its real name. Files are
//! not fsynced: reports and exports are derived data that can be rebuilt from the
//! mirror at any time, and syncing the ~100 MB of a large report run costs more than
//! the whole computation (a power loss may lose the latest run; the manifests'
//! checksums then tell). The SHA-256 of each file is computed while it is written (no
//! second read).

use crate::file_mode::FileMode;
use sha2::{Digest, Sha256};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// A writer that hashes and counts what passes through it.
pub(crate) struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps a writer.
    pub(crate) fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// The inner writer, the hex SHA-256 and the byte count.
    pub(crate) fn finish(self) -> (W, String, u64) {
        (self.inner, hex::encode(self.hasher.finalize()), self.bytes)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A file being written under a temporary name next to its real one, renamed into
/// place by [`AtomicFile::commit`]. Dropped without a commit, the temporary file is
/// removed.
pub(crate) struct AtomicFile {
    path: PathBuf,
    out: Option<BufWriter<HashingWriter<NamedTempFile>>>,
}

impl AtomicFile {
    /// Creates the temporary file for `path`, with `mode` from the start (the
    /// rename keeps it).
    pub(crate) fn create(path: &Path, mode: FileMode) -> std::io::Result<Self> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)?;
        mode.apply(file.as_file())?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            out: Some(BufWriter::with_capacity(
                256 * 1024,
                HashingWriter::new(file),
            )),
        })
    }

    /// Flushes the content and renames the file into place; returns the hex SHA-256
    /// and the size.
    pub(crate) fn commit(mut self) -> std::io::Result<(String, u64)> {
        let out = self
            .out
            .take()
            .ok_or_else(|| std::io::Error::other("the file was already committed"))?;
        let (file, sha, bytes) = out.into_inner().map_err(|e| e.into_error())?.finish();
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok((sha, bytes))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.out {
            Some(out) => out.write(buf),
            None => Err(std::io::Error::other("the file was already committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

/// The hex SHA-256 and size of a file another writer wrote (a zip writer that
/// seeks cannot be hashed while it writes).
pub(crate) fn hash_file(path: &Path) -> std::io::Result<(String, u64)> {
    let mut hashing = HashingWriter::new(std::io::sink());
    std::io::copy(&mut std::fs::File::open(path)?, &mut hashing)?;
    let (_, sha256, bytes) = hashing.finish();
    Ok((sha256, bytes))
}

/// Writes finished bytes through a temporary name; returns the hex SHA-256 and size.
pub(crate) fn write_bytes(
    path: &Path,
    bytes: &[u8],
    mode: FileMode,
) -> std::io::Result<(String, u64)> {
    let mut file = AtomicFile::create(path, mode)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Writes `value` as indented JSON and a newline through a temporary name (the
/// manifests of reports and of `export`); returns the hex SHA-256 and size.
pub(crate) fn write_json(
    path: &Path,
    value: &serde_json::Value,
    mode: FileMode,
) -> std::io::Result<(String, u64)> {
    let mut file = AtomicFile::create(path, mode)?;
    serde_json::to_writer_pretty(&mut file, value)?;
    file.write_all(b"\n")?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_file_has_its_content_mode_and_checksum_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.csv");
        let (sha, bytes) = write_bytes(&path, b"a,b\n", FileMode::PRIVATE).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"a,b\n");
        assert_eq!(bytes, 4);
        assert_eq!(sha, hex::encode(Sha256::digest(b"a,b\n")));
        let names: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").collect();
        assert_eq!(names.len(), 1, "only the file itself");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_file_dropped_before_its_commit_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.json");
        let mut file = AtomicFile::create(&path, FileMode::PRIVATE).expect("create");
        file.write_all(b"[1,").expect("write");
        drop(file);
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 0);
    }
}
