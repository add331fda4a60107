//! Mapping of API documents to mirror rows: one function per document kind.
//!
//! This runs on the fetching tasks (in parallel), not on the writer thread, so the
//! single SQLite writer only compares hashes and executes statements. An element
//! that cannot become a row (a list entry without its key) is skipped and reported
//! as a problem; the rest of the document is stored.

use crate::api::models::{
    Collaborator, OrganizationLinkList, OrganizationResponse, Project, ProjectInfoResponse,
    WhitelabelUserResponse,
};
use crate::api::secret::Secret;
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
    /// Elements that could not be stored, described for `sync_errors`.
    pub problems: Vec<String>,
}

impl DocRows {
    fn root(&mut self, table: &'static TableSpec, row: Vec<Value>) {
        let row = Row::new(row);
        self.sets.push(RowSet::Root { table, row });
    }

    fn scope(&mut self, table: &'static TableSpec, scope: Vec<Value>, rows: Vec<Vec<Value>>) {
        let mut rows: Vec<Row> = rows.into_iter().map(Row::new).collect();
        let total = rows.len();
        let repeated = keep_last_of_each_key(&mut rows, table.key.len());
        if repeated > 0 {
            let key: Vec<&str> = table.key.iter().map(|c| c.name).collect();
            self.problems.push(format!(
                "{}: {repeated} of {total} entries repeat the key ({}) of a later entry; the last of each was kept",
                table.name,
                key.join(", ")
            ));
        }
        self.sets.push(RowSet::Scope { table, scope, rows });
    }
}

