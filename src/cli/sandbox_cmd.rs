//! `orgledger sandbox`: serve the built-in API until Ctrl-C or SIGTERM.

use crate::cli::Exit;
use crate::cli::args::SandboxArgs;
use crate::sandbox::{self, SandboxInfo};
use crate::shutdown::Shutdown;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Starts the sandbox, prints its connection JSON as the first stdout line (and
/// the `--env-file`), serves until a signal, then removes the env file.
pub async fn run(args: SandboxArgs) -> Result<Exit> {
    let mut shutdown = Shutdown::on_signals()?;
    // Its errors name the address already.
    let handle = sandbox::start(args.serve.options()).await?;
    let _env_file = match &args.env_file {
        Some(file) => Some(
            write_env_file(file, &handle.info)
                .with_context(|| format!("cannot write the --env-file {}", file.display()))?,
        ),
        None => None,
    };
    let line = serde_json::to_string(&handle.info)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    tracing::info!(url = %handle.info.url, pid = std::process::id(), "sandbox serving; Ctrl-C or `kill PID` to stop");
    shutdown.recv().await;
    handle.shutdown().await;
    Ok(Exit::Ok)
}

/// The env file this process wrote; dropped, it is removed: it holds the JWT of a
/// sandbox that no longer runs. A file that another sandbox has since written over
/// is theirs and stays.
struct EnvFile {
    path: PathBuf,
    text: String,
}

impl Drop for EnvFile {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|now| now == self.text)
            && let Err(e) = std::fs::remove_file(&self.path)
        {
            tracing::warn!(file = %self.path.display(), error = %e, "cannot remove the --env-file");
        }
    }
}

/// The connection as shell lines. Written to a private temporary name and renamed,
/// so a shell waiting for the file never reads half of it.
fn write_env_file(path: &Path, info: &SandboxInfo) -> std::io::Result<EnvFile> {
    use std::os::unix::fs::OpenOptionsExt;
    let text = format!(
        "export ORGLEDGER_BASE_URL='{}'\nexport ORGLEDGER_JWT='{}'\nSANDBOX_WHITELABEL_ORG={}\nSANDBOX_PID={}\n",
        info.url,
        info.jwt,
        info.whitelabel_organization_id,
        std::process::id()
    );
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)?;
    Ok(EnvFile {
        path: path.to_path_buf(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> SandboxInfo {
        SandboxInfo {
            url: "http://127.0.0.1:5".into(),
            whitelabel_organization_id: 7,
            org_api_key: "k".into(),
            jwt: "j.w.t".into(),
            project_api_key: "p".into(),
            project_id: 1,
        }
    }

    #[test]
    fn the_env_file_is_private_shell_lines() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.env");
        let info = info();
        let written = write_env_file(&path, &info).expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("export ORGLEDGER_BASE_URL='http://127.0.0.1:5'\n"));
        assert!(text.contains("export ORGLEDGER_JWT='j.w.t'\nSANDBOX_WHITELABEL_ORG=7\n"));
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!dir.path().join("sandbox.partial").exists());
        drop(written);
        assert!(!path.exists(), "removed when the sandbox stops");
    }

    #[test]
    fn an_env_file_another_sandbox_wrote_over_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sandbox.env");
        let info = info();
        let written = write_env_file(&path, &info).expect("written");
        std::fs::write(&path, "export ORGLEDGER_JWT='another'\n").expect("overwrite");
        drop(written);
        assert!(path.exists());
    }
}
