//! Credentials and scopes.
//!
//! A request needs one valid credential: `x-api-key` (an organization key or a project
//! key) or a white label JWT in `x-jwt-token`. When both come, the JWT decides the
//! scope; a credential that is sent but unknown is rejected (401) even if the other one
//! is valid, so client bugs show up. Decisions are checked in this order: what the kind
//! of credential may never do (403), then whether the entity exists (404), then whether
//! this credential reaches that entity (403).

use super::world::{WorldState, project_active};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// The JWT of a white label (index into `World::white_labels`).
    WhiteLabel(usize),
    Organization(i64),
    Project(i64),
}

/// The eight operations, with their path parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    OrgInfo { org: i64 },
    WhiteLabelUser { org: i64, user: i64 },
    ListOrganizations,
    UserOrganizations { user: i64 },
    ListProjects,
    ProjectInfo { project: i64 },
    UserProjects,
    CreateProject { org: i64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, message)
    }
}

/// Resolves the credentials of a request (header values; empty counts as absent).
pub fn credential(
    ws: &WorldState,
    jwt: Option<&str>,
    api_key: Option<&str>,
) -> Result<Credential, ApiError> {
    let jwt = jwt.map(str::trim).filter(|s| !s.is_empty());
    let api_key = api_key.map(str::trim).filter(|s| !s.is_empty());
    if let Some(token) = jwt {
        return ws
            .idx
            .jwt
            .get(token)
            .map(|&wl| Credential::WhiteLabel(wl))
            .ok_or_else(|| ApiError::unauthorized("invalid or expired JWT (x-jwt-token)"));
    }
    let Some(key) = api_key else {
        return Err(ApiError::unauthorized(
            "missing credentials: send an API key in x-api-key or a JWT in x-jwt-token",
        ));
    };
    if let Some(&org) = ws.idx.org_key.get(key) {
        return Ok(Credential::Organization(org));
    }
    if let Some(&project) = ws.idx.project_key.get(key) {
        return Ok(Credential::Project(project));
    }
    Err(ApiError::unauthorized("invalid API key (x-api-key)"))
}

fn is_admin_org(ws: &WorldState, org: i64) -> bool {
    ws.world
        .white_labels
        .iter()
        .any(|w| w.admin_organization_id == org)
}

fn org_exists(ws: &WorldState, org: i64) -> Result<(), ApiError> {
    ws.org(org)
        .map(|_| ())
        .ok_or_else(|| ApiError::not_found(format!("organization {org} not found")))
}

fn user_exists(ws: &WorldState, user: i64) -> Result<(), ApiError> {
    ws.user(user)
        .map(|_| ())
        .ok_or_else(|| ApiError::not_found(format!("user {user} not found")))
}

fn project_owner_org(ws: &WorldState, project: i64) -> Result<i64, ApiError> {
    ws.project(project)
        .map(|p| p.owner_organization_id)
        .ok_or_else(|| ApiError::not_found(format!("project {project} not found")))
}

fn deny(what: &str) -> Result<(), ApiError> {
    Err(ApiError::forbidden(what.to_string()))
}

