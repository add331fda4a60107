//! Publishing a set of files (an export, a day's reports) to an object store, so that
//! a reader never sees half of it.
//!
//! The set is written locally first, by the same writers as a local folder (a
//! staging folder, streaming with bounded memory), then uploaded: every data file
//! under its final name (an object appears whole when its upload completes; large
//! files go up in parts and appear only when the last part is in), then the manifest,
//! which lists every file with its rows and SHA-256 and is the commit point. Only
//! after the manifest is in place are objects of an earlier set that the new one no
//! longer holds deleted. A set that replaces an object of the same name (a re-run of
//! the same day, a full export over the last one) first withdraws the previous
//! manifest: it would otherwise list a checksum the replaced object no longer has. A
//! reader that starts from the manifest so finds either a whole set or none; a
//! failure leaves no manifest (the next run writes the set again) or, when nothing
//! was to be replaced, the previous one with every file it lists.
//!
//! Credentials come from the environment through each store's `from_env` builder,
//! and never from the URL; error texts are scrubbed of every secret the environment
//! holds before they are shown.

use crate::file_mode::FileMode;
use crate::output::destination::{Scheme, StoreUrl};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files up to this size are uploaded with one PUT; larger ones in parts of this
/// size (S3 needs at least 5 MiB a part).
const PART: usize = 8 * 1024 * 1024;
/// Parts of one file in flight at once: memory stays at a few parts per file.
const PARTS_IN_FLIGHT: usize = 4;
/// Files uploaded at once (org pages are many small files).
const FILES_IN_FLIGHT: usize = 8;

/// Environment variables whose values must never be shown.
const SECRET_VARS: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_TOKEN",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
];

/// Why a set could not be published. Causes are scrubbed text (object_store's own
/// errors are layered and may quote a response body).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be set up (a missing region, account or bucket setting).
    #[error("cannot use the object store {url}: {cause}")]
    Open {
        /// The destination.
        url: String,
        /// Why.
        cause: String,
    },
    /// Uploading a file failed.
    #[error("cannot upload {url}: {cause}{}", hint(.cause))]
    Upload {
        /// The object.
        url: String,
        /// Why.
        cause: String,
    },
    /// Reading the previous manifest or listing the prefix failed.
    #[error("cannot read {url}: {cause}{}", hint(.cause))]
    Read {
        /// The object or prefix.
        url: String,
        /// Why.
        cause: String,
    },
    /// Deleting an object of the earlier set failed (the new set is complete).
    #[error("the new set is in place, but the stale object {url} cannot be deleted: {cause}")]
    Delete {
        /// The object.
        url: String,
        /// Why.
        cause: String,
    },
    /// A staged file could not be read back.
    #[error("cannot read the staged file {}: {}", .path.display(), crate::cause::io(.cause))]
    Staged {
        /// The file.
        path: PathBuf,
        /// The reason.
        cause: std::io::Error,
    },
}

/// What to do about an access error: the usual cause is the credentials.
fn hint(cause: &str) -> &'static str {
    let denied = [
        "403",
        "401",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
    ];
    if denied.iter().any(|d| cause.contains(d)) {
        "; check the store's credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for S3)"
    } else {
        ""
    }
}

/// `text` with the value of every secret environment variable replaced.
fn scrub(text: String) -> String {
    SECRET_VARS
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .filter(|value| value.len() >= 4)
        .fold(text, |text, secret| text.replace(&secret, "[redacted]"))
}

fn said(e: &dyn std::error::Error) -> String {
    scrub(condense(&crate::cause::chain(e)))
}

