//! The bad-response corpus. Every file under
//! `tests/bad_responses/` (plus the generated cases below: a 50 MB body and
//! 10,000-deep nesting) is served over HTTP for one entity of one operation through
//! `/sandbox/override`, on a day after a clean sync. The sync must not panic, must
//! end `partial` (`failed` when discovery itself is broken), must record an error
//! naming the operation, the entity and what was wrong, must keep the entity's
//! previous data, and must store everything else exactly as a clean sync does.
//!
//! File names say what is served: `<operation>-<what>.<ext>`, the operation by its
//! name (`get-project-info`); `-http-<status>-` sets the
//! status (200 otherwise); the extension sets the content type (`.bin` claims JSON).

use crate::common;
use orgledger::api::client::{ClientConfig, Credentials};
use orgledger::api::pacing::Backoff;
use orgledger::api::secret::Secret;
use orgledger::api::{Client, Operation};
use orgledger::mirror::runs::RunStatus;
use orgledger::mirror::spec::{self, TableSpec};
use orgledger::sync;
use orgledger_sandbox::{Profile, SandboxHandle};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What each corpus file must produce: a substring of the recorded message that
/// says what was wrong (the operation, path and entity are checked for all).
const EXPECTED: &[(&str, &str)] = &[
    (
        "get-project-info-success-missing.json",
        "missing field `success`",
    ),
    (
        "get-project-info-success-null.json",
        "invalid type: null, expected a boolean",
    ),
    (
        "get-project-info-success-string.json",
        "invalid type: string \"true\", expected a boolean",
    ),
    (
        "get-project-info-success-false.json",
        "success=false: Project is being migrated, try again later",
    ),
    (
        "get-project-info-success-false-no-error.json",
        "success=false: (no error text)",
    ),
    (
        "get-project-info-payload-missing.json",
        "the response has no `project` object",
    ),
    (
        "get-project-info-project-null.json",
        "the response has no `project` object",
    ),
    (
        "get-project-info-project-is-list.json",
        "invalid type: map, expected an integer (a number without fractional part) at line 1 column 30",
    ),
    (
        "get-project-info-id-is-word.json",
        "invalid type: string \"forty-two\", expected an integer",
    ),
    (
        "get-project-info-id-fraction.json",
        "invalid value: floating point `42.5`, expected an integer",
    ),
    (
        "get-project-info-huge-integer.json",
        "out of range for a 64-bit signed integer",
    ),
    (
        "get-project-info-number-out-of-range.json",
        "number out of range",
    ),
    (
        "get-project-info-nan-literal.json",
        "expected value at line 1",
    ),
    (
        "get-project-info-infinity-literal.json",
        "invalid number at line 1 column 75",
    ),
    (
        "get-project-info-nan-string.json",
        "invalid type: string \"NaN\", expected an integer",
    ),
    (
        "get-project-info-timestamp-garbage.json",
        "invalid timestamp \"the day before yesterday\"",
    ),
    (
        "get-project-info-devices-is-object.json",
        "invalid type: map, expected a sequence",
    ),
    (
        "get-project-info-bool-is-string.json",
        "invalid type: string \"yes\", expected a boolean",
    ),
    (
        "get-project-info-truncated.json",
        "EOF while parsing a string",
    ),
    (
        "get-project-info-trailing-garbage.json",
        "trailing characters",
    ),
    (
        "get-project-info-duplicate-field.json",
        "duplicate field `success`",
    ),
    (
        "get-project-info-top-level-array.json",
        "invalid type: map, expected a boolean at line 1 column 1",
    ),
    (
        "get-project-info-top-level-null.json",
        "invalid type: null, expected struct ProjectInfoResponse",
    ),
    (
        "get-project-info-top-level-string.json",
        "invalid type: string \"OK\", expected struct ProjectInfoResponse",
    ),
    (
        "get-project-info-jsonp.txt",
        "expected value at line 1 column 1",
    ),
    (
        "get-project-info-plain-text.txt",
        "expected value at line 1 column 1",
    ),
    ("get-project-info-empty-body.json", "the body is empty"),
    ("get-project-info-whitespace-only.json", "the body is empty"),
    (
        "get-project-info-html-error-page.html",
        "got markup (an HTML or XML page): an HTML page titled \"Gateway Timeout - upstream took too long\"",
    ),
    (
        "get-project-info-xml-error.xml",
        "got markup (an HTML or XML page)",
    ),
    (
        "get-project-info-http-502-html.html",
        "HTTP 502: an HTML page titled \"502 Bad Gateway\"",
    ),
    (
        "get-project-info-http-404-json.json",
        "HTTP 404: Project not found",
    ),
    (
        "get-project-info-invalid-utf8.bin",
        "the body is not valid UTF-8",
    ),
    (
        "get-project-info-utf16-bom.bin",
        "the body is not valid UTF-8",
    ),
    (
        "get-whitelabel-user-success-missing.json",
        "missing field `success`",
    ),
    (
        "get-whitelabel-user-user-is-list.json",
        "invalid type: map, expected an integer (a number without fractional part) at line 1 column 27",
    ),
    (
        "get-whitelabel-user-user-null.json",
        "the response has no `user` object",
    ),
    (
        "get-whitelabel-user-daily-metrics-is-object.json",
        "invalid type: map, expected a sequence",
    ),
    (
        "get-whitelabel-user-metric-huge-integer.json",
        "out of range for a 64-bit signed integer",
    ),
    (
        "get-whitelabel-user-metric-nan.json",
        "expected value at line 1",
    ),
    (
        "get-whitelabel-user-html-error-page.html",
        "an HTML page titled \"Sign in - Corporate SSO\"",
    ),
    (
        "get-whitelabel-user-http-503-html.html",
        "HTTP 503: an HTML page titled \"503 Service Temporarily Unavailable\"",
    ),
    (
        "get-whitelabel-user-http-500-empty.json",
        "HTTP 500: (empty body)",
    ),
    ("get-whitelabel-user-empty-body.json", "the body is empty"),
    (
        "get-whitelabel-user-invalid-utf8.bin",
        "the body is not valid UTF-8",
    ),
    (
        "get-organization-success-null.json",
        "invalid type: null, expected a boolean",
    ),
    (
        "get-organization-organization-missing.json",
        "the response has no `organization` object",
    ),
    (
        "get-organization-organization-is-list.json",
        "invalid length 1, expected struct Organization with 16 elements",
    ),
    (
        "get-organization-users-is-string.json",
        "invalid type: string \"everyone\", expected a sequence",
    ),
    (
        "get-organization-limits-wrong-type.json",
        "invalid type: string \"lots\", expected a number",
    ),
    ("get-organization-truncated.json", "EOF while parsing"),
    (
        "get-organization-html-error-page.html",
        "an HTML page titled \"Maintenance\"",
    ),
    (
        "get-organization-http-429-rate-limited.json",
        "HTTP 429: Too many requests, slow down",
    ),
    (
        "get-organization-invalid-utf8.bin",
        "the body is not valid UTF-8",
    ),
    (
        "list-organizations-success-missing.json",
        "missing field `success`",
    ),
    (
        "list-organizations-organizations-is-object.json",
        "invalid type: map, expected a sequence",
    ),
    (
        "list-organizations-id-is-word.json",
        "invalid type: string \"one\", expected an integer",
    ),
    (
        "list-organizations-html-error-page.html",
        "an HTML page titled \"401 Authorization Required\"",
    ),
    (
        "list-projects-projects-is-object.json",
        "invalid type: map, expected a sequence",
    ),
    (
        "list-projects-success-false.json",
        "success=false: listing is disabled for maintenance",
    ),
    (
        "list-projects-invalid-utf8.bin",
        "the body is not valid UTF-8",
    ),
    ("list-user-projects-empty-body.json", "the body is empty"),
];

