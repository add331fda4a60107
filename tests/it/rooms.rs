//! The rooms of `src/` import only from the rooms below them (`docs/architecture.md`,
//! "Rooms and their order"): read from the source, so a change that makes the mirror
//! reach into the reports, or two rooms into each other, fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// Each top-level module and its floor: a room may use the rooms on lower floors.
const FLOORS: &[(&str, u8)] = &[
    ("cause", 0),
    ("file_mode", 0),
    ("calendar", 0),
    ("shutdown", 1),
    ("output", 1),
    ("api", 2),
    ("mirror", 3),
    ("sync", 4),
    ("report", 5),
    ("export", 5),
    ("config", 5),
    ("alerts", 6),
    ("schedule", 7),
    ("cli", 8),
];

/// Names after `crate::` that are not rooms: the `out!`/`outln!` macros and the
/// sandbox crate's re-export.
const NOT_ROOMS: &[&str] = &["out", "outln", "sandbox"];

fn floor(room: &str) -> Option<u8> {
    FLOORS.iter().find(|(r, _)| *r == room).map(|(_, f)| *f)
}

/// The room a file belongs to (None for `lib.rs` and `main.rs`, which tie them all).
fn room_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let room = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(room, "lib" | "main")).then(|| room.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The rooms a file's code (comments left out) names as `crate::<room>`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let name: String = line[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && !NOT_ROOMS.contains(&name.as_str()) {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_room_imports_only_from_the_rooms_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 100, "{} source files", files.len());
    let mut wrong = Vec::new();
    for file in &files {
        let Some(room) = room_of(&src, file) else {
            continue;
        };
        let Some(own) = floor(&room) else {
            wrong.push(format!(
                "{}: room {room} has no floor in FLOORS",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("source file");
        for used in uses(&text) {
            match floor(&used) {
                _ if used == room => {}
                Some(f) if f < own => {}
                Some(_) => wrong.push(format!("{}: {room} uses {used}", file.display())),
                None => wrong.push(format!("{}: {used} is not a room", file.display())),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the order:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_use_of_a_room_above_is_found() {
    let used = uses(
        "use crate::report::Ctx;\n// crate::cli in a comment\nlet x = crate::mirror::open_ro(p);",
    );
    assert_eq!(
        used,
        BTreeSet::from(["mirror".to_string(), "report".to_string()])
    );
}
