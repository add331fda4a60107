//! `--all-fields`: a `field.changed` row for every other column of the entity tables
//! whose value moved between two versions. The SQL is generated from
//! [`crate::mirror::spec`] (one statement per table) so a column added to the mirror
//! is covered without editing a query.

use crate::mirror::spec::{
    ORGANIZATION_MEMBERS, ORGANIZATIONS, PROJECT_INFO, PROJECTS, TRIALS, TableSpec, USERS,
};

/// How a column relates to the named kinds.
enum Covered {
    /// Every change of it has a kind of its own.
    Always,
    /// A kind reports the changes where this SQL condition holds (`{p}` is the
    /// previous value); the others are `field.changed`.
    When(&'static str),
}

/// One entity table: how its rows are named, and which columns the kinds report.
struct Entity {
    spec: &'static TableSpec,
    entity_type: &'static str,
    id: &'static str,
    name: &'static str,
    covered: &'static [(&'static str, Covered)],
}

/// Credentials never leave the mirror, even as a change.
const SECRET_COLUMNS: &[&str] = &[
    "development_api_key",
    "development_hmac_key",
    "development_api_key_fingerprint",
    "development_hmac_key_fingerprint",
];

const ENTITIES: &[Entity] = &[
    Entity {
        spec: &ORGANIZATIONS,
        entity_type: "organization",
        id: "CAST(id AS TEXT)",
        name: "name",
        covered: &[
            ("limit_total_storage", Covered::Always),
            ("limit_compute_time_per_year", Covered::Always),
            ("limit_gpu_compute_time_per_year", Covered::Always),
            ("limit_number_of_projects", Covered::Always),
            ("limit_number_of_users", Covered::Always),
        ],
    },
    Entity {
        spec: &ORGANIZATION_MEMBERS,
        entity_type: "member",
        id: "organization_id || '/' || user_id",
        name: "name || ' in ' || COALESCE((SELECT o.name FROM main.organizations o \
               WHERE o.id = v.organization_id), 'organization ' || organization_id)",
        covered: &[("role", Covered::Always)],
    },
    Entity {
        spec: &USERS,
        entity_type: "user",
        id: "CAST(id AS TEXT)",
        name: "name",
        covered: &[("suspended", Covered::When("suspended = 1 AND {p} IS NOT 1"))],
    },
    Entity {
        spec: &PROJECTS,
        entity_type: "project",
        id: "CAST(id AS TEXT)",
        name: "name",
        covered: &[("deleted_date", Covered::When("{p} IS NULL"))],
    },
    Entity {
        spec: &PROJECT_INFO,
        entity_type: "project",
        id: "CAST(project_id AS TEXT)",
        name: "(SELECT p.name FROM main.projects p WHERE p.id = v.project_id)",
        covered: &[("compute_period_start", Covered::Always)],
    },
    Entity {
        spec: &TRIALS,
        entity_type: "trial",
        id: "CAST(id AS TEXT)",
        name: "(SELECT o.name FROM main.organizations o WHERE o.id = v.organization_id)",
        covered: &[
            ("upgraded_date", Covered::When("{p} IS NULL")),
            ("expired_date", Covered::When("{p} IS NULL")),
            ("deleted_date", Covered::When("{p} IS NULL")),
        ],
    },
];

/// The statements, one per entity table, with the same columns and parameters as
/// `queries/changes.sql`.
pub fn statements() -> Vec<String> {
    ENTITIES.iter().map(statement).collect()
}

fn statement(e: &Entity) -> String {
    let spec = e.spec;
    let keys: Vec<String> = spec.key.iter().map(|c| format!("\"{}\"", c.name)).collect();
    let fields: Vec<&str> = spec
        .columns
        .iter()
        .map(|c| c.name)
        .filter(|n| !SECRET_COLUMNS.contains(n))
        .collect();
    let cols: Vec<String> = keys
        .iter()
        .cloned()
        .chain(fields.iter().map(|f| format!("\"{f}\"")))
        .collect();
    let cols = cols.join(", ");
    let lags: String = fields
        .iter()
        .enumerate()
        .map(|(i, f)| format!(", LAG(\"{f}\") OVER w AS p{i}"))
        .collect();
    let rows: Vec<String> = fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let extra = match e.covered.iter().find(|(c, _)| c == f) {
                Some((_, Covered::Always)) => return None,
                Some((_, Covered::When(cond))) => {
                    format!(" AND NOT ({})", cond.replace("{p}", &format!("p{i}")))
                }
                None => String::new(),
            };
            Some(format!(
                "SELECT valid_from AS observed_at, run_id, 'field.changed' AS kind, \
                 '{ty}' AS entity_type, {id} AS entity_id, {name} AS entity_name, \
                 '{f}' AS field, CAST(p{i} AS TEXT) AS before, CAST(\"{f}\" AS TEXT) AS after \
                 FROM v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL \
                 AND \"{f}\" IS NOT p{i}{extra}",
                ty = e.entity_type,
                id = e.id,
                name = e.name,
            ))
        })
        .collect();
    format!(
        "WITH v AS MATERIALIZED (SELECT x.*, LAG(valid_from) OVER w AS prev_from, \
           LAG(removed_at) OVER w AS prev_removed_at{lags} \
           FROM (SELECT {cols}, valid_from, run_id, removed_at FROM main.{t} \
                 UNION ALL SELECT {cols}, valid_from, run_id, removed_at FROM {t}_archived \
                 WHERE valid_to >= :since_at) x \
           WINDOW w AS (PARTITION BY {keys} ORDER BY valid_from, run_id)) \
         SELECT * FROM ({rows}) \
          WHERE (observed_at, run_id) > (:since_at, :since_run) \
            AND (observed_at, run_id) <= (:until_at, :until_run)",
        t = spec.name,
        keys = keys.join(", "),
        rows = rows.join(" UNION ALL "),
    )
}
