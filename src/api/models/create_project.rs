//! `create-project`: creating a project in the white label context.

use super::envelope::impl_api_response;
use crate::api::secret::Secret;
use serde::{Deserialize, Serialize};

/// Body of create-project (`POST /v1/api/organizations/{organizationId}/whitelabel/projects`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateProjectRequest {
    /// Name of the project. A missing name reads as empty so that [`validate`]
    /// reports it, rather than a parse error.
    ///
    /// [`validate`]: CreateProjectRequest::validate
    #[serde(default)]
    pub project_name: String,
    /// Who may view the project; the service's default applies when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_visibility: Option<ProjectVisibility>,
    /// Owner by identifier; this or `owner_email` must be set.
    #[serde(
        default,
        deserialize_with = "crate::api::tolerant::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub owner_id: Option<i64>,
    /// Owner by e-mail address; this or `owner_id` must be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_email: Option<String>,
}

/// Visibility of a new project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectVisibility {
    /// Viewable by anyone on the internet, editable by collaborators.
    Public,
    /// Viewable and editable only by collaborators.
    Private,
}

/// A [`CreateProjectRequest`] that breaks the request contract of create-project.
// The e-mail address is personal data, so no variant carries it into log lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    /// `projectName` is empty or only whitespace.
    #[error("projectName must not be empty")]
    EmptyProjectName,
    /// Neither `ownerId` nor `ownerEmail` is set.
    #[error("either ownerId or ownerEmail must be set")]
    MissingOwner,
    /// `ownerEmail` is not an e-mail address.
    #[error("ownerEmail is not an e-mail address (expected one '@' with text on both sides)")]
    InvalidOwnerEmail,
}

impl CreateProjectRequest {
    /// Checks the request's rules (docs/api.md, create-project) that the types cannot
    /// express.
    pub fn validate(&self) -> Result<(), InvalidRequest> {
        if self.project_name.trim().is_empty() {
            return Err(InvalidRequest::EmptyProjectName);
        }
        match (&self.owner_id, &self.owner_email) {
            (None, None) => Err(InvalidRequest::MissingOwner),
            (_, Some(email)) if !looks_like_email(email) => Err(InvalidRequest::InvalidOwnerEmail),
            _ => Ok(()),
        }
    }
}

/// Deliberately loose: the service is the authority on addresses, this only catches
/// values that cannot be one (no '@', several, or nothing on one side).
fn looks_like_email(text: &str) -> bool {
    match text.split_once('@') {
        Some((local, domain)) => {
            !local.trim().is_empty() && !domain.trim().is_empty() && !domain.contains('@')
        }
        None => false,
    }
}

/// Response of create-project.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateProjectResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// Identifier of the new project.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// API key of the new project.
    pub api_key: Option<Secret>,
}

