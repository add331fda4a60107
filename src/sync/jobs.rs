//! One fetch job per API document: call the operation, map the answer to rows and
//! name the documents it leads to. Jobs run as tokio tasks, so parsing and mapping
//! use every core while the writer thread only writes.

use crate::api::{ApiError, Client, Failure, Fetched, Operation};
use crate::mirror::raw::Scratch;
use crate::mirror::spec;
use crate::sync::lists::{self, Listed};
use crate::sync::rows::{self, DocRows};
use crate::sync::writer::{Doc, WriterMsg};
use tokio::sync::mpsc;

/// A document to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// `list-organizations`: discovery of the organizations.
    OrganizationList,
    /// `get-organization` for an organization.
    Organization(i64),
    /// `get-whitelabel-user` for a user, through the white label admin organization.
    WhitelabelUser {
        /// The white label admin organization.
        org: i64,
        /// The user.
        user: i64,
    },
    /// `list-user-organizations` for a user.
    UserOrganizations(i64),
    /// `list-projects` or `list-user-projects`.
    ProjectList(Operation),
    /// `get-project-info` for a project.
    ProjectInfo {
        /// The project.
        project: i64,
        /// Whether the listing that named it (a project list or its organization)
        /// gives it a `deletedDate`: the service may no longer serve its
        /// information, and that is expected rather than an error.
        deleted: bool,
    },
}

impl Job {
    /// The operation this job calls.
    pub fn operation(self) -> Operation {
        match self {
            Job::OrganizationList => Operation::ListOrganizations,
            Job::Organization(_) => Operation::GetOrganization,
            Job::WhitelabelUser { .. } => Operation::GetWhitelabelUser,
            Job::UserOrganizations(_) => Operation::ListUserOrganizations,
            Job::ProjectList(op) => op,
            Job::ProjectInfo { .. } => Operation::GetProjectInfo,
        }
    }

    /// Where the job stands in the queue: discovery first (lists, organizations),
    /// then users and projects by ascending id. Documents then arrive roughly in key
    /// order, so the mirror's B-trees mostly grow at their right edge: the daily
    /// metrics of a user in the middle of the key range split pages that earlier
    /// commits already wrote, and each such page is written to the WAL again.
    pub fn order(self) -> (u8, i64) {
        match self {
            Job::OrganizationList => (0, 0),
            Job::Organization(id) => (1, id),
            Job::ProjectList(op) => (2, i64::from(op == Operation::ListUserProjects)),
            Job::WhitelabelUser { user, .. } => (3, user),
            Job::UserOrganizations(user) => (4, user),
            Job::ProjectInfo { project, .. } => (5, project),
        }
    }

    /// The entity, as named in errors and `raw_documents.entity`.
    pub fn entity(self) -> String {
        match self {
            Job::Organization(id) => format!("organization {id}"),
            Job::WhitelabelUser { user, .. } | Job::UserOrganizations(user) => {
                format!("user {user}")
            }
            Job::OrganizationList | Job::ProjectList(_) => "all".to_string(),
            Job::ProjectInfo { project, .. } => format!("project {project}"),
        }
    }
}

/// Documents a fetched document leads to.
#[derive(Debug, Default)]
pub struct FollowUps {
    /// Organizations found (list-organizations).
    pub organizations: Vec<i64>,
    /// Users found (members of an organization).
    pub users: Vec<i64>,
    /// Projects found (in project lists and organizations), with whether each is
    /// soft-deleted: those are fetched too, as their compute counts in their
    /// organization's usage.
    pub projects: Vec<(i64, bool)>,
}

/// A finished job.
#[derive(Debug)]
pub struct Done {
    /// The document for the writer.
    pub doc: Doc,
    /// What to fetch next.
    pub follow: FollowUps,
    /// The server's clock when it answered.
    pub server_time: Option<chrono::DateTime<chrono::Utc>>,
}

/// What a job keeps of a response besides its value: the body, already encoded
/// for storage, so the plain bytes are freed before rows are built (the big list
/// documents would otherwise hold body, model and rows at once).
struct Meta {
    raw: crate::mirror::raw::Encoded,
    server_time: Option<chrono::DateTime<chrono::Utc>>,
}

fn split<T>(f: Fetched<T>) -> (T, Meta) {
    let Fetched {
        value,
        raw,
        server_time,
        attempts: _,
    } = f;
    let raw = crate::mirror::raw::encode(&raw);
    (value, Meta { raw, server_time })
}

/// A list read as a stream: its body was encoded as it passed; a body that could
/// not be is not stored, and says why in `sync_errors`.
fn listed(job: Job, listed: Listed, mut rows: DocRows, follow: FollowUps) -> Done {
    rows.problems.extend(listed.problem.map(Into::into));
    Done {
        server_time: listed.server_time,
        doc: Doc {
            operation: job.operation().name(),
            entity: job.entity(),
            raw: listed.raw,
            rows,
        },
        follow,
    }
}

fn done(job: Job, meta: Meta, rows: DocRows, follow: FollowUps) -> Done {
    Done {
        server_time: meta.server_time,
        doc: Doc {
            operation: job.operation().name(),
            entity: job.entity(),
            raw: Some(meta.raw),
            rows,
        },
        follow,
    }
}

