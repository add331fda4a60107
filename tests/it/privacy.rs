//! Personal data kept for years: pseudonyms nobody can reverse without the mirror's
//! key, `orgledger forget` leaving no copy of a person in the file or its WAL while
//! every number of every report stays, people erased while still on the service
//! stored redacted by later syncs, and the retention of people who left.

use crate::common;
use orgledger::render;
use orgledger::report::{Format, ReportOptions};
use orgledger::sync;
use orgledger_sandbox::{Profile, SandboxHandle};
use serde_json::json;
use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Redacted reports of `db` as of `as_of` in `out`: every file's text (the
/// workbook's shared strings included), by file name.
fn redacted_files(db: &Path, out: &Path, as_of: chrono::NaiveDate) -> BTreeMap<String, String> {
    let mut opts = ReportOptions::new(db, as_of);
    opts.formats = vec![Format::Csv, Format::Json, Format::Html, Format::Xlsx];
    opts.out_root = out.to_path_buf();
    opts.redact_pii = true;
    let outcome = render::run(&opts).expect("report run");
    let mut files = BTreeMap::new();
    for f in outcome.files.iter().chain(&outcome.pages) {
        let bytes = std::fs::read(&f.path).expect("report file");
        let text = match f.format {
            Format::Xlsx => xlsx_strings(&bytes),
            _ => String::from_utf8_lossy(&bytes).into_owned(),
        };
        files.insert(f.path.display().to_string(), text);
    }
    files
}

/// The text of every part of a workbook (it is a zip of XML parts).
fn xlsx_strings(bytes: &[u8]) -> String {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("xlsx is a zip");
    let mut out = String::new();
    for i in 0..zip.len() {
        let mut part = zip.by_index(i).expect("part");
        std::io::Read::read_to_string(&mut part, &mut out).expect("xml part");
    }
    out
}

/// Every pseudonym's hex digits in the files.
fn pseudonyms(files: &BTreeMap<String, String>) -> BTreeSet<String> {
    let re = regex::Regex::new(r"user-([0-9a-f]{6,})").expect("pattern");
    files
        .values()
        .flat_map(|text| re.captures_iter(text).map(|c| c[1].to_string()))
        .collect()
}

/// Every address, name and username the mirror holds, in any version.
fn people_texts(db: &Path) -> BTreeSet<String> {
    let conn = common::open(db);
    let mut out = BTreeSet::new();
    for table in ["users", "organization_members", "project_collaborators"] {
        for t in [table.to_string(), format!("{table}_history")] {
            let sql = format!("SELECT email, name, username FROM {t}");
            let mut stmt = conn.prepare(&sql).expect(&sql);
            let rows = stmt
                .query_map([], |r| {
                    Ok([r.get::<_, Option<String>>(0)?, r.get(1)?, r.get(2)?])
                })
                .expect(&sql);
            for row in rows {
                out.extend(row.expect("row").into_iter().flatten());
            }
        }
    }
    out
}

/// The hex digests a guesser would try for a value: SHA-256, SHA-1 and MD5 of it
/// as it is, trimmed, and trimmed in lower case.
fn guesses(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for v in [
        value.to_string(),
        value.trim().to_string(),
        value.trim().to_lowercase(),
    ] {
        let b = v.as_bytes();
        out.push(hex::encode(sha2::Sha256::digest(b)));
        out.push(hex::encode(sha1::Sha1::digest(b)));
        out.push(hex::encode(md5::Md5::digest(b)));
    }
    out
}

/// The pseudonyms that are (a prefix or part of) some hash of one of the values.
fn reversed(tokens: &BTreeSet<String>, values: &BTreeSet<String>) -> Vec<String> {
    let digests: Vec<String> = values.iter().flat_map(|v| guesses(v)).collect();
    tokens
        .iter()
        .filter(|t| digests.iter().any(|d| d.contains(t.as_str())))
        .cloned()
        .collect()
}

