//! Where `export` and `report` write: a local folder or an object-store URL.
//!
//! Anything that looks like a URL (`scheme://...`) is read as one, so a typo such as
//! `s4://bucket` is an error naming the scheme rather than a local folder called
//! `s4:`. Credentials never come from the URL (they would end up in shell history,
//! logs and error messages): a URL with a user or password is refused without
//! echoing them.

use std::fmt;
use std::path::PathBuf;

/// The object stores this build writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Amazon S3 and S3-compatible stores (`s3://bucket/prefix`).
    S3,
    /// Google Cloud Storage (`gs://bucket/prefix`).
    Gcs,
    /// Azure Blob Storage (`az://container/prefix`).
    Azure,
    /// A local folder through the same upload and commit path (`file:///abs/path`).
    File,
}

impl Scheme {
    /// The schemes accepted, as written in a URL.
    pub const NAMES: &'static str = "s3, gs, az, file";

    fn parse(name: &str) -> Option<Scheme> {
        match name.to_ascii_lowercase().as_str() {
            "s3" | "s3a" => Some(Scheme::S3),
            "gs" => Some(Scheme::Gcs),
            "az" | "azure" | "abfs" | "abfss" => Some(Scheme::Azure),
            "file" => Some(Scheme::File),
            _ => None,
        }
    }

    /// The scheme as written in a URL.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::S3 => "s3",
            Scheme::Gcs => "gs",
            Scheme::Azure => "az",
            Scheme::File => "file",
        }
    }
}

/// An object-store location: the store (scheme and bucket) and a key prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// The kind of store.
    pub scheme: Scheme,
    /// The bucket or container (empty for `file://`).
    pub bucket: String,
    /// Keys start with this, without leading or trailing `/` (the absolute folder
    /// for `file://`).
    pub prefix: String,
}

impl StoreUrl {
    /// The same location `sub` further down (`<prefix>/<sub>`).
    pub fn join(&self, sub: &str) -> StoreUrl {
        let sub = sub.trim_matches('/');
        let prefix = match (self.prefix.is_empty(), sub.is_empty()) {
            (true, _) => sub.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{sub}", self.prefix),
        };
        StoreUrl {
            prefix,
            ..self.clone()
        }
    }
}

/// Printed without credentials (it never holds any): the form a user wrote.
impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Scheme::File => write!(f, "file:///{}", self.prefix),
            _ => {
                write!(f, "{}://{}", self.scheme.name(), self.bucket)?;
                if !self.prefix.is_empty() {
                    write!(f, "/{}", self.prefix)?;
                }
                Ok(())
            }
        }
    }
}

/// Where the files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A local folder, written in place.
    Local(PathBuf),
    /// An object store: files are staged locally and uploaded, manifest last.
    Store(StoreUrl),
}

impl Destination {
    /// Reads `--out` or an `out` key of the config.
    pub fn parse(text: &str) -> Result<Destination, DestinationError> {
        let Some((scheme, rest)) = split_scheme(text) else {
            return Ok(Destination::Local(PathBuf::from(text)));
        };
        let kind = Scheme::parse(scheme).ok_or_else(|| DestinationError::Scheme {
            scheme: scheme.to_string(),
        })?;
        if kind == Scheme::File {
            // `file:///abs/path` (an empty host) or `file://localhost/abs/path`.
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') || path.trim_matches('/').is_empty() {
                return Err(DestinationError::Malformed {
                    shown: format!("file://{rest}"),
                    why: "write a file URL with an absolute folder, such as file:///srv/export",
                });
            }
            return Ok(Destination::Store(StoreUrl {
                scheme: kind,
                bucket: String::new(),
                prefix: path.trim_matches('/').to_string(),
            }));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.contains('@') {
            return Err(DestinationError::Credentials {
                scheme: scheme.to_string(),
            });
        }
        if authority.is_empty() {
            return Err(DestinationError::Malformed {
                shown: format!("{scheme}://{rest}"),
                why: "the bucket is missing; write it as SCHEME://BUCKET/PREFIX",
            });
        }
        if path.split('/').any(|part| part == "." || part == "..") {
            return Err(DestinationError::Malformed {
                shown: format!("{scheme}://{rest}"),
                why: "a prefix cannot hold `.` or `..` parts",
            });
        }
        let prefix = path
            .split('/')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        Ok(Destination::Store(StoreUrl {
            scheme: kind,
            bucket: authority.to_string(),
            prefix,
        }))
    }
}

/// Where the export or report of a destination is shown to the user.
impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Local(dir) => write!(f, "{}", dir.display()),
            Destination::Store(url) => write!(f, "{url}"),
        }
    }
}

/// `(scheme, rest)` of `scheme://rest`, where the scheme is letters, digits, `+`,
/// `-` or `.` after a letter (RFC 3986); None for anything else (a local path).
fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some((scheme, rest))
}

/// An `--out` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    /// A URL whose scheme this build does not write to.
    #[error(
        "unsupported destination scheme {scheme:?}:// (this build writes to {}, or a local folder)",
        Scheme::NAMES
    )]
    Scheme {
        /// The scheme as written.
        scheme: String,
    },
    /// A URL with a user or password in it.
    #[error(
        "the {scheme}:// destination holds credentials; remove them from the URL and set them in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for S3, see docs/export.md)"
    )]
    Credentials {
        /// The scheme as written.
        scheme: String,
    },
    /// A URL without a bucket or with a bad prefix.
    #[error("cannot use the destination {shown}: {why}")]
    Malformed {
        /// The URL.
        shown: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(text: &str) -> StoreUrl {
        match Destination::parse(text).expect("valid") {
            Destination::Store(url) => url,
            other => panic!("{text} parsed as {other:?}"),
        }
    }

    #[test]
    fn paths_stay_local_and_urls_name_their_store() {
        assert_eq!(
            Destination::parse("out/export").expect("path"),
            Destination::Local(PathBuf::from("out/export"))
        );
        assert_eq!(
            Destination::parse("/srv/a:b").expect("path"),
            Destination::Local(PathBuf::from("/srv/a:b"))
        );
        let url = store("s3://bucket/org/ledger/");
        assert_eq!((url.scheme, url.bucket.as_str()), (Scheme::S3, "bucket"));
        assert_eq!(url.prefix, "org/ledger");
        assert_eq!(url.to_string(), "s3://bucket/org/ledger");
        assert_eq!(url.join("2026-11-27").prefix, "org/ledger/2026-11-27");
        assert_eq!(store("gs://b").prefix, "");
        assert_eq!(store("az://container/p").scheme, Scheme::Azure);
        let file = store("file:///srv/export/");
        assert_eq!(file.prefix, "srv/export");
        assert_eq!(file.to_string(), "file:///srv/export");
    }

    #[test]
    fn unknown_schemes_and_credentials_in_urls_are_refused() {
        let err = Destination::parse("s4://bucket/x").expect_err("typo");
        assert!(err.to_string().contains("\"s4\"://"), "{err}");
        let err = Destination::parse("s3://AKIAX:hunter2secret@bucket/x").expect_err("creds");
        let text = err.to_string();
        assert!(
            !text.contains("hunter2secret") && !text.contains("AKIAX"),
            "{text}"
        );
        assert!(Destination::parse("s3:///x").is_err());
        assert!(Destination::parse("s3://b/../x").is_err());
        assert!(Destination::parse("file://relative/x").is_err());
    }
}