/// One bad response and where it is served.
struct Case {
    name: String,
    op: Operation,
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    expected: String,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_responses")
}

fn case_from_file(name: &str, expected: &str) -> Case {
    let body = std::fs::read(corpus_dir().join(name)).expect("corpus file");
    let op = Operation::ALL
        .into_iter()
        .find(|op| name.starts_with(&format!("{}-", op.name())))
        .unwrap_or_else(|| panic!("{name}: the name must start with an operation's name"));
    let status = name
        .split("-http-")
        .nth(1)
        .and_then(|rest| rest.get(..3))
        .map_or(200, |code| code.parse().expect("a status after -http-"));
    let content_type = match name.rsplit('.').next() {
        Some("html") => "text/html",
        Some("xml") => "application/xml",
        Some("txt") => "text/plain",
        _ => "application/json",
    };
    Case {
        name: name.to_string(),
        op,
        status,
        content_type,
        body,
        expected: expected.to_string(),
    }
}

/// Cases too big or too regular to keep as files.
fn generated() -> Vec<Case> {
    const MB50: usize = 50 * 1024 * 1024;
    let mut big = Vec::with_capacity(MB50 + 64);
    big.extend_from_slice(br#"{"padding": ""#);
    big.resize(MB50, b'a');
    big.extend_from_slice(br#"", "project": {"id": 1}}"#);
    let depth = 10_000;
    let mut arrays = br#"{"success": true, "project": {"id": 1}, "csvImportConfig": "#.to_vec();
    arrays.extend(std::iter::repeat_n(b'[', depth));
    arrays.extend(std::iter::repeat_n(b']', depth));
    arrays.push(b'}');
    let mut objects = br#"{"success": true, "project": {"id": 1, "metadata": "#.to_vec();
    for _ in 0..depth {
        objects.extend_from_slice(br#"{"a": "#);
    }
    objects.extend_from_slice(b"null");
    objects.extend(std::iter::repeat_n(b'}', depth + 2));
    let case = |name: &str, body: Vec<u8>, expected: &str| Case {
        name: name.to_string(),
        op: Operation::GetProjectInfo,
        status: 200,
        content_type: "application/json",
        body,
        expected: expected.to_string(),
    };
    vec![
        case(
            "get-project-info-generated-50mb-over-the-limit",
            big,
            "the response is larger than 8388608 bytes (8 MB), the limit for get-project-info",
        ),
        case(
            "get-project-info-generated-10000-nested-arrays",
            arrays,
            "recursion limit exceeded",
        ),
        case(
            "get-project-info-generated-10000-nested-objects",
            objects,
            "recursion limit exceeded",
        ),
    ]
}

fn corpus() -> Vec<Case> {
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("tests/bad_responses")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = EXPECTED.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every corpus file is listed in EXPECTED");
    let mut cases: Vec<Case> = EXPECTED
        .iter()
        .map(|(name, expected)| case_from_file(name, expected))
        .collect();
    cases.extend(generated());
    cases
}

/// Quick retries: the corpus is served persistently, so every retry fails too.
fn client(sb: &SandboxHandle) -> Client {
    let creds = Credentials {
        api_key: None,
        jwt: Some(Secret::new(sb.info.jwt.clone())),
    };
    let mut cfg = ClientConfig::new(sb.info.url.clone(), creds);
    cfg.backoff = Backoff {
        base: Duration::from_millis(2),
        cap: Duration::from_millis(10),
        max_retries: 2,
    };
    Client::new(cfg).expect("client")
}

async fn set_override(sb: &SandboxHandle, case: &Case, path: &str) {
    let url = format!(
        "{}/sandbox/override?path={path}&status={}&content_type={}",
        sb.info.url, case.status, case.content_type
    );
    let resp = common::http()
        .post(url)
        .header("x-jwt-token", &sb.info.jwt)
        .body(case.body.clone())
        .send()
        .await
        .expect("override installed");
    assert_eq!(resp.status().as_u16(), 200, "{}", case.name);
}

async fn clear_override(sb: &SandboxHandle, path: &str) {
    let resp = common::http()
        .delete(format!("{}/sandbox/override?path={path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("override cleared");
    assert_eq!(resp.status().as_u16(), 200);
}

/// Entities whose rows a case may leave old: the targeted one, and what only it
/// leads to (members only it lists, projects only a failed list names).
#[derive(Default)]
struct Untouched {
    projects: BTreeSet<i64>,
    users: BTreeSet<i64>,
    orgs: BTreeSet<i64>,
}

fn list(ids: &BTreeSet<i64>) -> String {
    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

impl Untouched {
    /// SQL selecting the rows of `table` that belong to these entities (None: none do).
    fn clause(&self, table: &TableSpec) -> Option<String> {
        let mut parts = Vec::new();
        let has = |c: &str| table.index_of(c).is_some();
        let (p, u, o) = (list(&self.projects), list(&self.users), list(&self.orgs));
        match table.name {
            "projects" => parts.push(format!("id IN ({p})")),
            "users" => parts.push(format!("id IN ({u})")),
            "organizations" => parts.push(format!("id IN ({o})")),
            "experiments" => parts.push(format!(
                "(scope_kind = 'project' AND scope_id IN ({p})) OR (scope_kind = 'user' AND scope_id IN ({u})) OR (scope_kind = 'organization' AND scope_id IN ({o}))"
            )),
            "user_organizations" | "user_organization_links" | "trials" | "daily_metrics" => {
                parts.push(format!("user_id IN ({u})"))
            }
            _ if has("project_id") => parts.push(format!("project_id IN ({p})")),
            _ if has("organization_id") => parts.push(format!("organization_id IN ({o})")),
            _ => {}
        }
        parts.pop()
    }
}

type Snapshot = BTreeMap<(&'static str, String), Vec<u8>>;

/// Key → content hash of the rows of every table that `filter` keeps.
fn snapshot(
    conn: &rusqlite::Connection,
    filter: impl Fn(&TableSpec) -> Option<String>,
) -> Snapshot {
    let mut out = Snapshot::new();
    for table in spec::TABLES {
        let Some(filter) = filter(table) else {
            continue;
        };
        let key: Vec<String> = table
            .key
            .iter()
            .map(|c| format!("CAST(\"{}\" AS TEXT)", c.name))
            .collect();
        let sql = format!(
            "SELECT {}, content_hash FROM {} WHERE {filter}",
            key.join(" || '|' || "),
            table.name
        );
        let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .expect("rows");
        for row in rows {
            let (k, h) = row.expect("row");
            out.insert((table.name, k), h);
        }
    }
    out
}

/// Live rows that do not belong to `untouched`.
fn others(conn: &rusqlite::Connection, untouched: &Untouched) -> Snapshot {
    snapshot(conn, |t| {
        Some(match untouched.clause(t) {
            Some(c) => format!("removed_at IS NULL AND NOT ({c})"),
            None => "removed_at IS NULL".into(),
        })
    })
}

/// All rows (live or not) of the untouched entities, except the project rows that
/// the project lists and organizations also carry (those are refreshed from there).
fn kept(conn: &rusqlite::Connection, untouched: &Untouched) -> Snapshot {
    snapshot(conn, |t| match t.name {
        "projects" | "project_collaborators" => None,
        _ => untouched.clause(t),
    })
}

fn ids(conn: &rusqlite::Connection, sql: &str) -> Vec<i64> {
    let mut stmt = conn.prepare(sql).expect("sql");
    stmt.query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("ids")
}

/// Where a case is served and what it may leave old.
struct Target {
    /// The path served badly.
    path: String,
    /// The operation and entity the error must name.
    operation: &'static str,
    entity: Option<String>,
    /// The entity the bad answer belongs to: its rows must stay as they were.
    kept: Untouched,
    /// What may be old after the bad run: the entity and what only it leads to
    /// (members only it lists, its projects, projects only a failed list names).
    stale: Untouched,
}

/// Active project ids of list-projects or list-user-projects.
async fn listed(client: &Client, op: Operation) -> BTreeSet<i64> {
    let list = if op == Operation::ListProjects {
        client.list_projects().await
    } else {
        client.list_user_projects().await
    }
    .expect("project list")
    .value
    .projects;
    list.iter()
        .filter(|p| p.deleted_date.is_none())
        .filter_map(|p| p.id)
        .collect()
}

/// For a failing project list, the other one (the sync reads both).
fn other_project_list(op: Operation) -> Option<Operation> {
    match op {
        Operation::ListProjects => Some(Operation::ListUserProjects),
        Operation::ListUserProjects => Some(Operation::ListProjects),
        _ => None,
    }
}

/// The target of a case's operation on the mirror `conn` (clean, current).
fn target(op: Operation, sb: &SandboxHandle, conn: &rusqlite::Connection) -> Target {
    let mut kept = Untouched::default();
    let mut stale = Untouched::default();
    let (path, entity) = match op {
        Operation::GetOrganization => {
            let wl = sb.info.whitelabel_organization_id;
            let org = ids(
                conn,
                &format!("SELECT id FROM organizations WHERE id != {wl} ORDER BY id LIMIT 1"),
            )[0];
            kept.orgs.insert(org);
            stale.orgs.insert(org);
            stale.users.extend(ids(
                conn,
                &format!(
                    "SELECT user_id FROM organization_members m WHERE organization_id = {org} AND removed_at IS NULL \
                     AND NOT EXISTS (SELECT 1 FROM organization_members o WHERE o.user_id = m.user_id \
                     AND o.organization_id != {org} AND o.removed_at IS NULL)"
                ),
            ));
            stale.projects.extend(ids(
                conn,
                &format!("SELECT id FROM projects WHERE owner_organization_id = {org}"),
            ));
            (
                format!("/v1/api/organizations/{org}"),
                Some(format!("organization {org}")),
            )
        }
        Operation::GetWhitelabelUser => {
            let user = ids(conn, "SELECT id FROM users ORDER BY id LIMIT 1")[0];
            kept.users.insert(user);
            stale.users.insert(user);
            (
                format!(
                    "/v1/api/organizations/{}/whitelabel/users/{user}",
                    sb.info.whitelabel_organization_id
                ),
                Some(format!("user {user}")),
            )
        }
        Operation::ListOrganizations => {
            // Discovery fails: nothing is fetched, everything stays as it was.
            kept.orgs.extend(ids(conn, "SELECT id FROM organizations"));
            kept.users.extend(ids(conn, "SELECT id FROM users"));
            kept.projects.extend(ids(conn, "SELECT id FROM projects"));
            ("/v1/api/organizations".into(), None)
        }
        Operation::ListProjects => ("/v1/api/projects".into(), None),
        Operation::ListUserProjects => ("/v1/api/user/projects".into(), None),
        Operation::GetProjectInfo => {
            let project = ids(
                conn,
                "SELECT project_id FROM project_info ORDER BY project_id LIMIT 1",
            )[0];
            kept.projects.insert(project);
            stale.projects.insert(project);
            (
                format!("/v1/api/{project}"),
                Some(format!("project {project}")),
            )
        }
        other => panic!("no target for {}", other.name()),
    };
    Target {
        path,
        operation: op.name(),
        entity,
        kept,
        stale,
    }
}

/// Runs one case on `mirror` (synced cleanly at the current day); returns the
/// problems found (empty = pass) and a fresh clean mirror for the next case.
async fn run_case(
    sb: &SandboxHandle,
    client: &Client,
    case: &Case,
    mirror: (tempfile::TempDir, PathBuf),
) -> (Vec<String>, (tempfile::TempDir, PathBuf)) {
    let mut problems = Vec::new();
    let (_dir, db) = &mirror;
    let conn = common::open(db);
    let mut target = target(case.op, sb, &conn);
    let kept_before = kept(&conn, &target.kept);
    let all_before = others(&conn, &Untouched::default());

    set_override(sb, case, &target.path).await;
    assert_eq!(common::admin_post(sb, "/sandbox/advance?days=1").await, 200);
    let outcome = sync::run(client, &common::sync_opts(sb, db), None)
        .await
        .unwrap_or_else(|e| panic!("{}: the sync itself failed: {e}", case.name));
    clear_override(sb, &target.path).await;
    if let Some(other_list) = other_project_list(case.op) {
        // Projects only the failed list names (today) were not fetched this run.
        let reached = listed(client, other_list).await;
        let failed = listed(client, case.op).await;
        target.stale.projects.extend(
            ids(&conn, "SELECT id FROM projects")
                .into_iter()
                .chain(failed)
                .filter(|id| !reached.contains(id)),
        );
    }
    let expected_status = if case.op == Operation::ListOrganizations {
        RunStatus::Failed
    } else {
        RunStatus::Partial
    };
    if outcome.status != expected_status {
        problems.push(format!(
            "status {:?}, expected {expected_status:?}",
            outcome.status
        ));
    }
    let bad_run = outcome.run_id;
    problems.extend(error_problems(
        case,
        &target,
        &recorded_errors(&conn, bad_run),
    ));
    let removed = removed_by(&conn, bad_run);
    if removed != 0 {
        problems.push(format!("{removed} rows marked removed by a partial run"));
    }
    if kept(&conn, &target.kept) != kept_before {
        problems.push("the targeted entity's rows changed".into());
    }
    if case.op == Operation::ListOrganizations && others(&conn, &Untouched::default()) != all_before
    {
        problems.push("a failed discovery changed the mirror".into());
    }

    // The reference: a clean sync of the same day into a fresh mirror. Apart from
    // the untouched entities, the bad run stored exactly the same.
    let next = common::scratch();
    let reference = sync::run(client, &common::sync_opts(sb, &next.1), None)
        .await
        .expect("reference sync");
    assert_eq!(
        reference.status,
        RunStatus::Succeeded,
        "{}: the sandbox is clean again: {:?}",
        case.name,
        reference.errors
    );
    if case.op != Operation::ListOrganizations {
        problems.extend(differences_from_a_clean_sync(
            &conn,
            &common::open(&next.1),
            &target.stale,
            bad_run,
        ));
    }
    (problems, next)
}

/// A `sync_errors` row: operation, entity, HTTP status, message.
type ErrorRow = (String, Option<String>, Option<i64>, String);

fn recorded_errors(conn: &rusqlite::Connection, run: i64) -> Vec<ErrorRow> {
    let mut stmt = conn
        .prepare(
            "SELECT operation, entity, http_status, message FROM sync_errors WHERE run_id = ?1",
        )
        .expect("sql");
    stmt.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("errors")
        .collect::<Result<_, _>>()
        .expect("errors")
}

/// The run recorded exactly one error, and it names the operation, the entity
/// (or the path) and what was wrong.
fn error_problems(case: &Case, target: &Target, errors: &[ErrorRow]) -> Vec<String> {
    let mut problems = Vec::new();
    let Target {
        path,
        operation,
        entity,
        ..
    } = target;
    let matching = errors.iter().any(|(op, ent, status, message)| {
        op == operation
            && ent == entity
            && message.contains(&case.expected)
            && (message.contains(path) || entity.as_ref().is_some_and(|e| message.contains(e)))
            && (case.status == 200 || *status == Some(i64::from(case.status)))
    });
    if !matching {
        problems.push(format!(
            "no error ({operation}, {entity:?}, \"{}\") among {errors:?}",
            case.expected
        ));
    }
    if errors.len() != 1 {
        problems.push(format!(
            "{} errors instead of one: {errors:?}",
            errors.len()
        ));
    }
    if errors.iter().any(|e| e.3.contains("panicked")) {
        problems.push("a fetch task panicked".into());
    }
    problems
}

/// Rows of every table that `run` marked removed.
fn removed_by(conn: &rusqlite::Connection, run: i64) -> i64 {
    spec::TABLES
        .iter()
        .map(|t| {
            common::count(
                conn,
                &format!("SELECT COUNT(*) FROM {} WHERE removed_run = {run}", t.name),
            )
        })
        .sum()
}

/// Every row a clean sync of the day (`reference`) has, the bad run stored
/// identically, apart from the `stale` entities. The mirror may hold more: rows a
/// complete run would have marked removed (a partial run never removes), all
/// written before the bad run.
fn differences_from_a_clean_sync(
    conn: &rusqlite::Connection,
    reference: &rusqlite::Connection,
    stale: &Untouched,
    bad_run: i64,
) -> Vec<String> {
    let mut problems = Vec::new();
    let ours = others(conn, stale);
    let theirs = others(reference, stale);
    let differ: Vec<_> = theirs
        .iter()
        .filter(|(k, v)| ours.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    if !differ.is_empty() {
        problems.push(format!(
            "{} rows differ from a clean sync of the day, e.g. {:?}",
            differ.len(),
            &differ[..differ.len().min(5)]
        ));
    }
    let fresh = common::count(
        conn,
        &format!(
            "SELECT COUNT(*) FROM daily_metrics WHERE run_id = {bad_run} AND removed_at IS NULL"
        ),
    );
    if fresh == 0 {
        problems.push("no daily metrics of the new day".into());
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_response_is_a_clear_error_and_the_rest_is_stored() {
    let cases = corpus();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let sb = common::sandbox(Profile::Tiny).await;
    let client = client(&sb);
    let mut mirror = common::scratch();
    let first = sync::run(&client, &common::sync_opts(&sb, &mirror.1), None)
        .await
        .expect("clean sync");
    assert_eq!(first.status, RunStatus::Succeeded, "{:?}", first.errors);
    let started = Instant::now();
    let mut failures = Vec::new();
    for case in &cases {
        let (problems, next) = run_case(&sb, &client, case, mirror).await;
        mirror = next;
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    eprintln!("{} cases in {:?}", cases.len(), started.elapsed());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_override_route_needs_the_jwt_and_serves_bytes_verbatim() {
    let sb = common::sandbox(Profile::Tiny).await;
    let admin = common::admin(&sb);
    let path = format!("/v1/api/{}", sb.info.project_id);
    let http = common::http();
    let install = |jwt: &str| {
        http.post(format!(
            "{}/sandbox/override?path={path}&status=418&content_type=text/plain",
            sb.info.url
        ))
        .header("x-jwt-token", jwt)
        .body(&b"\xff teapot"[..])
        .send()
    };
    assert_eq!(
        install("wrong").await.expect("answer").status().as_u16(),
        401
    );
    assert_eq!(
        install(&sb.info.jwt)
            .await
            .expect("answer")
            .status()
            .as_u16(),
        200
    );
    let served = http
        .get(format!("{}{path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("served");
    assert_eq!(served.status().as_u16(), 418);
    assert_eq!(
        served.headers()["content-type"].to_str().expect("ascii"),
        "text/plain"
    );
    assert_eq!(&served.bytes().await.expect("body")[..], b"\xff teapot");
    clear_override(&sb, &path).await;
    let healed = admin
        .get_project_info(sb.info.project_id, None)
        .await
        .expect("normal again");
    assert_eq!(
        healed.value.project.and_then(|p| p.id),
        Some(sb.info.project_id)
    );
}

/// A list that repeats a key (two daily-metrics entries for one day) cannot be
/// stored as it is, since the key is the table's primary key. The last entry of each
/// key is kept, the run ends `partial` and names the document, and everything else
/// is stored as a clean sync stores it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_key_in_a_list_keeps_the_last_entry_and_is_reported() {
    let sb = common::sandbox(Profile::Tiny).await;
    let client = client(&sb);
    let (_control_dir, control) = common::scratch();
    let clean = sync::run(&client, &common::sync_opts(&sb, &control), None)
        .await
        .expect("clean sync");
    assert_eq!(clean.status, RunStatus::Succeeded, "{:?}", clean.errors);
    let control_conn = common::open(&control);
    let user = common::count(
        &control_conn,
        "SELECT user_id FROM daily_metrics GROUP BY user_id ORDER BY COUNT(*) DESC, user_id LIMIT 1",
    );
    let days = common::count(
        &control_conn,
        &format!("SELECT COUNT(*) FROM daily_metrics WHERE user_id = {user}"),
    );
    assert!(days > 1, "the user has a history of daily metrics");

    // The user's real answer, with its first day sent once more at the end with
    // another CPU time.
    let path =
        orgledger::api::operation::whitelabel_user_path(sb.info.whitelabel_organization_id, user);
    let answer = common::http()
        .get(format!("{}{path}", sb.info.url))
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("get-whitelabel-user answers")
        .bytes()
        .await
        .expect("get-whitelabel-user body");
    let mut body: serde_json::Value =
        serde_json::from_slice(&answer).expect("get-whitelabel-user is JSON");
    let metrics = body["user"]["dailyMetrics"]
        .as_array_mut()
        .expect("daily metrics");
    let mut repeated = metrics[0].clone();
    repeated["cpuComputeTimeSeconds"] = serde_json::json!(987_654);
    metrics.push(repeated);
    let day = metrics[0]["date"].as_str().expect("date")[..10].to_string();
    let case = Case {
        name: "get-whitelabel-user-repeated-day".into(),
        op: Operation::GetWhitelabelUser,
        status: 200,
        content_type: "application/json",
        body: serde_json::to_vec(&body).expect("body"),
        expected: String::new(),
    };
    set_override(&sb, &case, &path).await;

    let (_dir, db) = common::scratch();
    let run = sync::run(&client, &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync with a repeated key");
    assert_eq!(run.status, RunStatus::Partial, "{:?}", run.errors);
    let conn = common::open(&db);
    let message: String = conn
        .query_row(
            "SELECT message FROM sync_errors WHERE operation = 'get-whitelabel-user' AND entity = ?1",
            [format!("user {user} on {day}")],
            |r| r.get(0),
        )
        .expect("the repeat is recorded against the user and the day");
    assert!(
        message.starts_with(&format!("daily_metrics: 2 records for the day {day}")),
        "{message}"
    );
    assert_eq!(
        common::count(&conn, "SELECT COUNT(*) FROM sync_errors"),
        1,
        "nothing else failed"
    );
    let (stored, cpu): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM daily_metrics WHERE user_id = ?1), \
             (SELECT cpu_compute_time_seconds FROM daily_metrics WHERE user_id = ?1 AND day = ?2)",
            rusqlite::params![user, day],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the user's days");
    assert_eq!(
        (stored, cpu),
        (days, 987_654),
        "one row per day, the last kept"
    );
    for table in [
        "daily_metrics",
        "users",
        "organizations",
        "project_info",
        "trials",
    ] {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        assert_eq!(
            common::count(&conn, &sql),
            common::count(&control_conn, &sql),
            "{table}: everything else is stored"
        );
    }
    clear_override(&sb, &path).await;
}