async fn sync_into(sb: &SandboxHandle, db: &Path) {
    let outcome = sync::run(&common::admin(sb), &common::sync_opts(sb, db), None)
        .await
        .expect("sync");
    assert_eq!(outcome.totals.errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pseudonyms_reverse_to_no_hash_of_the_mirror_s_own_people() {
    let sb = common::sandbox(Profile::Small).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, other) = (dir.path().join("a.db"), dir.path().join("b.db"));
    sync_into(&sb, &db).await;
    sync_into(&sb, &other).await;
    let day = common::start_date();
    let first = redacted_files(&db, &dir.path().join("first"), day);
    let tokens = pseudonyms(&first);
    assert!(tokens.len() > 5, "{tokens:?}");
    assert!(
        tokens.iter().all(|t| t.len() >= 16),
        "64 bits at least: {tokens:?}"
    );
    let people = people_texts(&db);
    assert!(people.len() > 10, "{people:?}");
    // The check catches a reversible pseudonym: the unkeyed one of an address.
    let address = people.iter().find(|p| p.contains('@')).expect("an address");
    let unkeyed = hex::encode(&sha2::Sha256::digest(address.trim().to_lowercase())[..4]);
    assert_eq!(reversed(&BTreeSet::from([unkeyed]), &people).len(), 1);
    assert_eq!(reversed(&tokens, &people), Vec::<String>::new());
    // Nothing in the files names anyone or holds the key.
    let key: Vec<u8> = common::open(&db)
        .query_row("SELECT key FROM privacy_key", [], |r| r.get(0))
        .expect("the mirror's key");
    for (file, text) in &first {
        assert!(!text.contains(&hex::encode(&key)), "{file} holds the key");
        for person in people.iter().filter(|p| p.contains('@')) {
            assert!(!text.contains(person.as_str()), "{file} names {person}");
        }
    }
    // Stable across runs of the same mirror, different for another mirror.
    let again = pseudonyms(&redacted_files(&db, &dir.path().join("again"), day));
    assert_eq!(again, tokens);
    let elsewhere = pseudonyms(&redacted_files(&other, &dir.path().join("other"), day));
    assert!(elsewhere.is_disjoint(&tokens));
    sb.shutdown().await;
}

// ---------------------------------------------------------------------------
// forget

async fn edit(sb: &SandboxHandle, body: serde_json::Value) {
    let r = common::http()
        .post(format!("{}/sandbox/edit", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("edit answers");
    assert_eq!(r.status().as_u16(), 200, "{body}");
}

/// A white label user who is a member of an organization with an address:
/// (organization, user, address, role).
fn a_member(db: &Path) -> (i64, i64, String, String) {
    common::open(db)
        .query_row(
            "SELECT m.organization_id, m.user_id, m.email, m.role FROM organization_members m \
             JOIN users u ON u.id = m.user_id \
             WHERE m.email IS NOT NULL AND m.role IS NOT NULL ORDER BY m.user_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("a member who is a white label user")
}

/// Occurrences of `needle` (any case) in the file and in its WAL.
fn copies(db: &Path, needle: &str) -> usize {
    let needle = needle.to_lowercase();
    let [wal, _] = orgledger::mirror::sidecar_paths(db);
    [db.to_path_buf(), wal]
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .map(|bytes| {
            let lower = bytes.to_ascii_lowercase();
            memchr::memmem::find_iter(&lower, needle.as_bytes()).count()
        })
        .sum()
}

/// Raw documents whose body holds `needle` (any case).
fn documents_holding(db: &Path, needle: &str) -> usize {
    let conn = common::open(db);
    let mut stmt = conn
        .prepare("SELECT encoding, body FROM raw_documents")
        .expect("raw documents");
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })
        .expect("query");
    let needle = needle.to_lowercase();
    rows.map(|r| r.expect("row"))
        .filter(|(encoding, body)| {
            let json = match encoding.as_str() {
                "lz4" => lz4_flex::decompress_size_prepended(body).expect("lz4"),
                _ => {
                    let mut out = Vec::new();
                    std::io::Read::read_to_end(
                        &mut lz4_flex::frame::FrameDecoder::new(&body[..]),
                        &mut out,
                    )
                    .expect("lz4 frame");
                    out
                }
            };
            memchr::memmem::find(&json.to_ascii_lowercase(), needle.as_bytes()).is_some()
        })
        .count()
}

/// The CSV report files of `db` as of `day`, by name.
fn csv_reports(
    db: &Path,
    out: &Path,
    day: chrono::NaiveDate,
) -> BTreeMap<String, Vec<Vec<String>>> {
    let mut opts = ReportOptions::new(db, day);
    opts.formats = vec![Format::Csv];
    opts.out_root = out.to_path_buf();
    let outcome = render::run(&opts).expect("report run");
    outcome
        .files
        .iter()
        .map(|f| {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_path(&f.path)
                .expect("csv");
            let rows = reader
                .records()
                .map(|r| r.expect("record").iter().map(str::to_string).collect())
                .collect();
            (f.report.clone(), rows)
        })
        .collect()
}

fn orgledger(db: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    common::outputs(common::orgledger(db).args(args))
}

/// A mirror of the tiny world after one sync, its sandbox still serving, and
/// `a_member` of it.
async fn synced_with_a_member() -> (
    SandboxHandle,
    tempfile::TempDir,
    std::path::PathBuf,
    (i64, i64, String, String),
) {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    sync_into(&sb, &db).await;
    let member = a_member(&db);
    (sb, dir, db, member)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_leaves_no_copy_of_the_address_and_every_number_stays() {
    let (sb, dir, db, (org, user, address, role)) = synced_with_a_member().await;
    // Several versions of the person: their role changes and changes back, a day
    // apart each.
    let other_role = if role == "admin" { "member" } else { "admin" };
    for r in [other_role, role.as_str()] {
        edit(
            &sb,
            json!({"edit": "set_role", "organization": org, "user": user, "role": r}),
        )
        .await;
        assert_eq!(
            common::admin_post(&sb, "/sandbox/advance?days=1").await,
            200
        );
        sync_into(&sb, &db).await;
    }
    let versions = common::count(
        &common::open(&db),
        &format!("SELECT COUNT(*) FROM organization_members_history WHERE user_id = {user}"),
    );
    assert!(versions >= 2, "{versions} archived versions");
    assert!(documents_holding(&db, &address) >= 2);

    // Still on the service: refused, nothing changed.
    let (code, _, err) = orgledger(&db, &["forget", "--user", &user.to_string()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("still exists on the service") && err.contains("--keep-redacted"),
        "{err}"
    );

    // Gone from the service (and so marked removed by the next sync).
    let removed = format!("/sandbox/remove-user?id={user}");
    assert_eq!(common::admin_post(&sb, &removed).await, 200);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    sync_into(&sb, &db).await;
    let day = common::start_date() + chrono::Days::new(3);
    let before = csv_reports(&db, &dir.path().join("before"), day);
    let dry = orgledger(
        &db,
        &["forget", "--email", &address.to_uppercase(), "--dry-run"],
    );
    assert_eq!(dry.0, Some(0), "{}", dry.2);
    assert!(
        dry.1.contains(&format!("user {user}: would erase")),
        "{}",
        dry.1
    );
    assert!(copies(&db, &address) > 0, "a dry run changes nothing");

    let (code, out, err) = orgledger(&db, &["forget", "--email", &address]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&format!("user {user}: erased")), "{out}");
    assert_eq!(
        copies(&db, &address),
        0,
        "the address is still in the file or its WAL"
    );
    assert_eq!(documents_holding(&db, &address), 0);
    // Their id stays; the erasure is recorded and shown.
    let conn = common::open(&db);
    assert!(
        common::count(
            &conn,
            &format!("SELECT COUNT(*) FROM users WHERE id = {user}")
        ) == 1
    );
    drop(conn);
    let (code, status, _) = orgledger(&db, &["status", "--format", "json"]);
    assert_eq!(code, Some(0));
    let status: serde_json::Value = serde_json::from_str(&status).expect("status json");
    assert_eq!(
        status["erasures"][0]["user_id"], user,
        "{}",
        status["erasures"]
    );
    let (code, out, err) = orgledger(&db, &["check"]);
    assert_eq!(code, Some(0), "{out}{err}");

    // Every report's numbers stay: a cell that changed is a personal one, now empty
    // or erased.
    let after = csv_reports(&db, &dir.path().join("after"), day);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (name, rows) in &before {
        let new = &after[name];
        assert_eq!(rows.len(), new.len(), "{name}: rows");
        for (old_row, new_row) in rows.iter().zip(new) {
            assert_eq!(old_row.len(), new_row.len(), "{name}");
            for (old, new) in old_row.iter().zip(new_row) {
                if old != new {
                    assert!(
                        new.is_empty() || new.contains("[erased]"),
                        "{name}: {old:?} became {new:?}"
                    );
                    assert!(
                        old.parse::<f64>().is_err(),
                        "{name}: a number changed: {old} → {new}"
                    );
                }
            }
        }
    }

    // Forgetting again finds the person by id; an unknown one is refused.
    let (code, _, err) = orgledger(&db, &["forget", "--user", "999999999"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("holds no user with id 999999999"), "{err}");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_kept_redacted_stays_redacted_in_later_syncs() {
    let (sb, _dir, db, (org, user, address, role)) = synced_with_a_member().await;
    let (code, out, err) = orgledger(
        &db,
        &["forget", "--user", &user.to_string(), "--keep-redacted"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("later syncs store"), "{out}");
    assert_eq!(copies(&db, &address), 0);
    // The service still has them, and changes them: the new version is stored
    // redacted, the raw documents too.
    let other_role = if role == "admin" { "member" } else { "admin" };
    edit(
        &sb,
        json!({"edit": "set_role", "organization": org, "user": user, "role": other_role}),
    )
    .await;
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    sync_into(&sb, &db).await;
    let conn = common::open(&db);
    let stored_role: String = conn
        .query_row(
            "SELECT role FROM organization_members WHERE organization_id = ?1 AND user_id = ?2",
            [org, user],
            |r| r.get(0),
        )
        .expect("the membership");
    assert_eq!(stored_role, other_role, "the change itself is stored");
    drop(conn);
    assert_eq!(documents_holding(&db, &address), 0);
    // The WAL may hold pages of the sync; none holds the address.
    assert_eq!(copies(&db, &address), 0);
    let (code, out, err) = orgledger(&db, &["check"]);
    assert_eq!(code, Some(0), "{out}{err}");
    // A sync of an unchanged world writes no new version of anything: no row the
    // erasure changed comes back as sent.
    let history = |db: &Path| {
        let conn = common::open(db);
        orgledger::mirror::spec::TABLES
            .iter()
            .map(|t| common::count(&conn, &format!("SELECT COUNT(*) FROM {}_history", t.name)))
            .sum::<i64>()
    };
    let before = history(&db);
    sync_into(&sb, &db).await;
    assert_eq!(history(&db), before);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_removed_longer_than_the_retention_are_erased_by_the_sync() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (_dir, db) = common::scratch();
    let mut opts = common::sync_opts(&sb, &db);
    opts.forget_removed_after_days = Some(10);
    let run = |opts: sync::SyncOptions| {
        let sb = &sb;
        async move {
            let outcome = sync::run(&common::admin(sb), &opts, None)
                .await
                .expect("sync");
            assert_eq!(outcome.totals.errors, 0);
        }
    };
    run(opts.clone()).await;
    let (_, user, address, _) = a_member(&db);
    assert_eq!(
        common::admin_post(&sb, &format!("/sandbox/remove-user?id={user}")).await,
        200
    );
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=1").await,
        200
    );
    run(opts.clone()).await;
    let erasures = |db: &Path| common::count(&common::open(db), "SELECT COUNT(*) FROM erasures");
    // Removed a day ago: kept.
    assert_eq!(erasures(&db), 0);
    assert!(copies(&db, &address) > 0);
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=11").await,
        200
    );
    run(opts.clone()).await;
    assert_eq!(erasures(&db), 1);
    assert_eq!(
        common::count(
            &common::open(&db),
            "SELECT user_id FROM erasures WHERE reason = 'retention'"
        ),
        user
    );
    assert_eq!(copies(&db, &address), 0);
    // Erased once: the next sync does not erase them again.
    run(opts).await;
    assert_eq!(erasures(&db), 1);
    sb.shutdown().await;
}

// ---------------------------------------------------------------------------
// forget fails closed

/// Every row of every table of `db`, as SQLite quotes it, sorted: what an erasure
/// that changed nothing leaves exactly as it found.
fn everything(db: &Path) -> BTreeMap<String, Vec<String>> {
    let conn = common::open(db);
    let tables: Vec<String> = common::column(
        &conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    );
    tables
        .into_iter()
        .map(|table| {
            let columns: Vec<String> = common::column(
                &conn,
                &format!("SELECT name FROM pragma_table_info('{table}')"),
            );
            let quoted: Vec<String> = columns.iter().map(|c| format!("quote(\"{c}\")")).collect();
            let mut rows: Vec<String> = common::column(
                &conn,
                &format!("SELECT {} FROM \"{table}\"", quoted.join(" || ',' || ")),
            );
            rows.sort();
            (table, rows)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_document_that_does_not_decode_stops_the_erasure_and_nothing_changes() {
    let (sb, _dir, db, (org, user, address, _)) = synced_with_a_member().await;
    // The stored answer that lists the person, broken as a bad disk or an older
    // build's bug could leave it.
    let broken = common::open(&db)
        .execute(
            "UPDATE raw_documents SET body = x'00ff00ff' \
             WHERE operation = 'get-organization' AND entity = ?1",
            [format!("organization {org}")],
        )
        .expect("a broken document");
    assert_eq!(broken, 1);
    let before = everything(&db);
    let user = user.to_string();
    let named = format!("raw_documents (get-organization, organization {org})");
    for dry in [false, true] {
        let mut args = vec!["forget", "--user", &user, "--keep-redacted"];
        args.extend(dry.then_some("--dry-run"));
        let (code, _, err) = orgledger(&db, &args);
        assert_eq!(code, Some(1), "dry run {dry}: {err}");
        assert!(
            err.contains(&named)
                && err.contains("nothing was erased")
                && err.contains("--leave-unchecked"),
            "{err}"
        );
        assert_eq!(everything(&db), before, "dry run {dry}: the mirror changed");
    }
    assert!(copies(&db, &address) > 0);

    // Chosen: everything else is erased, and what was left is listed.
    for dry in [true, false] {
        let mut args = vec![
            "forget",
            "--user",
            &user,
            "--keep-redacted",
            "--leave-unchecked",
        ];
        args.extend(dry.then_some("--dry-run"));
        let (code, out, err) = orgledger(&db, &args);
        assert_eq!(code, Some(0), "dry run {dry}: {err}");
        assert!(
            out.contains("left unchecked") && out.contains(&named),
            "{out}"
        );
        assert_eq!(
            everything(&db) == before,
            dry,
            "only a dry run changes nothing"
        );
    }
    assert_eq!(copies(&db, &address), 0);
    sb.shutdown().await;
}

/// `count` names, each a thousand mathematical letters (`𝔸`, which take a
/// matcher a hundred times the space of a plain letter) and its number: what a
/// person who renamed themselves in fancy letters again and again leaves.
fn fancy_names(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("{}{i}", "\u{1d538}".repeat(1000)))
        .collect()
}

/// Adds `text` to the body of the raw document `(operation, entity)`.
fn plant_in_document(db: &Path, operation: &str, entity: &str, text: &str) {
    let conn = common::open(db);
    let body: Vec<u8> = conn
        .query_row(
            "SELECT body FROM raw_documents WHERE operation = ?1 AND entity = ?2 AND encoding = 'lz4'",
            [operation, entity],
            |r| r.get(0),
        )
        .expect("the document");
    let json = lz4_flex::decompress_size_prepended(&body).expect("lz4");
    let mut value: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
    value["note"] = serde_json::Value::String(format!("thanks to {text} for this"));
    let planted = lz4_flex::compress_prepend_size(&serde_json::to_vec(&value).expect("JSON"));
    conn.execute(
        "UPDATE raw_documents SET body = ?1 WHERE operation = ?2 AND entity = ?3",
        rusqlite::params![planted, operation, entity],
    )
    .expect("planted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_whose_texts_need_several_matchers_leaves_no_copy() {
    let (sb, _dir, db, (org, user, _, _)) = synced_with_a_member().await;
    // 700 earlier versions of their name: more than one matcher holds.
    let names = fancy_names(700);
    {
        let conn = common::open(&db);
        let mut insert = conn
            .prepare(
                "INSERT INTO users_history (id, name, content_hash, valid_from, run_id, valid_to) \
                 VALUES (?1, ?2, x'00', '2020-01-01T00:00:00.000Z', 1, '2020-01-02T00:00:00.000Z')",
            )
            .expect("insert");
        for name in &names {
            insert
                .execute(rusqlite::params![user, name])
                .expect("a version");
        }
        // Named elsewhere: in another table's free text and in a stored answer,
        // both by a name early in the matchers' order and one late in it.
        conn.execute(
            "UPDATE projects SET description = ?1 WHERE id = (SELECT MIN(id) FROM projects)",
            [format!("started by {} and {}", names[0], names[699])],
        )
        .expect("a description");
    }
    plant_in_document(
        &db,
        "get-organization",
        &format!("organization {org}"),
        &names[350],
    );
    for name in [&names[0], &names[350], &names[699]] {
        assert!(copies(&db, name) > 0);
    }
    let (code, _, err) = orgledger(
        &db,
        &["forget", "--user", &user.to_string(), "--keep-redacted"],
    );
    assert_eq!(code, Some(0), "{err}");
    // Longest first: a shorter name is part of a longer one.
    for (i, name) in names.iter().enumerate().rev() {
        assert_eq!(
            copies(&db, name),
            0,
            "name {i} is still in the file or its WAL"
        );
    }
    sb.shutdown().await;
}

/// Whether the erasure of `user` (their address `address`) is in the mirror: `Some(false)`
/// as before it, `Some(true)` as after it, `None` halfway.
fn erased_state(db: &Path, user: i64, address: &str) -> Option<bool> {
    let conn = common::open(db);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity check");
    assert_eq!(check, "ok");
    let recorded = common::count(
        &conn,
        &format!("SELECT COUNT(*) FROM erasures WHERE user_id = {user}"),
    );
    let in_rows = common::count(
        &conn,
        &format!(
            "SELECT (SELECT COUNT(*) FROM users WHERE email = '{address}') \
                  + (SELECT COUNT(*) FROM organization_members WHERE email = '{address}')"
        ),
    );
    drop(conn);
    let in_documents = documents_holding(db, address);
    match (recorded > 0, in_rows > 0, in_documents > 0) {
        (false, true, true) => Some(false),
        (true, false, false) => Some(true),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_killed_at_any_moment_leaves_the_mirror_as_it_was_or_as_erased() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    sync_into(&sb, &db).await;
    let (_, user, address, _) = a_member(&db);
    common::open(&db)
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("folded");
    let pristine = dir.path().join("pristine.db");
    std::fs::copy(&db, &pristine).expect("a copy");
    let args = ["forget", "--user", &user.to_string(), "--keep-redacted"].map(str::to_string);
    let forget = |db: &Path| {
        common::orgledger(db)
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("forget starts")
    };
    let started = std::time::Instant::now();
    assert!(forget(&db).wait().expect("forget").success());
    let full = started.elapsed();
    let mut seen = BTreeMap::new();
    for share in [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95] {
        let run = dir.path().join(format!("killed-{share}.db"));
        std::fs::copy(&pristine, &run).expect("a copy");
        let mut child = forget(&run);
        std::thread::sleep(full.mul_f64(share));
        let killed = child.try_wait().expect("poll").is_none();
        if killed {
            child.kill().expect("SIGKILL");
        }
        child.wait().expect("reaped");
        let state = erased_state(&run, user, &address);
        assert!(state.is_some(), "killed at {share} of {full:?}: halfway");
        *seen.entry((killed, state)).or_insert(0) += 1;
        // The next forget finishes the job, the file rewrite included.
        let (code, _, err) = orgledger(&run, &args.each_ref().map(String::as_str));
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(erased_state(&run, user, &address), Some(true));
        assert_eq!(copies(&run, &address), 0, "killed at {share} of {full:?}");
        let owed: i64 = common::open(&run)
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("user_version");
        assert_eq!(owed, 0, "no rewrite is owed");
    }
    eprintln!("forget took {full:?}; (killed, erased) states: {seen:?}");
    assert!(
        seen.keys().filter(|(killed, _)| *killed).count() >= 1,
        "{seen:?}"
    );
    sb.shutdown().await;
}
