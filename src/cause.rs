//! Causes of failures in words a user can act on, each said once.
//!
//! The rule every error type of the crate follows: a message carries its cause's
//! text inline, and the cause is kept in a field that is *not* a `source()` (named
//! `cause`, never `#[from]`/`#[source]`), except in `#[error(transparent)]` wrappers
//! that print nothing of their own. So `{:#}` in `main`, a log line and a message
//! stored in `sync_errors` all say the same thing, and say the cause once. Foreign
//! errors whose own chain repeats itself (SQLite's message and then its code's
//! text; reqwest's layers) are rendered here.

use std::error::Error;

/// SQLite's reason, with what to do when the disk is the problem. rusqlite prints
/// SQLite's message and then, through `source`, the same message again with its
/// code: this keeps the message and the code once.
pub fn sqlite(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode::{DiskFull, SystemIoFailure};
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == DiskFull => format!(
            "the disk is full: free some space and run the command again (SQLite code {})",
            f.extended_code
        ),
        // A failed write() of a full disk or a file size limit (EFBIG) reaches SQLite
        // as an I/O error, not as SQLITE_FULL.
        rusqlite::Error::SqliteFailure(f, _) if f.code == SystemIoFailure => format!(
            "the file could not be read or written: is the disk full or a file size limit reached? (SQLite I/O error, code {})",
            f.extended_code
        ),
        rusqlite::Error::SqliteFailure(f, Some(message)) => {
            format!("{message} (SQLite code {})", f.extended_code)
        }
        other => other.to_string(),
    }
}

/// The OS's reason, followed by what to do for the failures a user can fix.
pub fn io(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let hint = match e.kind() {
        ErrorKind::NotADirectory => {
            "; part of the path is a file, not a folder: give a path inside a folder"
        }
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            "; check the folder's permissions or give a path you can write to"
        }
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded | ErrorKind::FileTooLarge => {
            "; free some space and run the command again"
        }
        _ => "",
    };
    format!("{e}{hint}")
}

/// An error and its sources joined by ": ", leaving out a source whose text the
/// line already holds (layered HTTP errors often repeat their inner error).
pub fn chain(e: &dyn Error) -> String {
    let mut line = e.to_string();
    let mut next = e.source();
    while let Some(inner) = next {
        let text = inner.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        next = inner.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(extended_code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(extended_code),
            Some("disk I/O error".into()),
        )
    }

    #[test]
    fn disk_errors_say_what_to_do_once() {
        let full = sqlite(&failure(rusqlite::ffi::SQLITE_FULL));
        assert!(full.contains("free some space"), "{full}");
        let write = sqlite(&failure(rusqlite::ffi::SQLITE_IOERR_WRITE));
        assert!(write.contains("disk full or a file size limit"), "{write}");
        assert!(write.contains("code 778"), "{write}");
        assert_eq!(write.matches("I/O error").count(), 1, "{write}");
        let enospc = io(&std::io::Error::from_raw_os_error(28));
        assert_eq!(enospc.matches("No space left").count(), 1, "{enospc}");
        assert!(
            enospc.ends_with("free some space and run the command again"),
            "{enospc}"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn a_chain_leaves_out_what_the_line_already_says() {
        let e = Repeats(std::io::Error::other("connection refused"));
        assert_eq!(chain(&e), "outer: connection refused");
        let plain = std::io::Error::other("reset");
        assert_eq!(chain(&plain), "reset");
    }
}