/// One line: an XML error body a store sent back becomes its code and message (the
/// rest of it, request ids and the like, helps no one reading a log line).
fn condense(text: &str) -> String {
    let between = |open: &str, close: &str| {
        let start = text.find(open)? + open.len();
        let len = text[start..].find(close)?;
        Some(text[start..start + len].to_string())
    };
    let body = ["<?xml", "<Error>"]
        .iter()
        .filter_map(|m| text.find(m))
        .min();
    let text = match (body, between("<Code>", "</Code>")) {
        (Some(at), Some(code)) => {
            let message = between("<Message>", "</Message>").unwrap_or_default();
            format!("{}{code}: {message}", &text[..at])
        }
        _ => text.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An open store and the prefix a set goes under.
pub struct Store {
    url: StoreUrl,
    inner: Arc<dyn ObjectStore>,
    prefix: Key,
    runtime: tokio::runtime::Runtime,
    /// For `file://`: the folder and the mode its files get (a local store writes
    /// with the process umask, and the files hold personal data).
    local: Option<(PathBuf, FileMode)>,
}

/// One file to upload: where it goes, where it is staged, how it is shown, and for
/// `file://` the path and mode it ends up with.
struct Object {
    key: Key,
    staged: PathBuf,
    shown: String,
    local: Option<(PathBuf, FileMode)>,
}

/// What [`Store::publish`] did.
#[derive(Debug, Clone)]
pub struct Published {
    /// Objects uploaded, the manifest included.
    pub uploaded: usize,
    /// Bytes uploaded.
    pub bytes: u64,
    /// Objects of the earlier set deleted after the manifest.
    pub deleted: usize,
}

/// The line the commands print after an upload.
impl std::fmt::Display for Published {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "uploaded {} objects ({} bytes), manifest last; {} stale objects deleted",
            self.uploaded, self.bytes, self.deleted
        )
    }
}

/// How long one request is retried. object_store's default keeps retrying a
/// store that does not answer for three minutes a request; a run must not hang on a
/// dead endpoint, and a store that is down for 30 s is down for this run.
fn retries() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 5,
        retry_timeout: std::time::Duration::from_secs(30),
        ..object_store::RetryConfig::default()
    }
}

