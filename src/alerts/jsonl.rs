//! The JSON Lines sink: one event per line, appended to a file (created mode 600:
//! events name people) or written to stdout, for piping into other tools.

use crate::alerts::AlertError;
use crate::alerts::events::Event;
use std::io::Write;
use std::path::PathBuf;

/// Where `--jsonl` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jsonl {
    /// `-`.
    Stdout,
    /// A file, appended to.
    File(PathBuf),
}

impl Jsonl {
    /// `-` is stdout, anything else a file.
    pub fn from_arg(arg: &std::path::Path) -> Jsonl {
        if arg.as_os_str() == "-" {
            Jsonl::Stdout
        } else {
            Jsonl::File(arg.to_path_buf())
        }
    }
}

/// The events as JSON lines.
pub fn lines(events: &[Event]) -> String {
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_json());
        text.push('\n');
    }
    text
}

/// Appends the events, in one write.
pub(crate) fn append(target: &Jsonl, events: &[Event]) -> Result<(), AlertError> {
    if events.is_empty() {
        return Ok(());
    }
    let text = lines(events);
    match target {
        Jsonl::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| AlertError::Jsonl(PathBuf::from("-"), e))
        }
        Jsonl::File(path) => {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|e| AlertError::Jsonl(path.clone(), e))
        }
    }
}