/// Drops every row whose key a later row of the list repeats, and returns how many
/// were dropped. A list with a repeated key cannot be stored as it is (the key is
/// the table's primary key), and the API's lists are ordered oldest first.
fn keep_last_of_each_key(rows: &mut Vec<Row>, key_len: usize) -> usize {
    // Most lists come sorted by key (daily metrics by date): strictly ascending
    // keys are distinct, found without hashing the million keys of a large sync.
    let ascending = rows.windows(2).all(|pair| {
        key_order(&pair[0].values[..key_len], &pair[1].values[..key_len])
            == Some(std::cmp::Ordering::Less)
    });
    if ascending {
        return 0;
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
        return 0;
    }
    let before = rows.len();
    let mut index = 0;
    rows.retain(|_| {
        let keep = last.get(&digests[index]) == Some(&index);
        index += 1;
        keep
    });
    before - rows.len()
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

/// A project row and its collaborators; ids found are added to `seen_projects`.
fn project_rows(out: &mut DocRows, p: &Project, context: &str) {
    let Some(id) = p.id else {
        out.problems
            .push(format!("{context}: a project without an id was skipped"));
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
            None => out.problems.push(format!(
                "{context}: a collaborator of project {id} without an id was skipped"
            )),
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

/// Operation 1: the organization, its members, datasets, experiments and projects.
pub fn organization(org_id: i64, doc: &OrganizationResponse) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("organization {org_id}");
    let Some(org) = doc.organization.as_ref() else {
        out.problems.push(format!(
            "{context}: the response has no `organization` object"
        ));
        return out;
    };
    let limits = doc.entitlement_limits.as_ref();
    let compute = doc.default_compute_limits.as_ref();
    let mut row = vec![
        org_id.cell(),
        org.name.cell(),
        org.show_header_img_mask.cell(),
        org.is_developer_profile.cell(),
        org.whitelabel_id.cell(),
        org.trial_id.cell(),
        org.trial_expired_date.cell(),
        org.trial_upgraded_date.cell(),
        org.created.cell(),
        org.logo.cell(),
        org.header_img.cell(),
        org.whitelabel_name.cell(),
        org.contract_start_date.cell(),
        org.deleted_date.cell(),
        compute.and_then(|c| c.requests_cpu).cell(),
        compute.and_then(|c| c.requests_memory).cell(),
        compute.and_then(|c| c.limits_cpu).cell(),
        compute.and_then(|c| c.limits_memory).cell(),
        doc.performance.as_ref().and_then(|p| p.job_limit_m).cell(),
        doc.cli_lists
            .as_ref()
            .and_then(|c| serde_json::to_string(c).ok())
            .map_or(Value::Null, Value::Text),
        doc.readme.as_ref().and_then(|r| r.markdown.clone()).cell(),
        doc.readme.as_ref().and_then(|r| r.html.clone()).cell(),
        doc.whitelabel_id.cell(),
    ];
    row.extend(limit_cells(limits));
    out.root(&spec::ORGANIZATIONS, row);

    let mut members = Vec::with_capacity(org.users.len());
    for m in &org.users {
        let Some(user_id) = m.id else {
            out.problems
                .push(format!("{context}: a member without an id was skipped"));
            continue;
        };
        let mut row = with_key(vec![org_id.cell(), user_id.cell()], user_cells!(m));
        row.extend([
            m.added.cell(),
            m.role.cell(),
            m.project_count.cell(),
            m.datasets.cell(),
            m.last_access_to_organization.cell(),
            m.last_organization_project_accessed.cell(),
        ]);
        members.push(row);
    }
    out.scope(&spec::ORGANIZATION_MEMBERS, vec![org_id.cell()], members);

    let mut datasets = Vec::with_capacity(doc.datasets.len());
    for d in &doc.datasets {
        let Some(name) = d.dataset.as_deref() else {
            out.problems
                .push(format!("{context}: a dataset without a name was skipped"));
            continue;
        };
        let bucket = d.bucket.as_ref();
        datasets.push(vec![
            org_id.cell(),
            name.cell(),
            d.last_file_created.cell(),
            d.total_file_size.cell(),
            d.total_file_count.cell(),
            d.total_item_count.cell(),
            d.total_item_count_checklist_ok.cell(),
            d.total_item_count_checklist_failed.cell(),
            d.tags.cell(),
            d.r#type.cell(),
            d.category.cell(),
            bucket.and_then(|b| b.id).cell(),
            bucket.and_then(|b| b.bucket.clone()).cell(),
            bucket.and_then(|b| b.path.clone()).cell(),
            bucket
                .and_then(|b| b.full_bucket_path_description.clone())
                .cell(),
            bucket.and_then(|b| b.data_item_naming_levels_deep).cell(),
            d.bucket_path.cell(),
        ]);
    }
    out.scope(&spec::DATASETS, vec![org_id.cell()], datasets);
    experiment_rows(&mut out, "organization", org_id, &doc.experiments);
    let listed = org
        .projects
        .iter()
        .filter_map(|p| Some(vec![org_id.cell(), p.id?.cell(), p.name.cell()]))
        .collect();
    out.scope(&spec::ORGANIZATION_PROJECTS, vec![org_id.cell()], listed);
    for p in &org.projects {
        project_rows(&mut out, p, &context);
    }
    out
}

/// Operation 2: the user, its organization summaries, trials, daily metrics,
/// experiments and projects.
pub fn whitelabel_user(wl_org_id: i64, user_id: i64, doc: &WhitelabelUserResponse) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("white label user {user_id}");
    let Some(u) = doc.user.as_ref() else {
        out.problems
            .push(format!("{context}: the response has no `user` object"));
        return out;
    };
    let mut row = with_key(vec![user_id.cell()], user_cells!(u));
    row.extend([
        u.suspended.cell(),
        u.evaluation.cell(),
        u.ambassador.cell(),
        wl_org_id.cell(),
    ]);
    out.root(&spec::USERS, row);

    let orgs = u
        .organizations
        .iter()
        .filter_map(|o| {
            let mut row = vec![
                user_id.cell(),
                o.id?.cell(),
                o.name.cell(),
                o.is_developer_profile.cell(),
                o.whitelabel_id.cell(),
                o.is_admin.cell(),
                o.created.cell(),
                o.trial_id.cell(),
                o.trial_expired_date.cell(),
                o.trial_upgraded_date.cell(),
                o.user_count.cell(),
                o.admin_count.cell(),
                o.private_project_count.cell(),
                o.public_project_license
                    .as_ref()
                    .and_then(|l| l.name.clone())
                    .cell(),
                o.public_project_license
                    .as_ref()
                    .and_then(|l| l.link.clone())
                    .cell(),
                o.logo.cell(),
                o.last_accessed.cell(),
            ];
            row.extend(limit_cells(o.entitlement_limits.as_ref()));
            Some(row)
        })
        .collect();
    out.scope(&spec::USER_ORGANIZATIONS, vec![user_id.cell()], orgs);

    let mut trials = Vec::with_capacity(u.trials.len());
    for t in &u.trials {
        let Some(id) = t.id else {
            out.problems
                .push(format!("{context}: a trial without an id was skipped"));
            continue;
        };
        trials.push(vec![
            id.cell(),
            t.user_id.or(Some(user_id)).cell(),
            t.organization_id.cell(),
            t.created.cell(),
            t.expiration_date.cell(),
            t.expired_date.cell(),
            t.deleted_date.cell(),
            t.upgraded_date.cell(),
            t.notes.cell(),
        ]);
    }
    out.scope(&spec::TRIALS, vec![user_id.cell()], trials);

    let mut metrics = Vec::with_capacity(u.daily_metrics.len());
    // Every record of a user usually carries the same `computeTimeCalculatedSince`:
    // its text is formatted once and copied.
    let mut since: Option<(Timestamp, String)> = None;
    for m in &u.daily_metrics {
        let Some(date) = m.date else {
            out.problems.push(format!(
                "{context}: a daily metrics record without a date was skipped"
            ));
            continue;
        };
        let stamp = date.at.as_text();
        // The day is the one written in the record's own offset, not the UTC day
        // of the instant (they differ for `2026-06-10T00:00:00+02:00`).
        let day = if date.offset_secs == 0 {
            stamp[..10].to_string()
        } else {
            date.day().format("%Y-%m-%d").to_string()
        };
        metrics.push(vec![
            user_id.cell(),
            Value::Text(day),
            Value::Text(stamp),
            m.total_users.cell(),
            m.total_staff_users.cell(),
            m.total_projects.cell(),
            m.total_current_contract_cpu_compute_time_seconds.cell(),
            m.total_current_contract_gpu_compute_time_seconds.cell(),
            m.total_current_contract_compute_time_seconds.cell(),
            m.total_storage_size_bytes.cell(),
            m.users_added.cell(),
            m.users_deleted.cell(),
            m.projects_added.cell(),
            m.projects_deleted.cell(),
            m.cpu_compute_time_seconds.cell(),
            m.gpu_compute_time_seconds.cell(),
            m.compute_time_seconds.cell(),
            m.storage_bytes_added.cell(),
            m.storage_bytes_deleted.cell(),
            m.staff_users_added.cell(),
            m.staff_users_deleted.cell(),
            match m.compute_time_calculated_since {
                Some(t) => Value::Text(match &since {
                    Some((last, text)) if *last == t => text.clone(),
                    _ => since.insert((t, t.as_text())).1.clone(),
                }),
                None => Value::Null,
            },
        ]);
    }
    out.scope(&spec::DAILY_METRICS, vec![user_id.cell()], metrics);
    experiment_rows(&mut out, "user", user_id, &u.experiments);
    for p in &u.projects {
        project_rows(&mut out, p, &context);
    }
    out
}

/// A document that was not fetched but whose stored row of `table` stands.
pub fn kept(table: &'static TableSpec, key: Vec<Value>) -> DocRows {
    DocRows {
        sets: vec![RowSet::Kept { table, key }],
        problems: Vec::new(),
    }
}

/// Operations 5 and 7: projects and their collaborators.
///
/// Takes the list by value and drops each project once its rows are built: a large
/// world's list is 16 MB of JSON, and holding all of its models next to all of its
/// rows was the sync's peak memory.
pub fn project_list(projects: Vec<Project>, context: &str) -> DocRows {
    let mut out = DocRows::default();
    for p in projects {
        project_rows(&mut out, &p, context);
    }
    out
}

/// Operation 4: the organizations a user can access.
pub fn user_organizations(user_id: i64, doc: &OrganizationLinkList) -> DocRows {
    let mut out = DocRows::default();
    let rows = doc
        .organizations
        .iter()
        .filter_map(|o| Some(vec![user_id.cell(), o.id?.cell(), o.name.cell()]))
        .collect();
    out.scope(&spec::USER_ORGANIZATION_LINKS, vec![user_id.cell()], rows);
    out
}

fn secret_cells(key: Option<&Secret>, store_secrets: bool) -> [Value; 2] {
    match key.filter(|k| !k.is_empty()) {
        None => [Value::Null, Value::Null],
        Some(k) if store_secrets => [
            Value::Text(k.expose().to_string()),
            Value::Text(k.fingerprint()),
        ],
        Some(k) => [Value::Null, Value::Text(k.fingerprint())],
    }
}

/// Operation 6: full project information and its child lists. Development keys are
/// stored only as fingerprints unless `store_secrets` is set.
pub fn project_info(project_id: i64, doc: &ProjectInfoResponse, store_secrets: bool) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("project {project_id}");
    // Without its `project` object the document is not this project's information:
    // storing it would blank the project's row and mark its devices removed.
    let Some(p) = &doc.project else {
        out.problems
            .push(format!("{context}: the response has no `project` object"));
        return out;
    };
    project_rows(&mut out, p, &context);
    let keys = doc.development_keys.as_ref();
    let [api_key, api_fp] = secret_cells(keys.and_then(|k| k.api_key.as_ref()), store_secrets);
    let [hmac_key, hmac_fp] = secret_cells(keys.and_then(|k| k.hmac_key.as_ref()), store_secrets);
    let imp = doc.impulse.as_ref();
    let summary = doc.data_summary.as_ref();
    let per = doc.data_summary_per_category.as_ref();
    let cat = |f: fn(
        &crate::api::models::DataSummaryPerCategory,
    ) -> Option<&crate::api::models::DataSummary>| { per.and_then(f) };
    let training = cat(|p| p.training.as_ref());
    let testing = cat(|p| p.testing.as_ref());
    let post = cat(|p| p.post_processing.as_ref());
    let ct = doc.compute_time.as_ref();
    let acq = doc.acquisition_settings.as_ref();
    let dep = doc.deploy_settings.as_ref();
    let urls = doc.urls.as_ref();
    let wiz = doc.show_getting_started_wizard.as_ref();
    let perf = doc.performance.as_ref();
    let tc = doc.target_constraints.as_ref();
    let mut row = vec![project_id.cell(), api_key, hmac_key, api_fp, hmac_fp];
    row.extend([
        imp.and_then(|i| i.created).cell(),
        imp.and_then(|i| i.configured).cell(),
        imp.and_then(|i| i.complete).cell(),
    ]);
    for s in [summary, training, testing, post] {
        row.extend([
            s.and_then(|s| s.total_length_ms).cell(),
            s.and_then(|s| s.data_count).cell(),
            s.map(|s| s.labels.cell()).unwrap_or(Value::Null),
        ]);
    }
    row.extend([
        ct.and_then(|c| c.period_start_date).cell(),
        ct.and_then(|c| c.period_end_date).cell(),
        ct.and_then(|c| c.time_used_ms).cell(),
        ct.and_then(|c| c.time_left_ms).cell(),
        acq.and_then(|a| a.interval_ms).cell(),
        acq.and_then(|a| a.length_ms).cell(),
        acq.and_then(|a| a.segment_shift).cell(),
        acq.and_then(|a| a.default_page_size).cell(),
        acq.and_then(|a| a.view_type.clone()).cell(),
        acq.and_then(|a| a.grid_column_count).cell(),
        acq.and_then(|a| a.grid_column_count_detailed).cell(),
        acq.and_then(|a| a.show_exact_sample_length).cell(),
        acq.and_then(|a| a.inline_edit_bounding_boxes).cell(),
        acq.and_then(|a| a.sensor.clone()).cell(),
        acq.and_then(|a| a.label.clone()).cell(),
        acq.and_then(|a| a.segment_length).cell(),
        dep.and_then(|d| d.eon_compiler).cell(),
        dep.and_then(|d| d.sensor.clone()).cell(),
        dep.and_then(|d| d.arduino_library_name.clone()).cell(),
        dep.and_then(|d| d.tinkerkit_library_name.clone()).cell(),
        dep.and_then(|d| d.particle_library_name.clone()).cell(),
        dep.and_then(|d| d.last_deploy_model_engine.clone()).cell(),
        urls.and_then(|u| u.mobile_client.clone()).cell(),
        urls.and_then(|u| u.mobile_client_computer.clone()).cell(),
        urls.and_then(|u| u.mobile_client_inference.clone()).cell(),
        doc.show_create_first_impulse.cell(),
        wiz.and_then(|w| w.show_wizard).cell(),
        wiz.and_then(|w| w.step).cell(),
        wiz.and_then(|w| w.tutorial.clone()).cell(),
        wiz.map(|w| w.classes.cell()).unwrap_or(Value::Null),
        perf.and_then(|p| p.gpu).cell(),
        perf.and_then(|p| p.job_limit_m).cell(),
        perf.and_then(|p| p.dsp_file_size_mb).cell(),
        perf.and_then(|p| p.enterprise_performance).cell(),
        perf.and_then(|p| p.train_job_ram_mb).cell(),
        doc.has_new_training_data.cell(),
        doc.studio_url.cell(),
        doc.in_pretrained_model_flow.cell(),
        doc.show_sensor_data_in_acquisition_graph.cell(),
        doc.notifications.cell(),
        doc.readme.as_ref().and_then(|r| r.markdown.clone()).cell(),
        doc.readme.as_ref().and_then(|r| r.html.clone()).cell(),
        doc.csv_import_config.cell(),
        doc.dsp_page_size.cell(),
        tc.and_then(|t| serde_json::to_string(t).ok())
            .map_or(Value::Null, Value::Text),
        tc.and_then(|t| t.selected_target_based_on.clone()).cell(),
        doc.default_impulse_id.cell(),
        doc.last_shown_model_engine
            .as_ref()
            .map(|e| e.as_str().to_string())
            .cell(),
        doc.versioning_storage_size_mib.cell(),
    ]);
    out.root(&spec::PROJECT_INFO, row);
    device_rows(&mut out, project_id, doc);
    let latency = doc
        .latency_devices
        .iter()
        .filter_map(|l| {
            Some(vec![
                project_id.cell(),
                l.mcu.clone()?.as_str().cell(),
                l.name.cell(),
                l.selected.cell(),
                l.int8_latency.cell(),
                l.int8_conv_latency.cell(),
                l.float32_latency.cell(),
                l.float32_conv_latency.cell(),
                l.help_text.cell(),
            ])
        })
        .collect();
    out.scope(&spec::LATENCY_DEVICES, vec![project_id.cell()], latency);
    experiment_rows(&mut out, "project", project_id, &doc.experiments);
    let lists = [
        ("train", &doc.train_job_notification_uids),
        ("dsp", &doc.dsp_job_notification_uids),
        ("model_testing", &doc.model_testing_job_notification_uids),
        ("export", &doc.export_job_notification_uids),
    ];
    let notify = lists
        .iter()
        .flat_map(|(job, uids)| uids.iter().map(move |uid| (*job, *uid)))
        .map(|(job, uid)| vec![project_id.cell(), job.cell(), uid.cell()])
        .collect();
    out.scope(
        &spec::PROJECT_NOTIFICATION_USERS,
        vec![project_id.cell()],
        notify,
    );
    out
}

