//! Mapping of API documents to mirror rows: one function per document kind.
//!
//! This runs on the fetching tasks (in parallel), not on the writer thread, so the
//! single SQLite writer only compares hashes and executes statements. An element
//! that cannot become a row (a list entry without its key) is skipped and reported
//! as a problem; the rest of the document is stored.

mod organization;
mod project_info;
mod project_list;
mod user_organizations;
mod whitelabel_user;

pub use organization::organization;
pub use project_info::project_info;
pub use project_list::project_list;
pub use user_organizations::user_organizations;
pub use whitelabel_user::whitelabel_user;

use crate::api::models::{Collaborator, Project};
use crate::api::tolerant::Timestamp;
use crate::mirror::spec::{self, TableSpec};
use crate::mirror::table::Row;
use rusqlite::types::Value;

/// Rows destined for one table.
#[derive(Debug)]
pub enum RowSet {
    /// One row of a root table, upserted by key.
    Root {
        /// The table.
        table: &'static TableSpec,
        /// The row.
        row: Row,
    },
    /// The complete list of one parent's children.
    Scope {
        /// The table.
        table: &'static TableSpec,
        /// Values of the table's scope columns.
        scope: Vec<Value>,
        /// The rows.
        rows: Vec<Row>,
    },
    /// A root row kept as stored although its document was not fetched (a deleted
    /// project the service no longer serves): it counts as seen by the run.
    Kept {
        /// The table.
        table: &'static TableSpec,
        /// Values of the key columns.
        key: Vec<Value>,
    },
}

/// Everything one document becomes.
#[derive(Debug, Default)]
pub struct DocRows {
    /// Row sets, parents before children.
    pub sets: Vec<RowSet>,
    /// Elements that could not be stored as sent, described for `sync_errors`.
    pub problems: Vec<Problem>,
}

/// One element of a document that could not be stored as sent: a `sync_errors` row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// What it concerns when that is narrower than the document (the document's own
    /// entity when `None`).
    pub entity: Option<String>,
    /// What was wrong and what was stored instead.
    pub message: String,
}

impl From<String> for Problem {
    /// A problem of the document as a whole.
    fn from(message: String) -> Self {
        Problem {
            entity: None,
            message,
        }
    }
}

impl DocRows {
    /// Reports an element of the document (of `context`) that cannot become a row.
    fn skipped(&mut self, context: &str, element: &str) {
        self.problems
            .push(format!("{context}: {element} was skipped").into());
    }

    fn root(&mut self, table: &'static TableSpec, row: Vec<Value>) {
        let row = Row::new(row);
        self.sets.push(RowSet::Root { table, row });
    }

    /// A parent's complete list; entries whose key a later entry repeats are dropped
    /// and reported in one problem.
    fn scope(&mut self, table: &'static TableSpec, scope: Vec<Value>, rows: Vec<Vec<Value>>) {
        let total = rows.len();
        let repeated = self.scope_keeping_last(table, scope, rows).len();
        if repeated > 0 {
            let key: Vec<&str> = table.key.iter().map(|c| c.name).collect();
            self.problems.push(
                format!(
                    "{}: {repeated} of {total} entries repeat the key ({}) of a later entry; the last of each was kept",
                    table.name,
                    key.join(", ")
                )
                .into(),
            );
        }
    }

    /// A parent's complete list, keeping the last entry of each key; returns the
    /// entries dropped, for the caller to report.
    fn scope_keeping_last(
        &mut self,
        table: &'static TableSpec,
        scope: Vec<Value>,
        rows: Vec<Vec<Value>>,
    ) -> Vec<Row> {
        let mut rows: Vec<Row> = rows.into_iter().map(Row::new).collect();
        let dropped = keep_last_of_each_key(&mut rows, table.key.len());
        self.sets.push(RowSet::Scope { table, scope, rows });
        dropped
    }
}