impl_api_response!(CreateProjectResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::ApiResponse;
    use crate::api::models::test_support::parse_fully_mapped;

    fn request(
        name: &str,
        owner_id: Option<i64>,
        owner_email: Option<&str>,
    ) -> CreateProjectRequest {
        CreateProjectRequest {
            project_name: name.to_owned(),
            project_visibility: None,
            owner_id,
            owner_email: owner_email.map(str::to_owned),
        }
    }

    #[test]
    fn valid_requests_pass() {
        assert_eq!(
            request("Édition Ünïcode", Some(101), None).validate(),
            Ok(())
        );
        assert_eq!(
            request("p", None, Some("zoë@exämple.de")).validate(),
            Ok(())
        );
        assert_eq!(request("p", Some(1), Some("a@b")).validate(), Ok(()));
    }

    #[test]
    fn empty_or_blank_name_is_rejected() {
        assert_eq!(
            request("", Some(1), None).validate(),
            Err(InvalidRequest::EmptyProjectName)
        );
        assert_eq!(
            request(" \t\n", Some(1), None).validate(),
            Err(InvalidRequest::EmptyProjectName)
        );
    }

    #[test]
    fn an_owner_is_required() {
        assert_eq!(
            request("p", None, None).validate(),
            Err(InvalidRequest::MissingOwner)
        );
    }

    #[test]
    fn owner_email_must_look_like_an_address() {
        for bad in [
            "",
            "zoe",
            "@example.com",
            "zoe@",
            " @example.com",
            "zoe@ ",
            "a@b@c",
        ] {
            assert_eq!(
                request("p", None, Some(bad)).validate(),
                Err(InvalidRequest::InvalidOwnerEmail),
                "{bad:?}"
            );
        }
        // An id does not excuse a malformed address that is also sent.
        assert_eq!(
            request("p", Some(1), Some("nope")).validate(),
            Err(InvalidRequest::InvalidOwnerEmail)
        );
    }

    #[test]
    fn error_messages_name_the_field_but_not_the_address() {
        let message = InvalidRequest::InvalidOwnerEmail.to_string();
        assert!(message.contains("ownerEmail"), "{message}");
        assert!(InvalidRequest::MissingOwner.to_string().contains("ownerId"));
        assert!(
            InvalidRequest::EmptyProjectName
                .to_string()
                .contains("projectName")
        );
    }

    #[test]
    fn request_serializes_camel_case_and_omits_unset_fields() {
        let full = CreateProjectRequest {
            project_name: "Zoë's project".to_owned(),
            project_visibility: Some(ProjectVisibility::Private),
            owner_id: Some(101),
            owner_email: Some("zoe@example.com".to_owned()),
        };
        let json = serde_json::to_value(&full).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "projectName": "Zoë's project",
                "projectVisibility": "private",
                "ownerId": 101,
                "ownerEmail": "zoe@example.com"
            })
        );

        let minimal = serde_json::to_string(&request("p", Some(7), None)).unwrap();
        assert_eq!(minimal, r#"{"projectName":"p","ownerId":7}"#);
    }

    #[test]
    fn request_parses_and_a_missing_name_is_left_to_validate() {
        let parsed: CreateProjectRequest =
            serde_json::from_str(r#"{"projectVisibility": "public", "ownerId": 5.0}"#).unwrap();
        assert_eq!(parsed.project_visibility, Some(ProjectVisibility::Public));
        assert_eq!(parsed.owner_id, Some(5));
        assert_eq!(parsed.validate(), Err(InvalidRequest::EmptyProjectName));
        assert!(
            serde_json::from_str::<CreateProjectRequest>(
                r#"{"projectName": "p", "projectVisibility": "secret"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn full_response_parses_with_every_field() {
        let body = r#"{"success": true, "error": "aucune", "id": 4712, "apiKey": "ei_new_project_key_5f3a"}"#;
        let response: CreateProjectResponse = parse_fully_mapped(body, &[]);
        assert!(response.success());
        assert_eq!(response.error_text(), Some("aucune"));
        assert_eq!(response.id, Some(4712));
        assert_eq!(
            response.api_key.as_ref().map(Secret::expose),
            Some("ei_new_project_key_5f3a")
        );
    }

    #[test]
    fn response_debug_never_shows_the_key() {
        let body = r#"{"success": true, "id": 4712, "apiKey": "ei_new_project_key_5f3a"}"#;
        let response: CreateProjectResponse = serde_json::from_str(body).unwrap();
        let debug = format!("{response:?}");
        assert!(!debug.contains("ei_new_project_key_5f3a"), "{debug}");
        assert!(!debug.contains("5f3a"), "{debug}");
        assert!(debug.contains("4712"), "{debug}");
    }

    #[test]
    fn failed_response_reads_without_id_or_key() {
        let body = r#"{"success": false, "error": "Owner not found", "id": null}"#;
        let response: CreateProjectResponse = serde_json::from_str(body).unwrap();
        assert!(!response.success());
        assert_eq!(response.error_text(), Some("Owner not found"));
        assert!(response.id.is_none() && response.api_key.is_none());
        assert!(serde_json::from_str::<CreateProjectResponse>(r#"{"id": 1}"#).is_err());
        assert!(
            serde_json::from_str::<CreateProjectResponse>(r#"{"success": true, "id": 1.5}"#)
                .is_err()
        );
    }
}
