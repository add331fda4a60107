//! Projects (element of the project lists and `project` of the project information).

use super::Collaborator;
use super::envelope::impl_api_response;
use crate::api::tolerant::Timestamp;
use serde::{Deserialize, Serialize};

/// A project.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// Project identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// Project name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// When the project was created.
    pub created: Option<Timestamp>,
    /// Owner display name.
    pub owner: Option<String>,
    /// Whether the owner is a developer profile rather than an organization.
    pub owner_is_developer_profile: Option<bool>,
    /// Collaborators, with `isOwner` set.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub collaborators: Vec<Collaborator>,
    /// Labeling method, e.g. `single_label`.
    pub labeling_method: Option<String>,
    /// Free-form metadata object.
    pub metadata: Option<serde_json::Value>,
    /// Whether this is an enterprise project.
    pub is_enterprise_project: Option<bool>,
    /// White label the project belongs to.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub whitelabel_id: Option<i64>,
    /// Tier, e.g. `free`.
    pub tier: Option<String>,
    /// Whether a public version exists.
    pub has_public_version: Option<bool>,
    /// Whether the project is public.
    pub is_public: Option<bool>,
    /// Whether live public access is allowed.
    pub allows_live_public_access: Option<bool>,
    /// Whether processing of samples is paused.
    pub ind_pause_processing_samples: Option<bool>,
    /// Whether the public project is listed.
    pub public_project_listed: Option<bool>,
    /// When the project was last accessed.
    pub last_accessed: Option<Timestamp>,
    /// When the project was last modified.
    pub last_modified: Option<Timestamp>,
    /// Short text describing the last change.
    pub last_modification_details: Option<String>,
    /// Logo URL.
    pub logo: Option<String>,
    /// User identifier of the owner.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub owner_user_id: Option<i64>,
    /// Organization identifier of the owner.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub owner_organization_id: Option<i64>,
    /// Owner avatar URL.
    pub owner_avatar: Option<String>,
    /// User identifier of the developer profile.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub developer_profile_user_id: Option<i64>,
    /// Data explorer screenshot URL.
    pub data_explorer_screenshot: Option<String>,
    /// White label name.
    pub whitelabel_name: Option<String>,
    /// Tags.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub tags: Vec<String>,
    /// Category, e.g. `Accelerometer`.
    pub category: Option<String>,
    /// License, e.g. `Apache-2.0`.
    pub license: Option<String>,
    /// When the project was deleted.
    pub deleted_date: Option<Timestamp>,
    /// When the project was fully deleted.
    pub full_deletion_date: Option<Timestamp>,
    /// When full deletion is scheduled.
    pub scheduled_full_deletion_date: Option<Timestamp>,
}

/// Response of `list-projects` (`GET /v1/api/projects`) and `list-user-projects`
/// (`GET /v1/api/user/projects`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectListResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The projects.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub projects: Vec<Project>,
}