/// Drops every row whose key a later row of the list repeats, and returns them. A
/// list with a repeated key cannot be stored as it is (the key is the table's
/// primary key), and the API's lists are ordered oldest first.
fn keep_last_of_each_key(rows: &mut Vec<Row>, key_len: usize) -> Vec<Row> {
    // Most lists come sorted by key (daily metrics by date): strictly ascending
    // keys are distinct, found without hashing the million keys of a large sync.
    let ascending = rows.windows(2).all(|pair| {
        key_order(&pair[0].values[..key_len], &pair[1].values[..key_len])
            == Some(std::cmp::Ordering::Less)
    });
    if ascending {
        return Vec::new();
    }
    // The 128-bit digest of the key stands for the key: no key text is built for
    // the million rows of a large sync.
    let digests: Vec<[u8; 16]> = rows
        .iter()
        .map(|row| crate::mirror::table::content_hash(&row.values[..key_len]))
        .collect();
    let last: std::collections::HashMap<&[u8; 16], usize> =
        digests.iter().enumerate().map(|(i, d)| (d, i)).collect();
    if last.len() == rows.len() {
        return Vec::new();
    }
    let (kept, dropped): (Vec<_>, Vec<_>) = std::mem::take(rows)
        .into_iter()
        .enumerate()
        .partition(|(index, _)| last.get(&digests[*index]) == Some(index));
    *rows = kept.into_iter().map(|(_, row)| row).collect();
    dropped.into_iter().map(|(_, row)| row).collect()
}

/// Order of two keys made of integers and texts (None for other values, whose
/// lists then take the hashing path).
fn key_order(a: &[Value], b: &[Value]) -> Option<std::cmp::Ordering> {
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
            (Value::Text(x), Value::Text(y)) => x.cmp(y),
            _ => return None,
        };
        if order.is_ne() {
            return Some(order);
        }
    }
    Some(std::cmp::Ordering::Equal)
}

/// Conversion of a model value into one SQL cell, following the mirror's
/// conventions (see [`spec::Ty`]).
pub trait Cell {
    /// The SQL value.
    fn cell(&self) -> Value;
}

impl Cell for Option<i64> {
    fn cell(&self) -> Value {
        self.map_or(Value::Null, Value::Integer)
    }
}

impl Cell for Option<f64> {
    fn cell(&self) -> Value {
        self.filter(|f| f.is_finite())
            .map_or(Value::Null, Value::Real)
    }
}

impl Cell for Option<crate::api::tolerant::Quantity> {
    fn cell(&self) -> Value {
        use crate::api::tolerant::Quantity;
        match *self {
            Some(Quantity::Whole(n)) => Value::Integer(n),
            Some(Quantity::Fraction(f)) => Some(f).cell(),
            None => Value::Null,
        }
    }
}

impl Cell for Option<bool> {
    fn cell(&self) -> Value {
        self.map_or(Value::Null, |b| Value::Integer(i64::from(b)))
    }
}

impl Cell for Option<String> {
    fn cell(&self) -> Value {
        self.as_ref()
            .map_or(Value::Null, |s| Value::Text(s.clone()))
    }
}

impl Cell for Option<Timestamp> {
    fn cell(&self) -> Value {
        self.as_ref()
            .map_or(Value::Null, |t| Value::Text(t.as_text()))
    }
}

impl Cell for Option<serde_json::Value> {
    fn cell(&self) -> Value {
        match self {
            None | Some(serde_json::Value::Null) => Value::Null,
            Some(v) => Value::Text(v.to_string()),
        }
    }
}

impl<T: serde::Serialize> Cell for Vec<T> {
    fn cell(&self) -> Value {
        serde_json::to_string(self).map_or(Value::Null, Value::Text)
    }
}

impl Cell for i64 {
    fn cell(&self) -> Value {
        Value::Integer(*self)
    }
}

impl Cell for &str {
    fn cell(&self) -> Value {
        Value::Text((*self).to_string())
    }
}