impl Store {
    /// Opens the store of `url` with credentials and endpoint from the environment;
    /// `mode` is that of the files of a `file://` store. Blocking: it runs its own
    /// small runtime, so call it off async threads (the commands run the export and
    /// the reports on blocking threads).
    pub fn open(url: &StoreUrl, mode: FileMode) -> Result<Store, StoreError> {
        let open = |cause: String| StoreError::Open {
            url: url.to_string(),
            cause: scrub(cause),
        };
        // reqwest is built without a default crypto provider; installing twice is
        // harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let bucket_url = format!("{}://{}", url.scheme.name(), url.bucket);
        let inner: Arc<dyn ObjectStore> = match url.scheme {
            Scheme::S3 => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(&bucket_url)
                    .with_retry(retries())
                    // Path-style requests (`endpoint/bucket/key`): what S3-compatible
                    // stores (MinIO, Ceph, R2 and the like) answer.
                    .with_virtual_hosted_style_request(false)
                    .build()
                    .map_err(|e| open(said(&e)))?,
            ),
            Scheme::Gcs => Arc::new(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(&bucket_url)
                    .with_retry(retries())
                    .build()
                    .map_err(|e| open(said(&e)))?,
            ),
            Scheme::Azure => Arc::new(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(&bucket_url)
                    .with_retry(retries())
                    .build()
                    .map_err(|e| open(said(&e)))?,
            ),
            Scheme::File => {
                let root = PathBuf::from(format!("/{}", url.prefix));
                mode.create_dir_all(&root)
                    .map_err(|e| open(crate::cause::io(&e)))?;
                Arc::new(
                    object_store::local::LocalFileSystem::new_with_prefix(&root)
                        .map_err(|e| open(said(&e)))?,
                )
            }
        };
        let prefix = match url.scheme {
            Scheme::File => Key::default(),
            _ => Key::parse(&url.prefix).map_err(|e| open(said(&e)))?,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| open(format!("cannot start the upload runtime: {e}")))?;
        let local =
            (url.scheme == Scheme::File).then(|| (PathBuf::from(format!("/{}", url.prefix)), mode));
        Ok(Store {
            url: url.clone(),
            inner,
            prefix,
            runtime,
            local,
        })
    }

    /// Where the store's keys start.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    fn key(&self, relative: &str) -> Key {
        relative
            .split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |key, part| key.join(part))
    }

    fn shown(&self, relative: &str) -> String {
        self.url.join(relative).to_string()
    }

    fn object(&self, relative: &str, staged: &Path) -> Object {
        Object {
            key: self.key(relative),
            staged: staged.to_path_buf(),
            shown: self.shown(relative),
            local: self
                .local
                .as_ref()
                .map(|(root, mode)| (root.join(relative), *mode)),
        }
    }

    /// The object `relative` under the prefix; None when there is none.
    pub fn read(&self, relative: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.key(relative);
        let read = |e: &dyn std::error::Error| StoreError::Read {
            url: self.shown(relative),
            cause: said(e),
        };
        self.runtime.block_on(async {
            match self.inner.get(&key).await {
                Ok(got) => got
                    .bytes()
                    .await
                    .map(|b| Some(b.to_vec()))
                    .map_err(|e| read(&e)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(read(&e)),
            }
        })
    }

    /// Uploads every file under `staging` except `manifest`, then `manifest` (the
    /// commit point), then deletes the objects under the `sweep` sub-prefixes
    /// (relative to the store's prefix; `""` is all of it) that the new set does not
    /// hold. `listed` are files of the set already in the store (an append-only
    /// set's earlier files): kept, not uploaded.
    pub fn publish(
        &self,
        staging: &Path,
        manifest: &str,
        sweep: &[String],
        listed: &[String],
    ) -> Result<Published, StoreError> {
        let mut files = Vec::new();
        staged_files(staging, staging, &mut files)?;
        files.retain(|(relative, _)| relative != manifest);
        files.sort();
        self.runtime.block_on(async {
            let before = self.listed(sweep).await?;
            self.withdraw_if_replaced(manifest, &files, &before).await?;
            let mut bytes = 0;
            let mut pending = tokio::task::JoinSet::new();
            let mut queue = files.iter().peekable();
            // Small files go up several at a time, a large one alone: memory stays
            // near FILES_IN_FLIGHT small files or PARTS_IN_FLIGHT parts.
            let mut large_running = false;
            loop {
                while let Some((relative, path)) = queue.peek() {
                    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                    let large = size > PART as u64;
                    let room = if large {
                        pending.is_empty()
                    } else {
                        !large_running && pending.len() < FILES_IN_FLIGHT
                    };
                    if !room {
                        break;
                    }
                    let (store, object) = (self.inner.clone(), self.object(relative, path));
                    pending.spawn(async move { upload(store, object).await });
                    large_running = large;
                    queue.next();
                }
                let Some(done) = pending.join_next().await else {
                    break;
                };
                if pending.is_empty() {
                    large_running = false;
                }
                match done {
                    Ok(Ok(n)) => bytes += n,
                    Ok(Err(e)) => {
                        // Dropping the set aborts the uploads still running; the
                        // manifest is not touched.
                        pending.abort_all();
                        return Err(e);
                    }
                    Err(e) => {
                        pending.abort_all();
                        return Err(StoreError::Upload {
                            url: self.url.to_string(),
                            cause: e.to_string(),
                        });
                    }
                }
            }
            bytes += upload(
                self.inner.clone(),
                self.object(manifest, &staging.join(manifest)),
            )
            .await?;
            let mut keep: BTreeSet<Key> = files.iter().map(|(r, _)| self.key(r)).collect();
            keep.insert(self.key(manifest));
            keep.extend(listed.iter().map(|r| self.key(r)));
            let deleted = self.sweep(&before, &keep).await?;
            Ok(Published {
                uploaded: files.len() + 1,
                bytes,
                deleted,
            })
        })
    }

    /// The objects under the `sweep` sub-prefixes before the set goes up.
    async fn listed(&self, sweep: &[String]) -> Result<BTreeSet<Key>, StoreError> {
        use futures_util::TryStreamExt;
        let mut found = BTreeSet::new();
        for sub in sweep {
            let prefix = self.key(sub);
            let metas: Vec<_> =
                self.inner
                    .list(Some(&prefix))
                    .try_collect()
                    .await
                    .map_err(|e| StoreError::Read {
                        url: self.shown(sub),
                        cause: said(&e),
                    })?;
            found.extend(metas.into_iter().map(|m| m.location));
        }
        Ok(found)
    }

    /// Deletes the previous manifest when a file of the new set replaces an object
    /// it may list (see the module's doc).
    async fn withdraw_if_replaced(
        &self,
        manifest: &str,
        files: &[(String, PathBuf)],
        before: &BTreeSet<Key>,
    ) -> Result<(), StoreError> {
        let replaces = files.iter().any(|(r, _)| before.contains(&self.key(r)));
        if !replaces {
            return Ok(());
        }
        match self.inner.delete(&self.key(manifest)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(StoreError::Delete {
                url: self.shown(manifest),
                cause: said(&e),
            }),
        }
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.inner
            .delete(key)
            .await
            .map_err(|e| StoreError::Delete {
                url: self.display_key(key),
                cause: said(&e),
            })
    }

    /// Deletes the objects of `before` that are not in `keep`.
    async fn sweep(
        &self,
        before: &BTreeSet<Key>,
        keep: &BTreeSet<Key>,
    ) -> Result<usize, StoreError> {
        let mut deleted = 0;
        for key in before.difference(keep) {
            self.delete(key).await?;
            deleted += 1;
        }
        Ok(deleted)
    }

    fn display_key(&self, key: &Key) -> String {
        let relative = key
            .as_ref()
            .strip_prefix(self.prefix.as_ref())
            .unwrap_or(key.as_ref());
        self.shown(relative)
    }
}

