//! What `--db` points at, checked before anything touches it.
//!
//! orgledger writes into, and changes the mode of, only a file it creates or one
//! that already is an orgledger mirror. Anything else (a directory, someone's text
//! file or database) is refused and left exactly as it was: tightening the mode of
//! `/tmp` or of a shared file would break the machine for other users.

use crate::mirror::MirrorError;
use rusqlite::{Connection, OpenFlags};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What was found at the mirror path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing: the mirror is created there.
    Nothing,
    /// An empty file, or an SQLite database without any table (what a first run
    /// interrupted before its schema leaves behind): nothing to protect, the
    /// mirror is written into it. `private` as for a mirror.
    Blank {
        /// Whether group and others have no access.
        private: bool,
    },
    /// An orgledger mirror; `private` is false when others can read it.
    Mirror {
        /// Whether group and others have no access.
        private: bool,
    },
}

/// Looks at `path` without changing anything, and refuses what is not a mirror.
pub fn inspect(path: &Path) -> Result<Found, MirrorError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(MirrorError::Io(path.to_path_buf(), e)),
    };
    let refuse = |what: &str| MirrorError::NotAMirror {
        path: path.to_path_buf(),
        what: what.to_string(),
    };
    if meta.is_dir() {
        return Err(refuse("a directory"));
    }
    if !meta.is_file() {
        return Err(refuse("not a regular file"));
    }
    let private = meta.permissions().mode() & 0o077 == 0;
    if meta.len() == 0 {
        return Ok(Found::Blank { private });
    }
    let mut header = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|e| MirrorError::Io(path.to_path_buf(), e))?;
    let read = file
        .read(&mut header)
        .map_err(|e| MirrorError::Io(path.to_path_buf(), e))?;
    if read < header.len() || &header != SQLITE_HEADER {
        return Err(refuse("not an SQLite database"));
    }
    match tables(path)? {
        Tables::Newer(found) => Err(MirrorError::Newer {
            path: path.to_path_buf(),
            found,
            build: crate::mirror::schema::CURRENT_VERSION,
        }),
        Tables::None => Ok(Found::Blank { private }),
        Tables::Mirror => Ok(Found::Mirror { private }),
        Tables::Foreign => Err(refuse("an SQLite database of another program")),
    }
}

enum Tables {
    None,
    Mirror,
    Foreign,
    /// A mirror of a schema version this build does not know.
    Newer(i64),
}

/// Whether the database holds orgledger's schema table, and of which version, read
/// without writing.
fn tables(path: &Path) -> Result<Tables, MirrorError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| MirrorError::open(path, e))?;
    let (all, schema): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), COALESCE(SUM(type = 'table' AND name = 'schema_migrations'), 0) \
             FROM sqlite_master",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(|e| MirrorError::open(path, e))?;
    Ok(match (all, schema) {
        (0, _) => Tables::None,
        (_, 0) => Tables::Foreign,
        _ => match crate::mirror::schema::version_ro(&conn)
            .map_err(|e| MirrorError::open(path, e))?
        {
            found if found > crate::mirror::schema::CURRENT_VERSION => Tables::Newer(found),
            _ => Tables::Mirror,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn tells_mirrors_from_everything_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = |name: &str| dir.path().join(name);
        assert_eq!(inspect(&path("new.db")).expect("nothing"), Found::Nothing);
        assert!(inspect(dir.path()).is_err());

        std::fs::write(path("notes.txt"), "hello, this is text").expect("write");
        let err = inspect(&path("notes.txt")).expect_err("text").to_string();
        assert!(err.contains("not an SQLite database"), "{err}");

        std::fs::write(path("empty"), "").expect("write");
        with_mode(&path("empty"), 0o644);
        assert_eq!(
            inspect(&path("empty")).expect("blank"),
            Found::Blank { private: false }
        );

        let other = Connection::open(path("other.db")).expect("open");
        other
            .execute_batch("CREATE TABLE notes (body TEXT)")
            .expect("create");
        drop(other);
        let err = inspect(&path("other.db")).expect_err("foreign").to_string();
        assert!(err.contains("another program"), "{err}");

        drop(crate::mirror::open_rw(&path("m.db")).expect("mirror"));
        assert_eq!(
            inspect(&path("m.db")).expect("mirror"),
            Found::Mirror { private: true }
        );
    }
}
