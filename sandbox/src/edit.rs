//! Hand-made changes to the world (`POST /sandbox/edit`), for tests that need one
//! precise change at one moment rather than time travel's random ones: a limit
//! raised, a member's role changed or removed, a project soft-deleted, a trial
//! upgraded, an organization added.

use serde::Deserialize;

use super::world::{EntitlementLimits, Member, World};

/// One change, as the route's JSON body: `{"edit": "set_limit", ...}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case", deny_unknown_fields)]
pub enum Edit {
    /// One entitlement limit (`totalStorage`, `computeTimePerYear`,
    /// `gpuComputeTimePerYear`, `numberOfProjects`, `numberOfUsers`); null clears it.
    SetLimit {
        organization: i64,
        field: String,
        value: Option<i64>,
    },
    /// A member's role.
    SetRole {
        organization: i64,
        user: i64,
        role: String,
    },
    /// The user stops being a member of the organization.
    RemoveMember { organization: i64, user: i64 },
    /// The user becomes a member (again) with `role`.
    AddMember {
        organization: i64,
        user: i64,
        role: String,
    },
    /// The project is soft-deleted now (`deletedDate` set; it stays listed).
    DeleteProject { project: i64 },
    /// The trial is upgraded now.
    UpgradeTrial { trial: i64 },
    /// A new organization of the first white label, with no members; answers its id.
    AddOrganization { name: String },
}

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
}

impl World {
    /// Applies `edit`; returns the id of what it created or changed.
    pub fn apply_edit(&mut self, edit: &Edit) -> Result<i64, EditError> {
        let now = self.now;
        match edit {
            Edit::SetLimit {
                organization,
                field,
                value,
            } => {
                let org = self.org_mut(*organization)?;
                let limits = org
                    .entitlement_limits
                    .get_or_insert_with(EntitlementLimits::default);
                let slot = match field.as_str() {
                    "totalStorage" => &mut limits.total_storage,
                    "computeTimePerYear" => &mut limits.compute_time_per_year,
                    "gpuComputeTimePerYear" => &mut limits.gpu_compute_time_per_year,
                    "numberOfProjects" => &mut limits.number_of_projects,
                    "numberOfUsers" => &mut limits.number_of_users,
                    other => return Err(EditError::Invalid(format!("unknown limit `{other}`"))),
                };
                *slot = *value;
                Ok(*organization)
            }
            Edit::SetRole {
                organization,
                user,
                role,
            } => {
                let member = self
                    .org_mut(*organization)?
                    .members
                    .iter_mut()
                    .find(|m| m.user_id == *user)
                    .ok_or_else(|| {
                        EditError::NotFound(format!("member {user} of organization {organization}"))
                    })?;
                member.role = role.clone();
                Ok(*user)
            }
            Edit::RemoveMember { organization, user } => {
                let org = self.org_mut(*organization)?;
                let before = org.members.len();
                org.members.retain(|m| m.user_id != *user);
                if org.members.len() == before {
                    return Err(EditError::NotFound(format!(
                        "member {user} of organization {organization}"
                    )));
                }
                Ok(*user)
            }
            Edit::AddMember {
                organization,
                user,
                role,
            } => {
                if self.user(*user).is_none() {
                    return Err(EditError::NotFound(format!("user {user}")));
                }
                let org = self.org_mut(*organization)?;
                if org.members.iter().any(|m| m.user_id == *user) {
                    return Err(EditError::Invalid(format!(
                        "user {user} is already a member of organization {organization}"
                    )));
                }
                org.members.push(Member {
                    user_id: *user,
                    role: role.clone(),
                    added: now,
                    datasets: Vec::new(),
                    last_access: None,
                    last_project_accessed: None,
                });
                Ok(*user)
            }
            Edit::DeleteProject { project } => {
                let p = self
                    .projects
                    .iter_mut()
                    .find(|p| p.id == *project && !p.removed)
                    .ok_or_else(|| EditError::NotFound(format!("project {project}")))?;
                p.deleted_date = Some(now);
                Ok(*project)
            }
            Edit::UpgradeTrial { trial } => {
                let t = self
                    .trials
                    .iter_mut()
                    .find(|t| t.id == *trial)
                    .ok_or_else(|| EditError::NotFound(format!("trial {trial}")))?;
                t.upgraded_date = Some(now);
                Ok(*trial)
            }
            Edit::AddOrganization { name } => {
                let wl = self
                    .white_labels
                    .first()
                    .ok_or_else(|| EditError::Invalid("the world has no white label".into()))?;
                let admin = self.organization(wl.admin_organization_id).ok_or_else(|| {
                    EditError::NotFound(format!("admin organization {}", wl.admin_organization_id))
                })?;
                let mut org = admin.clone();
                org.id = self.organizations.iter().map(|o| o.id).max().unwrap_or(0) + 1;
                org.name = name.clone();
                org.created = now;
                org.is_developer_profile = false;
                org.contract_start_date = None;
                org.deleted_date = None;
                org.trial_id = None;
                org.members.clear();
                org.datasets.clear();
                org.api_key.clear();
                let id = org.id;
                self.organizations.push(org);
                Ok(id)
            }
        }
    }

    fn org_mut(&mut self, id: i64) -> Result<&mut super::world::Organization, EditError> {
        self.organizations
            .iter_mut()
            .find(|o| o.id == id)
            .ok_or_else(|| EditError::NotFound(format!("organization {id}")))
    }
}