/// Whether `cred` may perform `op` (list scopes are computed by the `scope_*` functions).
pub fn authorize(ws: &WorldState, cred: Credential, op: Op) -> Result<(), ApiError> {
    use Credential as C;
    match (cred, op) {
        (_, Op::ListOrganizations | Op::ListProjects) => Ok(()),
        (C::WhiteLabel(wl), Op::OrgInfo { org }) => {
            org_exists(ws, org)?;
            if ws.org_wl(org) == Some(wl) {
                Ok(())
            } else {
                deny("this organization is outside your white label")
            }
        }
        (C::Organization(own), Op::OrgInfo { org }) => {
            org_exists(ws, org)?;
            if own == org {
                Ok(())
            } else {
                deny("this API key belongs to another organization")
            }
        }
        (C::WhiteLabel(wl), Op::WhiteLabelUser { org, user }) => {
            org_exists(ws, org)?;
            if ws
                .world
                .white_labels
                .get(wl)
                .map(|w| w.admin_organization_id)
                != Some(org)
            {
                return deny("only the white label's admin organization may read its users");
            }
            user_exists(ws, user)?;
            if ws.user_in_wl(user, wl) {
                Ok(())
            } else {
                deny("this user is outside your white label")
            }
        }
        (C::Organization(own), Op::WhiteLabelUser { org, user }) => {
            if !is_admin_org(ws, own) {
                return deny("white label administrators only");
            }
            org_exists(ws, org)?;
            if own != org {
                return deny("this API key belongs to another organization");
            }
            user_exists(ws, user)?;
            match ws.org_wl(own) {
                Some(wl) if ws.user_in_wl(user, wl) => Ok(()),
                _ => deny("this user is outside your white label"),
            }
        }
        (C::WhiteLabel(wl), Op::UserOrganizations { user }) => {
            user_exists(ws, user)?;
            if ws.user_in_wl(user, wl) {
                Ok(())
            } else {
                deny("this user is outside your white label")
            }
        }
        (C::WhiteLabel(wl), Op::ProjectInfo { project }) => {
            let org = project_owner_org(ws, project)?;
            if ws.org_wl(org) == Some(wl) {
                Ok(())
            } else {
                deny("this project is outside your white label")
            }
        }
        (C::Organization(own), Op::ProjectInfo { project }) => {
            if project_owner_org(ws, project)? == own {
                Ok(())
            } else {
                deny("this project belongs to another organization")
            }
        }
        (C::Project(own), Op::ProjectInfo { project }) => {
            project_owner_org(ws, project)?;
            if own == project {
                Ok(())
            } else {
                deny("this API key belongs to another project")
            }
        }
        (C::WhiteLabel(_), Op::UserProjects) => Ok(()),
        (C::WhiteLabel(wl), Op::CreateProject { org }) => {
            org_exists(ws, org)?;
            if ws
                .world
                .white_labels
                .get(wl)
                .map(|w| w.admin_organization_id)
                == Some(org)
            {
                Ok(())
            } else {
                deny("projects can only be created in your white label's admin organization")
            }
        }
        (C::Organization(own), Op::CreateProject { org }) => {
            if !is_admin_org(ws, own) {
                return deny("white label administrators only");
            }
            org_exists(ws, org)?;
            if own == org {
                Ok(())
            } else {
                deny("this API key belongs to another organization")
            }
        }
        (C::Organization(_) | C::Project(_), Op::UserOrganizations { .. }) => {
            deny("this operation is available only with a JWT")
        }
        (C::Organization(_) | C::Project(_), Op::UserProjects) => {
            deny("an API key has no current user; use a JWT")
        }
        (
            C::Project(_),
            Op::OrgInfo { .. } | Op::WhiteLabelUser { .. } | Op::CreateProject { .. },
        ) => deny("a project API key cannot perform this operation"),
    }
}

/// list-organizations (docs/api.md, op 3): organization indices the credential lists.
pub fn scope_organizations(ws: &WorldState, cred: Credential) -> Vec<usize> {
    match cred {
        Credential::WhiteLabel(wl) => ws.wl_orgs(wl).collect(),
        Credential::Organization(org) => ws.org_index(org).into_iter().collect(),
        Credential::Project(p) => ws
            .project(p)
            .and_then(|p| ws.org_index(p.owner_organization_id))
            .into_iter()
            .collect(),
    }
}

/// list-projects (docs/api.md, op 5): active project indices the credential lists.
pub fn scope_projects(ws: &WorldState, cred: Credential) -> Vec<usize> {
    let now = ws.world.now;
    let active_of = |org_id: i64| {
        ws.org_projects(org_id)
            .iter()
            .copied()
            .filter(move |&i| project_active(&ws.world.projects[i], now))
    };
    match cred {
        Credential::WhiteLabel(wl) => ws
            .wl_orgs(wl)
            .flat_map(|oi| active_of(ws.world.organizations[oi].id))
            .collect(),
        Credential::Organization(org) => active_of(org).collect(),
        Credential::Project(p) => ws
            .idx
            .project
            .get(&p)
            .copied()
            .filter(|&i| project_active(&ws.world.projects[i], now))
            .into_iter()
            .collect(),
    }
}

/// list-user-organizations (docs/api.md, op 4): the user's organizations within the
/// white label.
pub fn user_organizations(ws: &WorldState, wl: usize, user: i64) -> Vec<usize> {
    let mut orgs: Vec<usize> = ws
        .memberships(user)
        .iter()
        .map(|&(oi, _)| oi)
        .filter(|&oi| ws.idx.org_wl.get(oi).copied().flatten() == Some(wl))
        .collect();
    orgs.dedup();
    orgs
}

