//! The organization document (`get-organization`): the organization, its members,
//! datasets, experiments and the projects it lists.
//!
//! Mapped on the fetching task that received it, like every document, so the single
//! SQLite writer only compares hashes and executes statements.

use super::{Cell, DocRows, experiment_rows, limit_cells, project_rows, user_cells, with_key};
use crate::api::models::{Organization, OrganizationResponse};
use crate::mirror::spec;
use rusqlite::types::Value;

/// The organization, its members, datasets, experiments and projects.
pub fn organization(org_id: i64, doc: &OrganizationResponse) -> DocRows {
    let mut out = DocRows::default();
    let context = format!("organization {org_id}");
    let Some(org) = doc.organization.as_ref() else {
        out.problems
            .push(format!("{context}: the response has no `organization` object").into());
        return out;
    };
    out.root(&spec::ORGANIZATIONS, organization_row(org_id, org, doc));
    member_rows(&mut out, org_id, org, &context);
    dataset_rows(&mut out, org_id, doc, &context);
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

/// The `organizations` row: the organization object, then the document's compute
/// limits, performance, CLI lists, readme and entitlement limits.
fn organization_row(org_id: i64, org: &Organization, doc: &OrganizationResponse) -> Vec<Value> {
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
    row.extend(limit_cells(doc.entitlement_limits.as_ref()));
    row
}

fn member_rows(out: &mut DocRows, org_id: i64, org: &Organization, context: &str) {
    let mut members = Vec::with_capacity(org.users.len());
    for m in &org.users {
        let Some(user_id) = m.id else {
            out.skipped(context, "a member without an id");
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
}

fn dataset_rows(out: &mut DocRows, org_id: i64, doc: &OrganizationResponse, context: &str) {
    let mut datasets = Vec::with_capacity(doc.datasets.len());
    for d in &doc.datasets {
        let Some(name) = d.dataset.as_deref() else {
            out.skipped(context, "a dataset without a name");
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::*;

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
        assert!(rows.problems[0].message.contains("organization 5"));
    }
}
