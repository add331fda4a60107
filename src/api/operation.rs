//! The eight operations of the interface, with their names and paths.
//!
//! Errors and `sync_errors` rows name an operation by [`Operation::name`], so a
//! failure always says which call failed, not just which URL.

use std::fmt;

/// One operation of the API, as docs/api.md describes and numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// 1. `GET /v1/api/organizations/{organizationId}`
    GetOrganization,
    /// 2. `GET /v1/api/organizations/{organizationId}/whitelabel/users/{userId}`
    GetWhitelabelUser,
    /// 3. `GET /v1/api/organizations`
    ListOrganizations,
    /// 4. `GET /v1/api/users/{userId}/organizations` (JWT only)
    ListUserOrganizations,
    /// 5. `GET /v1/api/projects`
    ListProjects,
    /// 6. `GET /v1/api/{projectId}`
    GetProjectInfo,
    /// 7. `GET /v1/api/user/projects`
    ListUserProjects,
    /// 8. `POST /v1/api/organizations/{organizationId}/whitelabel/projects`
    CreateProject,
}

impl Operation {
    /// All operations, in the order docs/api.md numbers them.
    pub const ALL: [Operation; 8] = [
        Operation::GetOrganization,
        Operation::GetWhitelabelUser,
        Operation::ListOrganizations,
        Operation::ListUserOrganizations,
        Operation::ListProjects,
        Operation::GetProjectInfo,
        Operation::ListUserProjects,
        Operation::CreateProject,
    ];

    /// Stable name used in errors, logs, `sync_errors.operation` and the `api` command.
    pub fn name(self) -> &'static str {
        match self {
            Operation::GetOrganization => "get-organization",
            Operation::GetWhitelabelUser => "get-whitelabel-user",
            Operation::ListOrganizations => "list-organizations",
            Operation::ListUserOrganizations => "list-user-organizations",
            Operation::ListProjects => "list-projects",
            Operation::GetProjectInfo => "get-project-info",
            Operation::ListUserProjects => "list-user-projects",
            Operation::CreateProject => "create-project",
        }
    }

    /// The largest body accepted for one answer of this operation, in bytes. On the
    /// real platform a project's information or a white label user is kilobytes to
    /// a few megabytes; over the sandbox's xlarge world the largest organization
    /// and white label user answers are about 250 KB and a project's information
    /// 13 KB. The limits leave room for growth while eight connections that each
    /// stream a body that never ends hold at most 8 x 16 MB. Lists are read as streams ([`crate::api::list_stream`]) and never
    /// held whole; the limit applies to one read whole because it is small.
    pub fn body_limit(self) -> u64 {
        const MB: u64 = 1 << 20;
        match self {
            Operation::GetProjectInfo => 8 * MB,
            Operation::CreateProject => MB,
            _ => 16 * MB,
        }
    }

    /// Number of the operation in docs/api.md (1 to 8).
    pub fn number(self) -> u8 {
        Operation::ALL
            .iter()
            .position(|op| *op == self)
            .map_or(0, |i| i as u8 + 1)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (op {})", self.name(), self.number())
    }
}

/// Path of get-organization.
pub fn organization_path(org_id: i64) -> String {
    format!("/v1/api/organizations/{org_id}")
}

/// Path of get-whitelabel-user.
pub fn whitelabel_user_path(org_id: i64, user_id: i64) -> String {
    format!("/v1/api/organizations/{org_id}/whitelabel/users/{user_id}")
}

/// Path of list-organizations.
pub const ORGANIZATIONS_PATH: &str = "/v1/api/organizations";

/// Path of list-user-organizations.
pub fn user_organizations_path(user_id: i64) -> String {
    format!("/v1/api/users/{user_id}/organizations")
}

/// Path of list-projects.
pub const PROJECTS_PATH: &str = "/v1/api/projects";

/// Path (with query) of get-project-info.
pub fn project_info_path(project_id: i64, impulse_id: Option<i64>) -> String {
    match impulse_id {
        Some(impulse) => format!("/v1/api/{project_id}?impulseId={impulse}"),
        None => format!("/v1/api/{project_id}"),
    }
}

/// Path of list-user-projects.
pub const USER_PROJECTS_PATH: &str = "/v1/api/user/projects";

/// Path of create-project.
pub fn create_project_path(org_id: i64) -> String {
    format!("/v1/api/organizations/{org_id}/whitelabel/projects")
}