/// list-user-projects (docs/api.md, op 7): active projects the white label's admin
/// user collaborates on.
pub fn user_projects(ws: &WorldState, wl: usize) -> Vec<usize> {
    let now = ws.world.now;
    let Some(admin) = ws.world.white_labels.get(wl).map(|w| w.admin_user_id) else {
        return Vec::new();
    };
    ws.user_collabs(admin)
        .iter()
        .copied()
        .filter(|&i| project_active(&ws.world.projects[i], now))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;
    use crate::world::generate;
    use chrono::NaiveDate;

    struct Fixture {
        ws: WorldState,
        admin_org: i64,
        wl_user: i64,
        member_org: i64,
        other_org: i64,
        own_project: i64,
        other_project: i64,
        outside_user: i64,
        outside_org: i64,
    }

    /// A medium world has two white labels, so "outside" entities exist.
    fn fixture() -> Fixture {
        let date = NaiveDate::from_ymd_opt(2025, 5, 5).unwrap_or_default();
        let ws = WorldState::new(generate(Profile::Medium, 21, date));
        let wl = &ws.world.white_labels[0];
        let admin_org = wl.admin_organization_id;
        let in_wl = |o: &&crate::world::Organization| ws.org_wl(o.id) == Some(0);
        let regular: Vec<_> = ws
            .world
            .organizations
            .iter()
            .filter(in_wl)
            .filter(|o| o.id != admin_org && !ws.org_projects(o.id).is_empty())
            .collect();
        let member_org = regular[0].id;
        let other_org = regular[1].id;
        let wl_user = regular[0].members[0].user_id;
        let project_of = |org: i64| ws.world.projects[ws.org_projects(org)[0]].id;
        let outside = ws
            .world
            .organizations
            .iter()
            .find(|o| ws.org_wl(o.id) == Some(1) && !o.members.is_empty())
            .expect("an organization of white label 2");
        let outside_user = outside
            .members
            .iter()
            .map(|m| m.user_id)
            .find(|&u| !ws.user_in_wl(u, 0))
            .expect("a user only in white label 2");
        Fixture {
            admin_org,
            wl_user,
            member_org,
            other_org,
            own_project: project_of(member_org),
            other_project: project_of(other_org),
            outside_user,
            outside_org: outside.id,
            ws,
        }
    }

    fn code(r: Result<(), ApiError>) -> u16 {
        r.map_or_else(|e| e.status, |()| 200)
    }

    #[test]
    fn credential_resolution() {
        let f = fixture();
        let ws = &f.ws;
        let jwt = ws.world.white_labels[0].jwt.clone();
        let org_key = ws
            .org(f.member_org)
            .map(|o| o.api_key.clone())
            .unwrap_or_default();
        assert_eq!(
            credential(ws, Some(&jwt), None),
            Ok(Credential::WhiteLabel(0))
        );
        assert_eq!(
            credential(ws, Some(&jwt), Some(&org_key)),
            Ok(Credential::WhiteLabel(0)),
            "the JWT decides"
        );
        assert_eq!(
            credential(ws, None, Some(&org_key)),
            Ok(Credential::Organization(f.member_org))
        );
        assert_eq!(
            credential(ws, Some(""), Some(&org_key)),
            Ok(Credential::Organization(f.member_org))
        );
        assert_eq!(credential(ws, None, None).map_err(|e| e.status), Err(401));
        assert_eq!(
            credential(ws, Some("nope"), Some(&org_key)).map_err(|e| e.status),
            Err(401)
        );
        assert_eq!(
            credential(ws, None, Some("ei_nope")).map_err(|e| e.status),
            Err(401)
        );
    }

    #[test]
    fn scope_table() {
        let f = fixture();
        let ws = &f.ws;
        let jwt = Credential::WhiteLabel(0);
        let admin_key = Credential::Organization(f.admin_org);
        let org_key = Credential::Organization(f.member_org);
        let proj_key = Credential::Project(f.own_project);
        let missing = 999_999_999;
        #[rustfmt::skip]
        let table: Vec<(Credential, Op, u16)> = vec![
            // get-organization (docs/api.md, op 1)
            (jwt, Op::OrgInfo { org: f.member_org }, 200),
            (jwt, Op::OrgInfo { org: f.outside_org }, 403),
            (jwt, Op::OrgInfo { org: missing }, 404),
            (org_key, Op::OrgInfo { org: f.member_org }, 200),
            (org_key, Op::OrgInfo { org: f.other_org }, 403),
            (org_key, Op::OrgInfo { org: missing }, 404),
            (proj_key, Op::OrgInfo { org: f.member_org }, 403),
            // get-whitelabel-user (op 2)
            (jwt, Op::WhiteLabelUser { org: f.admin_org, user: f.wl_user }, 200),
            (jwt, Op::WhiteLabelUser { org: f.admin_org, user: f.outside_user }, 403),
            (jwt, Op::WhiteLabelUser { org: f.admin_org, user: missing }, 404),
            (jwt, Op::WhiteLabelUser { org: f.member_org, user: f.wl_user }, 403),
            (jwt, Op::WhiteLabelUser { org: missing, user: f.wl_user }, 404),
            (admin_key, Op::WhiteLabelUser { org: f.admin_org, user: f.wl_user }, 200),
            (admin_key, Op::WhiteLabelUser { org: f.member_org, user: f.wl_user }, 403),
            (org_key, Op::WhiteLabelUser { org: f.member_org, user: f.wl_user }, 403),
            (org_key, Op::WhiteLabelUser { org: f.admin_org, user: f.wl_user }, 403),
            (proj_key, Op::WhiteLabelUser { org: f.admin_org, user: f.wl_user }, 403),
            // list-organizations and list-projects (ops 3 and 5): every credential,
            // scoped below
            (jwt, Op::ListOrganizations, 200),
            (org_key, Op::ListOrganizations, 200),
            (proj_key, Op::ListOrganizations, 200),
            (jwt, Op::ListProjects, 200),
            (org_key, Op::ListProjects, 200),
            (proj_key, Op::ListProjects, 200),
            // list-user-organizations (op 4)
            (jwt, Op::UserOrganizations { user: f.wl_user }, 200),
            (jwt, Op::UserOrganizations { user: f.outside_user }, 403),
            (jwt, Op::UserOrganizations { user: missing }, 404),
            (admin_key, Op::UserOrganizations { user: f.wl_user }, 403),
            (org_key, Op::UserOrganizations { user: f.wl_user }, 403),
            (proj_key, Op::UserOrganizations { user: f.wl_user }, 403),
            // get-project-info (op 6)
            (jwt, Op::ProjectInfo { project: f.own_project }, 200),
            (jwt, Op::ProjectInfo { project: missing }, 404),
            (org_key, Op::ProjectInfo { project: f.own_project }, 200),
            (org_key, Op::ProjectInfo { project: f.other_project }, 403),
            (proj_key, Op::ProjectInfo { project: f.own_project }, 200),
            (proj_key, Op::ProjectInfo { project: f.other_project }, 403),
            (proj_key, Op::ProjectInfo { project: missing }, 404),
            // list-user-projects (op 7)
            (jwt, Op::UserProjects, 200),
            (org_key, Op::UserProjects, 403),
            (proj_key, Op::UserProjects, 403),
            // create-project (op 8)
            (jwt, Op::CreateProject { org: f.admin_org }, 200),
            (jwt, Op::CreateProject { org: f.member_org }, 403),
            (jwt, Op::CreateProject { org: missing }, 404),
            (admin_key, Op::CreateProject { org: f.admin_org }, 200),
            (admin_key, Op::CreateProject { org: f.member_org }, 403),
            (org_key, Op::CreateProject { org: f.member_org }, 403),
            (proj_key, Op::CreateProject { org: f.admin_org }, 403),
        ];
        for (cred, op, expected) in table {
            assert_eq!(code(authorize(ws, cred, op)), expected, "{cred:?} {op:?}");
        }
        // List scopes.
        assert!(scope_organizations(ws, jwt).len() > 10);
        assert_eq!(
            scope_organizations(ws, org_key),
            ws.org_index(f.member_org).into_iter().collect::<Vec<_>>()
        );
        assert_eq!(
            scope_organizations(ws, proj_key),
            ws.org_index(f.member_org).into_iter().collect::<Vec<_>>()
        );
        let all = scope_projects(ws, jwt);
        let mine = scope_projects(ws, org_key);
        assert!(!mine.is_empty() && mine.iter().all(|i| all.contains(i)));
        assert_eq!(scope_projects(ws, proj_key).len(), 1);
        assert!(
            all.iter()
                .all(|&i| ws.world.projects[i].deleted_date.is_none())
        );
        assert!(
            user_organizations(ws, 0, f.wl_user)
                .iter()
                .all(|&oi| ws.idx.org_wl[oi] == Some(0))
        );
    }
}
