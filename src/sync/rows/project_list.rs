//! The project list documents (`list-projects`, `list-user-projects`): projects and
//! their collaborators.
//!
//! Mapped on the fetching task that received the list, like every document, so the
//! single SQLite writer only compares hashes and executes statements.

use super::{DocRows, project_rows};
use crate::api::models::Project;

/// list-projects and list-user-projects: projects and their collaborators.
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