/// Uploads one file: one PUT when small, in parts otherwise (the object appears when
/// the last part is in; a failed upload is aborted, leaving no object). Returns the
/// bytes sent.
async fn upload(store: Arc<dyn ObjectStore>, object: Object) -> Result<u64, StoreError> {
    use tokio::io::AsyncReadExt;
    let Object {
        key,
        staged: path,
        shown,
        local,
    } = object;
    let staged = |cause| StoreError::Staged {
        path: path.clone(),
        cause,
    };
    let failed = |e: &dyn std::error::Error| StoreError::Upload {
        url: shown.clone(),
        cause: said(e),
    };
    let size = tokio::fs::metadata(&path).await.map_err(staged)?.len();
    let mut file = tokio::fs::File::open(&path).await.map_err(staged)?;
    if size <= PART as u64 {
        let mut body = Vec::with_capacity(size as usize);
        file.read_to_end(&mut body).await.map_err(staged)?;
        store
            .put(&key, PutPayload::from(body))
            .await
            .map_err(|e| failed(&e))?;
        restrict(local.as_ref(), &shown)?;
        return Ok(size);
    }
    let upload = store.put_multipart(&key).await.map_err(|e| failed(&e))?;
    let mut parts = WriteMultipart::new_with_chunk_size(upload, PART);
    let mut buf = vec![0u8; PART];
    loop {
        let n = match read_full(&mut file, &mut buf).await {
            Ok(n) => n,
            Err(e) => {
                let _ = parts.abort().await;
                return Err(staged(e));
            }
        };
        if n == 0 {
            break;
        }
        if let Err(e) = parts.wait_for_capacity(PARTS_IN_FLIGHT).await {
            let _ = parts.abort().await;
            return Err(failed(&e));
        }
        parts.write(&buf[..n]);
    }
    parts.finish().await.map_err(|e| failed(&e))?;
    restrict(local.as_ref(), &shown)?;
    Ok(size)
}

/// Gives a file of a `file://` store its mode.
fn restrict(local: Option<&(PathBuf, FileMode)>, shown: &str) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let Some((path, mode)) = local else {
        return Ok(());
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode.file_bits())).map_err(|e| {
        StoreError::Upload {
            url: shown.to_string(),
            cause: crate::cause::io(&e),
        }
    })
}

