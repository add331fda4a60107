//! The permissions of what orgledger writes for people to read: report and export
//! files hold e-mail addresses and names, so they are the owner's alone
//! (0600, folders 0700) unless a team that shares a folder asks for more
//! (`--file-mode 0640`, `file_mode = "0640"` in the config file).
//!
//! Modes are applied with `chmod` after creation, not left to the umask: a mode
//! the user asked for is the mode they get, and a permissive umask never makes a
//! report world-readable.

use std::fs::Permissions;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the files orgledger writes (the mirror aside, which is always 0600);
/// folders it creates get the same bits plus search where reading is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMode(u32);

/// Why a mode was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileModeError {
    /// Not three or four octal digits.
    #[error("{0:?} is not an octal file mode: give one such as 0600 or 0640")]
    NotOctal(String),
    /// Execute, setuid, setgid or sticky bits.
    #[error(
        "{0:?} marks the files as programs: give a mode without execute or special bits, such as 0640"
    )]
    Executable(String),
    /// The owner could not read or replace the files.
    #[error("{0:?} does not let the owner read and write the files: give a mode of at least 0600")]
    OwnerLocked(String),
}

impl Default for FileMode {
    fn default() -> Self {
        FileMode::PRIVATE
    }
}

impl std::fmt::Display for FileMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04o}", self.0)
    }
}

impl std::str::FromStr for FileMode {
    type Err = FileModeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.strip_prefix("0o").unwrap_or(text);
        let octal =
            (3..=4).contains(&digits.len()) && digits.bytes().all(|b| (b'0'..=b'7').contains(&b));
        let mode = u32::from_str_radix(digits, 8)
            .ok()
            .filter(|_| octal)
            .ok_or_else(|| FileModeError::NotOctal(text.to_string()))?;
        if mode & !0o666 != 0 {
            return Err(FileModeError::Executable(text.to_string()));
        }
        if mode & 0o600 != 0o600 {
            return Err(FileModeError::OwnerLocked(text.to_string()));
        }
        Ok(FileMode(mode))
    }
}

impl<'de> serde::Deserialize<'de> for FileMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FileMode {
    /// Owner only: the default.
    pub const PRIVATE: FileMode = FileMode(0o600);

    /// The bits of a file.
    pub fn file_bits(self) -> u32 {
        self.0
    }

    /// The bits of a folder: the file's, plus search wherever reading is allowed
    /// (0600 → 0700, 0640 → 0750).
    pub fn dir_bits(self) -> u32 {
        self.0 | ((self.0 & 0o444) >> 2)
    }

    /// Options that create a file with this mode (before the umask; see [`Self::apply`]).
    pub fn open_options(self) -> std::fs::OpenOptions {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true).mode(self.0);
        options
    }

    /// Gives an open file exactly this mode, whatever the umask or an older file's mode.
    pub fn apply(self, file: &std::fs::File) -> std::io::Result<()> {
        file.set_permissions(Permissions::from_mode(self.0))
    }

    /// Creates `dir` and its missing parents with [`Self::dir_bits`]; folders that
    /// exist keep their mode. Fails as `std::fs::create_dir_all` does (a file in
    /// the way is "not a directory").
    pub fn create_dir_all(self, dir: &Path) -> std::io::Result<()> {
        if dir.as_os_str().is_empty() || dir.is_dir() {
            return Ok(());
        }
        match self.create_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match dir.parent() {
                Some(parent) => {
                    self.create_dir_all(parent)?;
                    self.create_dir(dir)
                }
                None => Err(e),
            },
            done => done,
        }
    }

    /// Creates one folder whose parent exists.
    fn create_dir(self, dir: &Path) -> std::io::Result<()> {
        match std::fs::DirBuilder::new().mode(self.dir_bits()).create(dir) {
            Ok(()) => std::fs::set_permissions(dir, Permissions::from_mode(self.dir_bits())),
            // Another writer made it in between.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        let meta = std::fs::metadata(path).expect("metadata");
        meta.permissions().mode() & 0o7777
    }

    #[test]
    fn modes_parse_in_octal_and_refuse_programs_and_locked_owners() {
        assert_eq!("0640".parse::<FileMode>().map(|m| m.file_bits()), Ok(0o640));
        assert_eq!("600".parse::<FileMode>().map(|m| m.dir_bits()), Ok(0o700));
        assert_eq!("0o644".parse::<FileMode>().map(|m| m.dir_bits()), Ok(0o755));
        let refused = |text: &str| text.parse::<FileMode>().err();
        assert!(matches!(refused("0680"), Some(FileModeError::NotOctal(_))));
        assert!(matches!(refused("rw"), Some(FileModeError::NotOctal(_))));
        assert!(matches!(
            refused("0750"),
            Some(FileModeError::Executable(_))
        ));
        assert!(matches!(
            refused("4600"),
            Some(FileModeError::Executable(_))
        ));
        assert!(matches!(
            refused("0440"),
            Some(FileModeError::OwnerLocked(_))
        ));
        assert_eq!(FileMode::default().to_string(), "0600");
    }

    #[test]
    fn created_folders_get_the_mode_and_existing_ones_keep_theirs() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), Permissions::from_mode(0o755)).expect("chmod");
        let deep = dir.path().join("a").join("b");
        let mode: FileMode = "0640".parse().expect("mode");
        mode.create_dir_all(&deep).expect("created");
        assert_eq!(mode_of(&deep), 0o750);
        assert_eq!(mode_of(&dir.path().join("a")), 0o750);
        assert_eq!(mode_of(dir.path()), 0o755);
        let file = dir.path().join("a").join("f");
        let f = FileMode::PRIVATE.open_options().open(&file).expect("open");
        FileMode::PRIVATE.apply(&f).expect("chmod");
        assert_eq!(mode_of(&file), 0o600);
        let blocked = FileMode::PRIVATE.create_dir_all(&file.join("g").join("h"));
        let kind = blocked.expect_err("a file is in the way").kind();
        assert_eq!(kind, std::io::ErrorKind::NotADirectory);
    }
}
