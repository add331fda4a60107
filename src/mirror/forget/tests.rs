use super::*;
use crate::mirror::raw;
use crate::mirror::spec::{self, USERS};
use crate::mirror::table::Row;
use crate::mirror::testkit::{TestMirror, i, row, t, tables_with_a_phone};
use rusqlite::params;
use rusqlite::types::Value;
use std::collections::HashSet;

const PHONE: &str = "+1 555 0100";

/// Stores a raw document with `json` as its body.
fn store_document(conn: &Connection, entity: &str, json: &str) {
    let encoded = raw::encode(json.as_bytes());
    let body = encoded.body.to_vec();
    conn.execute(
        "INSERT INTO raw_documents (operation, entity, content_hash, encoding, run_id, fetched_at, body) \
         VALUES ('get-whitelabel-user', ?1, ?2, ?3, 1, '2025-03-01T00:00:00.000Z', ?4)",
        params![entity, encoded.hash, encoded.encoding, body],
    )
    .expect("a raw document");
}

fn document(conn: &Connection, entity: &str) -> String {
    let (encoding, body): (String, Vec<u8>) = conn
        .query_row(
            "SELECT encoding, body FROM raw_documents WHERE entity = ?1",
            [entity],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the document");
    String::from_utf8(raw::decode(&encoding, &body).expect("decodes")).expect("UTF-8")
}

fn phones(conn: &Connection, table: &str) -> Vec<(i64, Option<String>)> {
    conn.prepare(&format!(
        "SELECT id, phone FROM {table} ORDER BY id, valid_from"
    ))
    .expect("phones")
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
    .expect("phones")
    .collect::<Result<_, _>>()
    .expect("phones")
}

#[test]
fn a_personal_column_added_to_the_spec_is_erased_with_no_other_change() {
    let mut m = TestMirror::new();
    for (day, name) in [("2025-03-01", "Ada"), ("2025-03-02", "Ada Lovelace")] {
        m.run(&format!("{day}T06:00:00.000Z"), |run| {
            for (id, name, email) in [(7, name, "ada@example.com"), (8, "Bob", "bob@example.com")] {
                run.put(
                    &USERS,
                    &[("id", i(id)), ("name", t(name)), ("email", t(email))],
                );
            }
        });
    }
    let mut conn = crate::mirror::open_rw(&m.path).expect("open");
    // What a migration adding the column does, and what a sync then stores.
    for table in ["users", "users_history"] {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN phone TEXT"))
            .expect("the column");
        conn.execute(&format!("UPDATE {table} SET phone = ?1 || id"), [PHONE])
            .expect("phones");
    }
    store_document(
        &conn,
        "7",
        &format!(
            r#"{{"user":{{"id":7,"username":"ada","email":"ada@example.com","phone":"{PHONE}7","tier":"pro"}}}}"#
        ),
    );
    let opts = Options {
        keep_redacted: true,
        ..Options::default()
    };
    spec::with_tables(tables_with_a_phone(), || {
        forget(&mut conn, &m.path, &Target::User(7), opts).expect("forget");
    });
    for table in ["users", "users_history"] {
        let phones = phones(&conn, table);
        assert!(
            phones.iter().all(|(id, p)| (*id == 7) == p.is_none()),
            "{table}: {phones:?}"
        );
        assert!(phones.iter().any(|(id, _)| *id == 7), "{table}: {phones:?}");
    }
    let body = document(&conn, "7");
    assert!(
        !body.contains(PHONE) && body.contains(r#""tier":"pro""#),
        "{body}"
    );

    // A later sync stores the phone of a person kept redacted as it stores the
    // rest of their fields: not at all.
    let kept = KeptRedacted {
        people: HashSet::from([7]),
    };
    spec::with_tables(tables_with_a_phone(), || {
        let users = tables_with_a_phone()
            .iter()
            .find(|t| t.name == "users")
            .expect("users");
        let mut rows = [7, 8].map(|id| {
            Row::new(row(
                users,
                &[("id", i(id)), ("phone", t(PHONE)), ("tier", t("pro"))],
            ))
        });
        let [ada, bob] = &mut rows;
        kept.rows(&mut [(*users, ada), (*users, bob)]);
        let phone = users.index_of("phone").expect("phone");
        assert_eq!(rows[0].values[phone], Value::Null);
        assert_eq!(rows[1].values[phone], t(PHONE));
        let received =
            raw::encode(format!(r#"{{"id":7,"username":"ada","phone":"{PHONE}"}}"#).as_bytes());
        match kept.body(&received).expect("body") {
            kept::Body::Redacted(clean) => {
                let json = raw::decode(clean.encoding, &clean.body.to_vec()).expect("decodes");
                assert!(!String::from_utf8_lossy(&json).contains(PHONE));
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn a_body_that_cannot_be_read_is_withheld_not_stored_unredacted() {
    let kept = KeptRedacted {
        people: HashSet::from([7]),
    };
    let theirs = br#"{"id":7,"email":"ada@example.com"}"#;
    let undecodable = raw::Encoded {
        encoding: "lz4-frame",
        ..raw::encode(theirs)
    };
    let not_json = raw::encode(&theirs[..theirs.len() - 1]);
    assert!(matches!(
        kept.body(&undecodable).expect("body"),
        Body::Withheld(_)
    ));
    assert!(matches!(
        kept.body(&not_json).expect("body"),
        Body::Withheld(_)
    ));
    assert!(matches!(
        kept.body(&raw::encode(theirs)).expect("body"),
        Body::Redacted(_)
    ));
    assert!(matches!(
        kept.body(&raw::encode(br#"{"id":8,"email":"bob@example.com"}"#))
            .expect("body"),
        Body::AsReceived
    ));
}