/// Fills `buf` from `file` as far as it goes; the bytes read (0 at the end).
async fn read_full(file: &mut tokio::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use tokio::io::AsyncReadExt;
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

/// Every file under `dir`, as (path relative to `root` with `/`, path).
fn staged_files(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), StoreError> {
    let io = |cause| StoreError::Staged {
        path: dir.to_path_buf(),
        cause,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            staged_files(root, &path, out)?;
        } else {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((relative, path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged(dir: &Path, files: &[(&str, &str)]) {
        for (name, body) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, body).expect("write");
        }
    }

    fn file_store(dir: &Path) -> Store {
        let url = StoreUrl {
            scheme: Scheme::File,
            bucket: String::new(),
            prefix: dir.to_string_lossy().trim_matches('/').to_string(),
        };
        Store::open(&url, FileMode::PRIVATE).expect("open")
    }

    #[test]
    fn a_second_set_replaces_the_first_and_other_prefixes_stay() {
        let target = tempfile::tempdir().expect("tempdir");
        let store = file_store(target.path());
        let one = tempfile::tempdir().expect("tempdir");
        staged(
            one.path(),
            &[
                ("t/a.parquet", "1"),
                ("t/b.parquet", "2"),
                ("m.json", "one"),
            ],
        );
        staged(target.path(), &[("history/x.parquet", "kept")]);
        let first = store
            .publish(one.path(), "m.json", &["t".to_string()], &[])
            .expect("first");
        assert_eq!((first.uploaded, first.deleted), (3, 0));
        let two = tempfile::tempdir().expect("tempdir");
        staged(two.path(), &[("t/a.parquet", "3"), ("m.json", "two")]);
        let second = store
            .publish(two.path(), "m.json", &["t".to_string()], &[])
            .expect("second");
        assert_eq!((second.uploaded, second.deleted), (2, 1));
        let read = |p: &str| std::fs::read_to_string(target.path().join(p)).ok();
        assert_eq!(read("t/a.parquet").as_deref(), Some("3"));
        assert_eq!(read("t/b.parquet"), None);
        assert_eq!(read("m.json").as_deref(), Some("two"));
        assert_eq!(read("history/x.parquet").as_deref(), Some("kept"));
        assert_eq!(store.read("m.json").expect("read"), Some(b"two".to_vec()));
        assert_eq!(store.read("none.json").expect("read"), None);
    }

    #[test]
    fn a_large_file_goes_up_in_parts_whole() {
        let target = tempfile::tempdir().expect("tempdir");
        let store = file_store(target.path());
        let staging = tempfile::tempdir().expect("tempdir");
        // Two and a half parts, no two alike.
        let big: Vec<u8> = (0..PART * 5 / 2).map(|i| (i % 251) as u8).collect();
        std::fs::write(staging.path().join("big.parquet"), &big).expect("write");
        staged(staging.path(), &[("small.csv", "a"), ("m.json", "{}")]);
        let done = store
            .publish(staging.path(), "m.json", &[], &[])
            .expect("publish");
        assert_eq!(done.uploaded, 3);
        assert_eq!(done.bytes, big.len() as u64 + 3);
        assert!(std::fs::read(target.path().join("big.parquet")).expect("read") == big);
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(target.path().join("big.parquet")).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn secrets_of_the_environment_are_scrubbed_and_access_errors_hint_at_credentials() {
        // Read from the real environment: only a value that is set is scrubbed.
        if let Ok(secret) = std::env::var("AWS_SECRET_ACCESS_KEY") {
            assert!(!scrub(format!("x {secret} y")).contains(&secret));
        }
        assert!(hint("403 Forbidden").contains("AWS_SECRET_ACCESS_KEY"));
        assert_eq!(
            condense(
                "403 Forbidden: <?xml version=\"1.0\"?>\n<Error><Code>InvalidAccessKeyId</Code>\
                 <Message>No such key.</Message><RequestId>x</RequestId></Error>"
            ),
            "403 Forbidden: InvalidAccessKeyId: No such key."
        );
        assert_eq!(hint("connection refused"), "");
    }
}