impl_api_response!(ProjectListResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::ApiResponse;
    use crate::api::models::test_support::{parse_fully_mapped, project_json, user_base_json};

    #[test]
    fn full_project_list_parses_with_every_field() {
        let body = concat!(
            r#"{"success": true, "error": "none", "projects": ["#,
            project_json!(),
            "]}"
        );
        let response: ProjectListResponse = parse_fully_mapped(body, &[]);
        assert!(response.success());
        let project = &response.projects[0];
        assert_eq!(project.id, Some(4711));
        assert_eq!(project.owner.as_deref(), Some("Zoë Müller"));
        assert_eq!(
            project
                .scheduled_full_deletion_date
                .map(|t| t.as_text())
                .as_deref(),
            Some("2026-03-01T00:00:00.000Z")
        );
        assert_eq!(project.collaborators[0].is_owner, Some(true));
        assert_eq!(
            project.collaborators[0]
                .staff_info
                .as_ref()
                .and_then(|s| s.has_sudo_rights),
            Some(true)
        );
        let metadata = project.metadata.as_ref().expect("metadata");
        assert_eq!(metadata["notes"][0], "ünïcode");
    }

    #[test]
    fn collaborator_base_fields_are_all_mapped() {
        let body = concat!("{", user_base_json!(), r#", "isOwner": false}"#);
        let collaborator: Collaborator = parse_fully_mapped(body, &[]);
        assert_eq!(collaborator.name.as_deref(), Some("Zoë Müller"));
        assert_eq!(
            collaborator.last_seen.map(|t| t.as_text()).as_deref(),
            Some("2026-01-30T16:45:00.000Z")
        );
        assert_eq!(collaborator.idps, vec!["google", "saml"]);
    }

    #[test]
    fn missing_and_null_fields_are_none_or_empty() {
        let body = r#"{"success": true, "projects": [{"id": 1, "name": null, "tags": null, "metadata": null, "collaborators": [{"id": null}]}]}"#;
        let response: ProjectListResponse = serde_json::from_str(body).unwrap();
        let project = &response.projects[0];
        assert_eq!(project.id, Some(1));
        assert!(project.name.is_none());
        assert!(project.metadata.is_none());
        assert!(project.created.is_none());
        assert!(project.tags.is_empty());
        assert!(project.collaborators[0].id.is_none());
        assert!(project.collaborators[0].permissions.is_empty());
        assert_eq!(response.error_text(), None);

        let empty: ProjectListResponse =
            serde_json::from_str(r#"{"success": true, "projects": null}"#).unwrap();
        assert!(empty.projects.is_empty());
        let absent: ProjectListResponse =
            serde_json::from_str(r#"{"success": false, "error": "Kein Zugriff"}"#).unwrap();
        assert!(absent.projects.is_empty());
        assert!(!absent.success());
        assert_eq!(absent.error_text(), Some("Kein Zugriff"));
    }

    #[test]
    fn success_is_required() {
        let missing =
            serde_json::from_str::<ProjectListResponse>(r#"{"projects": []}"#).unwrap_err();
        assert!(missing.to_string().contains("success"), "{missing}");
        assert!(serde_json::from_str::<ProjectListResponse>(r#"{"success": null}"#).is_err());
        assert!(serde_json::from_str::<ProjectListResponse>(r#"{"success": "true"}"#).is_err());
    }

    #[test]
    fn integral_float_ids_parse_and_fractions_fail() {
        let body = r#"{"success": true, "projects": [{"id": 3.0, "ownerUserId": 1e2}]}"#;
        let response: ProjectListResponse = serde_json::from_str(body).unwrap();
        assert_eq!(response.projects[0].id, Some(3));
        assert_eq!(response.projects[0].owner_user_id, Some(100));

        let fraction = r#"{"success": true, "projects": [{"id": 3.5}]}"#;
        let error = serde_json::from_str::<ProjectListResponse>(fraction).unwrap_err();
        assert!(error.to_string().contains("3.5"), "{error}");
    }

    #[test]
    fn timestamps_accept_every_iso_shape() {
        let body = r#"{"success": true, "projects": [
            {"created": "2026-01-31T10:00:00Z"},
            {"created": "2026-01-31T12:00:00+02:00"},
            {"created": "2026-01-31T10:00:00.000Z"},
            {"created": "2026-01-31T10:00:00"}
        ]}"#;
        let response: ProjectListResponse = serde_json::from_str(body).unwrap();
        let texts: Vec<_> = response
            .projects
            .iter()
            .map(|p| p.created.map(|t| t.as_text()))
            .collect();
        assert!(
            texts
                .iter()
                .all(|t| t.as_deref() == Some("2026-01-31T10:00:00.000Z")),
            "{texts:?}"
        );

        let bad = r#"{"success": true, "projects": [{"lastModified": "31/01/2026"}]}"#;
        let error = serde_json::from_str::<ProjectListResponse>(bad).unwrap_err();
        assert!(error.to_string().contains("31/01/2026"), "{error}");
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body = r#"{"success": true, "newTopLevel": {"a": [1, 2]}, "projects": [{"id": 9, "brandNewField": "ø", "nested": {"deep": null}}]}"#;
        let response: ProjectListResponse = serde_json::from_str(body).unwrap();
        assert_eq!(response.projects[0].id, Some(9));
    }
}
