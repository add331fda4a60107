//! The permissions of what `report`, `export` and `changes --out` write, through
//! the real binary: the owner's alone by default, the group's too when asked.

use crate::common::{self, arg, bin, outputs};
use orgledger::sandbox::Profile;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn mode(path: &Path) -> u32 {
    let meta = std::fs::metadata(path).expect("metadata");
    meta.permissions().mode() & 0o7777
}

/// Every file and folder under `root` (itself included), with its mode.
fn tree(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = vec![(root.to_path_buf(), mode(root))];
    for entry in std::fs::read_dir(root).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(tree(&path));
        } else {
            found.push((path.clone(), mode(&path)));
        }
    }
    found
}

/// Asserts files under `root` have `file` and folders `dir`; returns the file count.
fn assert_modes(root: &Path, file: u32, dir: u32) -> usize {
    let all = tree(root);
    for (path, m) in &all {
        let wanted = if path.is_dir() { dir } else { file };
        assert_eq!(*m, wanted, "{} is {m:o}, not {wanted:o}", path.display());
    }
    all.iter().filter(|(p, _)| p.is_file()).count()
}

/// Runs orgledger on `db` with `args`; it must succeed.
fn ok(db: &Path, args: &[&str]) {
    let (code, _, err) = outputs(bin().args(["--db", arg(db)]).args(args));
    assert_eq!(code, Some(0), "{args:?}: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_export_and_changes_files_are_private_unless_a_mode_is_given() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let outcome = orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let at = |name: &str| dir.path().join(name);
    let day = ["--as-of", "2026-06-01"];
    let formats = ["--format", "csv,json,html,parquet"];

    ok(
        &db,
        &[
            &["report", "--out", arg(&at("private"))][..],
            &day,
            &formats,
        ]
        .concat(),
    );
    assert!(assert_modes(&at("private"), 0o600, 0o700) > 10);
    ok(&db, &["export", "--out", arg(&at("export"))]);
    assert!(assert_modes(&at("export"), 0o600, 0o700) > 10);
    ok(
        &db,
        &["changes", "--since", "run:1", "--out", arg(&at("changes"))],
    );
    assert_eq!(assert_modes(&at("changes"), 0o600, 0o700), 2);

    // A folder that exists keeps its mode; what is created in it follows the flag.
    std::fs::create_dir(at("shared")).expect("mkdir");
    std::fs::set_permissions(at("shared"), std::fs::Permissions::from_mode(0o775)).expect("chmod");
    let shared_dir = at("shared");
    let shared = [
        &["report", "--out", arg(&shared_dir)][..],
        &day,
        &formats,
        &["--file-mode", "0640"],
    ]
    .concat();
    ok(&db, &shared);
    assert_eq!(mode(&at("shared")), 0o775);
    assert!(assert_modes(&at("shared").join("2026-06-01"), 0o640, 0o750) > 10);

    let config = at("orgledger.toml");
    std::fs::write(&config, "file_mode = \"0660\"\n").expect("config");
    ok(
        &db,
        &[
            "--config",
            arg(&config),
            "export",
            "--out",
            arg(&at("team")),
        ],
    );
    assert!(assert_modes(&at("team"), 0o660, 0o770) > 10);

    let (code, _, err) = outputs(bin().args(["--db", arg(&db), "report", "--file-mode", "0755"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("without execute"), "{err}");
}