/// The base user-record cells shared by members, collaborators and users, in the
/// order of `spec`'s `user_record_columns!`.
macro_rules! user_cells {
    ($u:expr) => {{
        let staff = $u.staff_info.as_ref();
        vec![
            $u.username.cell(),
            $u.name.cell(),
            $u.email.cell(),
            $u.created.cell(),
            staff.and_then(|s| s.is_staff).cell(),
            staff.and_then(|s| s.has_sudo_rights).cell(),
            staff.and_then(|s| s.company_name.clone()).cell(),
            $u.pending.cell(),
            $u.activated.cell(),
            $u.mfa_configured.cell(),
            $u.photo.cell(),
            $u.last_seen.cell(),
            $u.job_title.cell(),
            $u.permissions.cell(),
            $u.company_name.cell(),
            $u.payment_customer_id.cell(),
            $u.has_pending_payments.cell(),
            $u.tier.cell(),
            $u.idps.cell(),
        ]
    }};
}
pub(crate) use user_cells;

fn with_key(mut key: Vec<Value>, cells: Vec<Value>) -> Vec<Value> {
    key.extend(cells);
    key
}

fn limit_cells(limits: Option<&crate::api::models::EntitlementLimits>) -> [Value; 5] {
    [
        limits.and_then(|l| l.total_storage).cell(),
        limits.and_then(|l| l.compute_time_per_year).cell(),
        limits.and_then(|l| l.gpu_compute_time_per_year).cell(),
        limits.and_then(|l| l.number_of_projects).cell(),
        limits.and_then(|l| l.number_of_users).cell(),
    ]
}

fn collaborator_row(project_id: i64, c: &Collaborator) -> Option<Vec<Value>> {
    let mut row = with_key(vec![project_id.cell(), c.id?.cell()], user_cells!(c));
    row.push(c.is_owner.cell());
    Some(row)
}

/// A project row and its collaborators.
fn project_rows(out: &mut DocRows, p: &Project, context: &str) {
    let Some(id) = p.id else {
        out.skipped(context, "a project without an id");
        return;
    };
    let row = vec![
        id.cell(),
        p.name.cell(),
        p.description.cell(),
        p.created.cell(),
        p.owner.cell(),
        p.owner_is_developer_profile.cell(),
        p.labeling_method.cell(),
        p.metadata.cell(),
        p.is_enterprise_project.cell(),
        p.whitelabel_id.cell(),
        p.tier.cell(),
        p.has_public_version.cell(),
        p.is_public.cell(),
        p.allows_live_public_access.cell(),
        p.ind_pause_processing_samples.cell(),
        p.public_project_listed.cell(),
        p.last_accessed.cell(),
        p.last_modified.cell(),
        p.last_modification_details.cell(),
        p.logo.cell(),
        p.owner_user_id.cell(),
        p.owner_organization_id.cell(),
        p.owner_avatar.cell(),
        p.developer_profile_user_id.cell(),
        p.data_explorer_screenshot.cell(),
        p.whitelabel_name.cell(),
        p.tags.cell(),
        p.category.cell(),
        p.license.cell(),
        p.deleted_date.cell(),
        p.full_deletion_date.cell(),
        p.scheduled_full_deletion_date.cell(),
    ];
    out.root(&spec::PROJECTS, row);
    let mut collaborators = Vec::with_capacity(p.collaborators.len());
    for c in &p.collaborators {
        match collaborator_row(id, c) {
            Some(row) => collaborators.push(row),
            None => out.skipped(
                context,
                &format!("a collaborator of project {id} without an id"),
            ),
        }
    }
    out.scope(&spec::PROJECT_COLLABORATORS, vec![id.cell()], collaborators);
}

