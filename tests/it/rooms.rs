//! The rooms of `src/` import only from the rooms below them (`docs/architecture.md`,
//! "Rooms and their order"): read from the source, so a change that makes the mirror
//! reach into the reports, or two rooms into each other, fails here. A room's own
//! tables are read by its SQL alone: the others ask its API.

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
    ("render", 7),
    ("email", 8),
    ("schedule", 9),
    ("cli", 10),
];

/// Tables that belong to a room other than the mirror, which creates every table
/// (its migrations) and describes them (its table specs): only the owner's SQL names
/// them. The mirror's own tables are the data every room above reads.
const OWNED_TABLES: &[(&str, &[&str])] = &[
    (
        "alerts",
        &[
            "alert_state",
            "alert_runs",
            "alert_outbox",
            "alert_deliveries",
            "alert_events",
        ],
    ),
    ("email", &["email_sends"]),
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

/// Every file under `dir` whose name ends in `.<ext>`.
fn files_with(dir: &Path, ext: &str, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_with(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
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
    files_with(&src, "rs", &mut files);
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

/// The tables of another room that `text`'s code (comments left out) reads or
/// writes: a table name after FROM, JOIN, INTO, UPDATE or TABLE, schema prefix or not.
fn foreign_tables(text: &str, room: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for line in text.lines().filter(|l| {
        let l = l.trim_start();
        !l.starts_with("//") && !l.starts_with("--")
    }) {
        let upper = line.to_ascii_uppercase();
        let words: Vec<&str> = upper
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if !matches!(pair[0], "FROM" | "JOIN" | "INTO" | "UPDATE" | "TABLE") {
                continue;
            }
            let table = pair[1].rsplit('.').next().unwrap_or(pair[1]);
            for (owner, tables) in OWNED_TABLES {
                if *owner == room {
                    continue;
                }
                if let Some(t) = tables.iter().find(|t| t.eq_ignore_ascii_case(table)) {
                    found.push(*t);
                }
            }
        }
    }
    found
}

#[test]
fn a_rooms_tables_are_named_only_by_its_own_sql() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    files_with(&src, "rs", &mut files);
    // The shipped extracts are the report engine's SQL.
    let mut queries = Vec::new();
    files_with(&root.join("queries"), "sql", &mut queries);
    assert!(queries.len() >= 6, "{} extracts", queries.len());
    let mut wrong = Vec::new();
    let checked = files
        .iter()
        .filter_map(|f| Some((room_of(&src, f)?, f)))
        .chain(queries.iter().map(|f| ("report".to_string(), f)))
        .filter(|(room, _)| room != "mirror");
    for (room, file) in checked {
        let text = std::fs::read_to_string(file).expect("source file");
        for table in foreign_tables(&text, &room) {
            wrong.push(format!("{}: {room} reads {table}", file.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "SQL naming another room's tables:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn sql_naming_another_rooms_table_is_found() {
    let page = r#"let sql = "SELECT key, kind FROM main.alert_state WHERE since <= ?1";"#;
    assert_eq!(foreign_tables(page, "render"), ["alert_state"]);
    assert_eq!(
        foreign_tables("  JOIN alert_outbox o ON o.id = d.event_id", "report"),
        ["alert_outbox"]
    );
    assert!(foreign_tables(page, "alerts").is_empty());
    assert!(foreign_tables("// FROM alert_state in a comment", "render").is_empty());
    assert!(foreign_tables("SELECT * FROM alert_states_view", "render").is_empty());
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
