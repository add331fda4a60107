//! The user's organization links document (`list-user-organizations`): the
//! organizations a user can access.
//!
//! Mapped on the fetching task that received it, like every document, so the single
//! SQLite writer only compares hashes and executes statements.

use super::{Cell, DocRows};
use crate::api::models::OrganizationLinkList;
use crate::mirror::spec;

/// The organizations a user can access.
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
