//! The `--out` of `export` and `report` (and their `out` keys in the config): a
//! local folder, or an object-store URL whose files are staged in a temporary folder.

use crate::cli::UsageError;
use crate::output::{Destination, StoreUrl};
use std::path::PathBuf;

/// `(folder, store)`: the folder itself, or for a URL no folder and the store. A
/// URL with a scheme this build does not write to is a usage error, never a folder.
pub fn split(out: PathBuf) -> anyhow::Result<(PathBuf, Option<StoreUrl>)> {
    // A path that is not UTF-8 cannot be a URL.
    let Some(text) = out.to_str() else {
        return Ok((out, None));
    };
    match Destination::parse(text).map_err(|e| UsageError(e.to_string()))? {
        Destination::Local(dir) => Ok((dir, None)),
        Destination::Store(url) => Ok((PathBuf::new(), Some(url))),
    }
}

/// The `--out` flag, else the config's `out`, else `default`, split as [`split`] does.
pub fn resolve(
    flag: Option<&PathBuf>,
    config: Option<&PathBuf>,
    default: &str,
) -> anyhow::Result<(PathBuf, Option<StoreUrl>)> {
    split(
        flag.or(config)
            .cloned()
            .unwrap_or_else(|| PathBuf::from(default)),
    )
}