fn device_rows(out: &mut DocRows, project_id: i64, doc: &ProjectInfoResponse) {
    let mut devices = Vec::with_capacity(doc.devices.len());
    let mut sensors = Vec::new();
    for d in &doc.devices {
        let Some(device_id) = d.device_id.as_deref() else {
            out.problems.push(format!(
                "project {project_id}: a device without a deviceId was skipped"
            ));
            continue;
        };
        let inf = d.inference_info.as_ref();
        devices.push(vec![
            project_id.cell(),
            device_id.cell(),
            d.id.cell(),
            d.created.cell(),
            d.last_seen.cell(),
            d.name.cell(),
            d.device_type.cell(),
            d.remote_mgmt_connected.cell(),
            d.supports_snapshot_streaming.cell(),
            d.remote_mgmt_mode.cell(),
            d.remote_mgmt_host.cell(),
            inf.and_then(|i| i.project_id).cell(),
            inf.and_then(|i| i.project_owner.clone()).cell(),
            inf.and_then(|i| i.project_name.clone()).cell(),
            inf.and_then(|i| i.deployed_version).cell(),
            inf.and_then(|i| i.model_type.clone()).cell(),
        ]);
        for s in &d.sensors {
            if let Some(name) = s.name.as_deref() {
                sensors.push(vec![
                    project_id.cell(),
                    device_id.cell(),
                    name.cell(),
                    s.max_sample_length_s.cell(),
                    s.frequencies.cell(),
                ]);
            }
        }
    }
    out.scope(&spec::DEVICES, vec![project_id.cell()], devices);
    out.scope(&spec::DEVICE_SENSORS, vec![project_id.cell()], sensors);
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

    fn project() -> Project {
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
        assert_eq!(keep_last_of_each_key(&mut sorted, 2), 0);
        assert_eq!(sorted.len(), 3);
        // Sorted with a neighbour repeated: the later one stays.
        let mut adjacent = rows(&[(1, "a"), (1, "a"), (1, "b")]);
        assert_eq!(keep_last_of_each_key(&mut adjacent, 2), 1);
        assert_eq!(tags(&adjacent), [Value::Integer(1), Value::Integer(2)]);
        // Unsorted and distinct: untouched, in its order.
        let mut unsorted = rows(&[(2, "a"), (1, "b"), (1, "a")]);
        assert_eq!(keep_last_of_each_key(&mut unsorted, 2), 0);
        assert_eq!(
            tags(&unsorted),
            [Value::Integer(0), Value::Integer(1), Value::Integer(2)]
        );
    }

    /// The daily-metrics rows a user document with these (date, CPU seconds)
    /// records becomes, and the document's problems.
    fn daily_rows(records: &[(&str, i64)]) -> (Vec<Row>, Vec<String>) {
        let daily_metrics = records
            .iter()
            .map(|&(date, cpu)| DailyMetrics {
                date: date.parse().ok(),
                cpu_compute_time_seconds: Some(cpu),
                ..Default::default()
            })
            .collect();
        let user = WhitelabelUserResponse {
            user: Some(WhitelabelUser {
                daily_metrics,
                ..Default::default()
            }),
            ..Default::default()
        };
        let doc = whitelabel_user(1, 3, &user);
        let metrics = doc
            .sets
            .into_iter()
            .find_map(|set| match set {
                RowSet::Scope { table, rows, .. } if table.name == "daily_metrics" => Some(rows),
                _ => None,
            })
            .expect("daily metrics");
        (metrics, doc.problems)
    }

    #[test]
    fn a_record_s_day_is_the_date_written_in_its_offset() {
        let (metrics, problems) = daily_rows(&[
            // 2026-06-09T22:00Z: the platform's day 2026-06-10.
            ("2026-06-10T00:00:00+02:00", 1),
            ("2026-06-11T00:00:00.000Z", 2),
            // 2026-06-12T03:00Z: the platform's day 2026-06-11 again.
            ("2026-06-11T22:00:00-05:00", 3),
        ]);
        let days: Vec<(Value, Value)> = metrics
            .iter()
            .map(|r| (r.values[1].clone(), r.values[2].clone()))
            .collect();
        assert_eq!(
            days,
            [
                (
                    Value::Text("2026-06-10".into()),
                    Value::Text("2026-06-09T22:00:00.000Z".into())
                ),
                (
                    Value::Text("2026-06-11".into()),
                    Value::Text("2026-06-12T03:00:00.000Z".into())
                ),
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("daily_metrics: 1 of 3 entries repeat the key (user_id, day)"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_repeated_key_keeps_the_last_entry_and_is_reported() {
        let (metrics, problems) = daily_rows(&[
            ("2026-01-01T00:00:00Z", 1),
            ("2026-01-02T00:00:00Z", 2),
            ("2026-01-01T00:00:00Z", 3),
        ]);
        let cpu = spec::DAILY_METRICS
            .all_columns()
            .position(|c| c.name == "cpu_compute_time_seconds")
            .expect("column");
        let kept: Vec<(Value, Value)> = metrics
            .iter()
            .map(|r| (r.values[1].clone(), r.values[cpu].clone()))
            .collect();
        assert_eq!(
            kept,
            [
                (Value::Text("2026-01-02".into()), Value::Integer(2)),
                (Value::Text("2026-01-01".into()), Value::Integer(3)),
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("daily_metrics: 1 of 3 entries repeat the key (user_id, day)"),
            "{problems:?}"
        );
    }

    #[test]
    fn elements_without_keys_are_reported_not_stored() {
        let org = OrganizationResponse {
            organization: Some(Organization {
                users: vec![OrganizationMember::default()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let rows = organization(5, &org);
        assert_eq!(rows.problems.len(), 1);
        assert!(rows.problems[0].contains("organization 5"));
    }

    #[test]
    fn development_keys_become_fingerprints_unless_opted_in() {
        let key = Secret::new("ei_0123456789");
        let info = ProjectInfoResponse {
            project: Some(project()),
            development_keys: Some(DevelopmentKeys {
                api_key: Some(key.clone()),
                hmac_key: None,
            }),
            ..Default::default()
        };
        let row = |store| {
            project_info(1, &info, store)
                .sets
                .into_iter()
                .find_map(|set| match set {
                    RowSet::Root { table, row } if table.name == "project_info" => Some(row.values),
                    _ => None,
                })
                .expect("a project_info row")
        };
        let hidden = row(false);
        assert_eq!(hidden[1], Value::Null);
        assert_eq!(hidden[3], Value::Text(key.fingerprint()));
        assert_eq!(row(true)[1], Value::Text("ei_0123456789".into()));
    }
}