/// A deleted project whose information the service no longer serves: nothing is
/// written, and its stored information counts as seen, so a complete sync does
/// not mark it removed (its compute still belongs to its organization's year).
fn kept(job: Job, project: i64) -> Done {
    Done {
        server_time: None,
        doc: Doc {
            operation: job.operation().name(),
            entity: job.entity(),
            raw: None,
            rows: rows::kept(&spec::PROJECT_INFO, vec![project.into()]),
        },
        follow: FollowUps::default(),
    }
}

/// Ids of listed projects, with whether each is soft-deleted.
pub(super) fn project_ids(projects: &[crate::api::models::Project]) -> Vec<(i64, bool)> {
    projects
        .iter()
        .filter_map(|p| Some((p.id?, p.deleted_date.is_some())))
        .collect()
}

/// Whether a failure says the project does not exist (any more): HTTP 404, or
/// `success: false` with a message naming a missing project.
fn is_gone(error: &ApiError) -> bool {
    match error {
        ApiError::Http { status, .. } => *status == 404,
        ApiError::Unsuccessful { message, .. } => {
            let message = message.to_ascii_lowercase();
            message.contains("project")
                && [
                    "not found",
                    "does not exist",
                    "no longer exists",
                    "deleted",
                    "missing",
                    "unknown",
                ]
                .iter()
                .any(|phrase| message.contains(phrase))
        }
        _ => false,
    }
}

/// What every job of a run is told besides its document.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Store project development keys in clear instead of fingerprints.
    pub store_secrets: bool,
    /// Where the bodies of lists too large to hold go while they are read.
    pub scratch: Option<Scratch>,
}

/// Runs one job. `writer` takes the rows of a project list while the list is
/// read; without one they come with the finished job.
pub async fn run(
    client: Client,
    job: Job,
    settings: Settings,
    writer: Option<mpsc::Sender<WriterMsg>>,
) -> Result<Done, Failure> {
    let Settings {
        store_secrets,
        scratch,
    } = settings;
    let scratch = scratch.as_ref();
    Ok(match job {
        Job::OrganizationList => {
            let (list, organizations) = lists::organization_ids(&client, scratch).await?;
            let follow = FollowUps {
                organizations,
                ..FollowUps::default()
            };
            listed(job, list, DocRows::default(), follow)
        }
        Job::Organization(id) => {
            let (value, meta) = split(client.get_organization(id).await?);
            let users = value
                .organization
                .as_ref()
                .map(|o| o.users.iter().filter_map(|m| m.id).collect())
                .unwrap_or_default();
            // The organization lists its soft-deleted projects too, which the
            // project lists (list-projects and list-user-projects) leave out.
            let projects = value
                .organization
                .as_ref()
                .map(|o| project_ids(&o.projects))
                .unwrap_or_default();
            let rows = rows::organization(id, &value);
            let follow = FollowUps {
                users,
                projects,
                ..FollowUps::default()
            };
            done(job, meta, rows, follow)
        }
        Job::WhitelabelUser { org, user } => {
            let (value, meta) = split(client.get_whitelabel_user(org, user).await?);
            let rows = rows::whitelabel_user(org, user, &value);
            done(job, meta, rows, FollowUps::default())
        }
        Job::UserOrganizations(user) => {
            let (list, rows) = lists::user_organizations(&client, user, scratch).await?;
            listed(job, list, rows, FollowUps::default())
        }
        Job::ProjectList(op) => {
            let (list, projects, rows) = lists::projects(&client, op, writer, scratch).await?;
            let follow = FollowUps {
                projects,
                ..FollowUps::default()
            };
            listed(job, list, rows, follow)
        }
        Job::ProjectInfo { project, deleted } => {
            let mut f = match client.get_project_info(project, None).await {
                Ok(f) => f,
                Err(failure) if deleted && is_gone(&failure.error) => {
                    tracing::debug!(project, error = %failure.error, "deleted project no longer served; its stored information stays");
                    return Ok(kept(job, project));
                }
                Err(failure) => return Err(failure),
            };
            if !store_secrets {
                // The raw body is kept in the mirror; development keys must not be.
                f.raw = crate::api::secret_scrub::redact_body(&f.raw);
            }
            let (value, meta) = split(f);
            let rows = rows::project_info(project, &value, store_secrets);
            done(job, meta, rows, FollowUps::default())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_project_counts_as_gone() {
        let op = Operation::GetProjectInfo;
        let url = || "http://127.0.0.1:9/v1/api/7".to_string();
        let http = |status| ApiError::Http {
            op,
            url: url(),
            status,
            excerpt: String::new(),
            retry_after: None,
        };
        let unsuccessful = |message: &str| ApiError::Unsuccessful {
            op,
            url: url(),
            message: message.to_string(),
        };
        assert!(is_gone(&http(404)));
        assert!(is_gone(&unsuccessful("Project 7 not found")));
        assert!(is_gone(&unsuccessful("This project has been deleted")));
        assert!(!is_gone(&http(403)), "a refusal is not an absence");
        assert!(!is_gone(&http(500)));
        assert!(!is_gone(&unsuccessful("Internal error")));
        assert!(
            !is_gone(&unsuccessful("User not found")),
            "names no project"
        );
    }
}