fn experiment_rows(
    out: &mut DocRows,
    kind: &str,
    id: i64,
    experiments: &[crate::api::models::Experiment],
) {
    let rows = experiments
        .iter()
        .filter_map(|e| {
            Some(vec![
                kind.cell(),
                id.cell(),
                e.r#type.clone()?.as_str().cell(),
                e.title.cell(),
                e.enabled.cell(),
                e.show_to_user.cell(),
                e.help.cell(),
            ])
        })
        .collect();
    out.scope(&spec::EXPERIMENTS, vec![kind.cell(), id.cell()], rows);
}
/// A document that was not fetched but whose stored row of `table` stands.
pub fn kept(table: &'static TableSpec, key: Vec<Value>) -> DocRows {
    DocRows {
        sets: vec![RowSet::Kept { table, key }],
        problems: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::*;

    fn assert_widths(rows: &DocRows) {
        assert!(!rows.sets.is_empty());
        for set in &rows.sets {
            match set {
                RowSet::Root { table, row } => {
                    assert_eq!(row.values.len(), table.width(), "{}", table.name)
                }
                RowSet::Scope { table, scope, rows } => {
                    assert_eq!(scope.len(), table.scope.len(), "{} scope", table.name);
                    for row in rows {
                        assert_eq!(row.values.len(), table.width(), "{}", table.name);
                    }
                }
                RowSet::Kept { table, key } => {
                    assert_eq!(key.len(), table.key.len(), "{} key", table.name)
                }
            }
        }
    }

    pub(super) fn project() -> Project {
        Project {
            id: Some(7),
            collaborators: vec![Collaborator {
                id: Some(3),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn every_mapping_fills_every_column() {
        let org = OrganizationResponse {
            organization: Some(Organization {
                users: vec![OrganizationMember {
                    id: Some(3),
                    ..Default::default()
                }],
                projects: vec![project()],
                ..Default::default()
            }),
            datasets: vec![Dataset {
                dataset: Some("d".into()),
                ..Default::default()
            }],
            experiments: vec![Experiment {
                r#type: Some("x".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let rows = organization(1, &org);
        assert_widths(&rows);
        assert!(rows.problems.is_empty());

        let user = WhitelabelUserResponse {
            user: Some(WhitelabelUser {
                id: Some(3),
                organizations: vec![OrganizationSummary {
                    id: Some(1),
                    ..Default::default()
                }],
                trials: vec![Trial {
                    id: Some(9),
                    ..Default::default()
                }],
                daily_metrics: vec![DailyMetrics {
                    date: "2026-01-02T00:00:00Z".parse().ok(),
                    ..Default::default()
                }],
                projects: vec![project()],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_widths(&whitelabel_user(1, 3, &user));

        let info = ProjectInfoResponse {
            project: Some(project()),
            devices: vec![Device {
                device_id: Some("dev".into()),
                sensors: vec![Sensor {
                    name: Some("accel".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            latency_devices: vec![LatencyDevice {
                mcu: Some("m".into()),
                ..Default::default()
            }],
            train_job_notification_uids: vec![3],
            ..Default::default()
        };
        assert_widths(&project_info(7, &info, false));
        assert_widths(&project_list(vec![project()], "list"));
        let links = OrganizationLinkList {
            organizations: vec![OrganizationLink {
                id: Some(1),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_widths(&user_organizations(3, &links));
    }

    #[test]
    fn only_a_repeated_key_drops_rows_sorted_or_not() {
        let rows = |keys: &[(i64, &str)]| -> Vec<Row> {
            keys.iter()
                .enumerate()
                .map(|(i, (id, day))| {
                    Row::new(vec![
                        Value::Integer(*id),
                        Value::Text(day.to_string()),
                        Value::Integer(i as i64),
                    ])
                })
                .collect()
        };
        let tags =
            |rows: &[Row]| -> Vec<Value> { rows.iter().map(|r| r.values[2].clone()).collect() };
        // Sorted and distinct: untouched.
        let mut sorted = rows(&[(1, "a"), (1, "b"), (2, "a")]);
        assert_eq!(keep_last_of_each_key(&mut sorted, 2).len(), 0);
        assert_eq!(sorted.len(), 3);
        // Sorted with a neighbour repeated: the later one stays.
        let mut adjacent = rows(&[(1, "a"), (1, "a"), (1, "b")]);
        assert_eq!(keep_last_of_each_key(&mut adjacent, 2).len(), 1);
        assert_eq!(tags(&adjacent), [Value::Integer(1), Value::Integer(2)]);
        // Unsorted and distinct: untouched, in its order.
        let mut unsorted = rows(&[(2, "a"), (1, "b"), (1, "a")]);
        assert_eq!(keep_last_of_each_key(&mut unsorted, 2).len(), 0);
        assert_eq!(
            tags(&unsorted),
            [Value::Integer(0), Value::Integer(1), Value::Integer(2)]
        );
    }
}
