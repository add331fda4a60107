//! Organizations: list-organizations and list-user-organizations, and the response of
//! get-organization (docs/api.md).

use super::envelope::impl_api_response;
use super::{Dataset, Experiment, OrganizationMember, Project, Readme};
use crate::api::tolerant::{Quantity, Timestamp};
use serde::{Deserialize, Serialize};

/// An organization.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    /// Organization identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Whether the header image is masked.
    pub show_header_img_mask: Option<bool>,
    /// Members.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub users: Vec<OrganizationMember>,
    /// Whether this is a developer profile rather than a real organization.
    pub is_developer_profile: Option<bool>,
    /// White label the organization belongs to.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub whitelabel_id: Option<i64>,
    /// Trial identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub trial_id: Option<i64>,
    /// When the trial expired.
    pub trial_expired_date: Option<Timestamp>,
    /// When the trial was upgraded.
    pub trial_upgraded_date: Option<Timestamp>,
    /// When the organization was created.
    pub created: Option<Timestamp>,
    /// Logo URL.
    pub logo: Option<String>,
    /// Header image URL.
    pub header_img: Option<String>,
    /// White label name.
    pub whitelabel_name: Option<String>,
    /// Projects of the organization.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub projects: Vec<Project>,
    /// When the contract started.
    pub contract_start_date: Option<Timestamp>,
    /// When the organization was deleted.
    pub deleted_date: Option<Timestamp>,
}

/// Default compute requests and limits of an organization's jobs.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputeLimits {
    /// CPU requested.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub requests_cpu: Option<f64>,
    /// Memory requested.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub requests_memory: Option<f64>,
    /// CPU limit.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub limits_cpu: Option<f64>,
    /// Memory limit.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub limits_memory: Option<f64>,
}

/// Option lists the command line tools offer.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CliLists {
    /// Choices of last layer for object detection, e.g. `mobilenet-ssd`.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub object_detection_last_layer_options: Vec<CliOption>,
    /// Choices of image input scaling, e.g. `0..1`.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub image_input_scaling_options: Vec<CliOption>,
}

/// One labelled choice of a [`CliLists`] list.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CliOption {
    /// Text shown to the user.
    pub label: Option<String>,
    /// Value passed on.
    pub value: Option<String>,
}

/// Performance settings of an organization.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationPerformance {
    /// Job limit (no unit is documented: docs/api.md).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub job_limit_m: Option<i64>,
}

/// Entitlements of an organization (bytes, seconds per year and counts: docs/api.md,
/// get-organization); whole numbers are kept exact ([`Quantity`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntitlementLimits {
    /// Storage entitlement.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]
    pub total_storage: Option<Quantity>,
    /// Compute time entitlement per year.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]
    pub compute_time_per_year: Option<Quantity>,
    /// GPU compute time entitlement per year.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]
    pub gpu_compute_time_per_year: Option<Quantity>,
    /// Project count entitlement.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]
    pub number_of_projects: Option<Quantity>,
    /// User count entitlement.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]
    pub number_of_users: Option<Quantity>,
}

/// Response of get-organization (`GET /v1/api/organizations/{organizationId}`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The organization.
    pub organization: Option<Organization>,
    /// Datasets of the organization.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub datasets: Vec<Dataset>,
    /// Default compute requests and limits.
    pub default_compute_limits: Option<ComputeLimits>,
    /// Experiments the organization has access to.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub experiments: Vec<Experiment>,
    /// Option lists of the command line tools.
    pub cli_lists: Option<CliLists>,
    /// Performance settings.
    pub performance: Option<OrganizationPerformance>,
    /// Entitlements.
    pub entitlement_limits: Option<EntitlementLimits>,
    /// Readme; present only if one is set.
    pub readme: Option<Readme>,
    /// White label the organization belongs to.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub whitelabel_id: Option<i64>,
}

/// Response of `list-organizations` (`GET /v1/api/organizations`) and
/// `list-user-organizations` (`GET /v1/api/users/{userId}/organizations`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationListResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The organizations.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub organizations: Vec<Organization>,
}

/// `list-organizations` read for discovery only: the organizations' ids, nothing else.
///
/// With a JWT on a large white label the full list is tens of megabytes (every
/// organization with its members and projects); the sync needs only the ids (each
/// organization's full document comes from get-organization), so it skips the rest
/// instead of building it in memory.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationIdList {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The organizations, ids only.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub organizations: Vec<IdOnly>,
}

/// An object of which only `id` is read.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct IdOnly {
    /// The identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
}

/// `list-user-organizations` read for the mirror's links: each organization's id and name.
///
/// The answer repeats every organization whole (members, projects) for every user
/// who can reach it: much of a large sync's JSON. The links table needs two
/// fields of it; the raw body keeps the rest, and each organization's full
/// document comes from get-organization.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationLinkList {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The organizations, id and name only.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub organizations: Vec<OrganizationLink>,
}

/// An organization of which only `id` and `name` are read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OrganizationLink {
    /// The identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// The organization's name.
    pub name: Option<String>,
}

impl_api_response!(
    OrganizationResponse,
    OrganizationListResponse,
    OrganizationIdList,
    OrganizationLinkList
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::ApiResponse;
    use crate::api::models::test_support::{
        entitlement_limits_json, experiment_json, parse_fully_mapped, project_json, user_base_json,
    };

    macro_rules! organization_json {
        () => {
            concat!(
                r#"{
                "id": 12,
                "name": "Édition Ünïcode SA",
                "showHeaderImgMask": true,
                "users": [{"#,
                user_base_json!(),
                r#",
                    "added": "2023-05-01T12:00:00Z",
                    "role": "admin",
                    "projectCount": 4,
                    "datasets": ["capteurs-été", "gestures"],
                    "lastAccessToOrganization": "2026-01-30T08:00:00.5Z",
                    "lastOrganizationProjectAccessed": 4711
                }],
                "isDeveloperProfile": false,
                "whitelabelId": 7,
                "trialId": 33,
                "trialExpiredDate": "2023-06-01T00:00:00Z",
                "trialUpgradedDate": "2023-05-20T00:00:00Z",
                "created": "2023-04-01",
                "logo": "https://cdn.example.com/org/12/logo.png",
                "headerImg": "https://cdn.example.com/org/12/header.png",
                "whitelabelName": "Acme Studio",
                "projects": ["#,
                project_json!(),
                r#"],
                "contractStartDate": "2024-01-01T00:00:00Z",
                "deletedDate": "2026-12-31T23:59:59Z"
            }"#
            )
        };
    }

    #[test]
    fn full_organization_response_parses_with_every_field() {
        let body = concat!(
            r#"{"success": true, "error": "", "organization": "#,
            organization_json!(),
            r#", "datasets": [{
                "dataset": "capteurs-été",
                "lastFileCreated": "2026-01-15T11:11:11Z",
                "totalFileSize": 5368709120,
                "totalFileCount": 1200,
                "totalItemCount": 300,
                "totalItemCountChecklistOK": 290,
                "totalItemCountChecklistFailed": 10,
                "tags": ["imu", "été"],
                "type": "clinical",
                "category": "Accelerometer",
                "bucket": {"id": 5, "bucket": "acme-data", "path": "/capteurs", "fullBucketPathDescription": "s3://acme-data/capteurs", "dataItemNamingLevelsDeep": 2},
                "bucketPath": "/capteurs/été"
            }],
            "defaultComputeLimits": {"requestsCpu": 0.5, "requestsMemory": 2048, "limitsCpu": 2, "limitsMemory": 8192},
            "experiments": ["#,
            experiment_json!(),
            r#"],
            "cliLists": {
                "objectDetectionLastLayerOptions": [{"label": "MobileNet SSD", "value": "mobilenet-ssd"}],
                "imageInputScalingOptions": [{"label": "Pixels 0..1", "value": "0..1"}]
            },
            "performance": {"jobLimitM": 120},
            "entitlementLimits": "#,
            entitlement_limits_json!(),
            r#",
            "readme": {"markdown": "**Über uns**", "html": "<h1>Über uns</h1>"},
            "whitelabelId": 7
        }"#
        );
        let response: OrganizationResponse = parse_fully_mapped(body, &[]);
        assert!(response.success());
        let organization = response.organization.as_ref().expect("organization");
        assert_eq!(organization.name.as_deref(), Some("Édition Ünïcode SA"));
        assert_eq!(
            organization.created.map(|t| t.as_text()).as_deref(),
            Some("2023-04-01T00:00:00.000Z")
        );
        assert_eq!(organization.users[0].role.as_deref(), Some("admin"));
        assert_eq!(
            organization.users[0].last_organization_project_accessed,
            Some(4711)
        );
        assert_eq!(organization.projects[0].id, Some(4711));
        let dataset = &response.datasets[0];
        assert_eq!(dataset.total_item_count_checklist_ok, Some(290));
        assert_eq!(dataset.r#type.as_deref(), Some("clinical"));
        assert_eq!(
            dataset
                .bucket
                .as_ref()
                .and_then(|b| b.data_item_naming_levels_deep),
            Some(2)
        );
        assert_eq!(
            response
                .default_compute_limits
                .as_ref()
                .and_then(|c| c.requests_cpu),
            Some(0.5)
        );
        let cli = response.cli_lists.as_ref().expect("cli lists");
        assert_eq!(
            cli.image_input_scaling_options[0].value.as_deref(),
            Some("0..1")
        );
        assert_eq!(
            response.performance.as_ref().and_then(|p| p.job_limit_m),
            Some(120)
        );
        let limits = response.entitlement_limits.as_ref().expect("limits");
        assert_eq!(
            limits.compute_time_per_year,
            Some(Quantity::Fraction(3_600_000.5))
        );
        assert_eq!(limits.total_storage, Some(Quantity::Whole(107_374_182_400)));
    }

    #[test]
    fn full_organization_list_parses_with_every_field() {
        let body = concat!(
            r#"{"success": true, "error": "-", "organizations": ["#,
            organization_json!(),
            "]}"
        );
        let response: OrganizationListResponse = parse_fully_mapped(body, &[]);
        assert_eq!(response.organizations.len(), 1);
        assert_eq!(response.organizations[0].trial_id, Some(33));
    }

    #[test]
    fn sparse_organization_response_reads_as_none() {
        let body = r#"{"success": true, "organization": {"id": 12, "users": null, "logo": null},
            "datasets": null, "defaultComputeLimits": {"limitsCpu": null}, "readme": null}"#;
        let response: OrganizationResponse = serde_json::from_str(body).unwrap();
        let organization = response.organization.as_ref().expect("organization");
        assert!(organization.users.is_empty());
        assert!(organization.projects.is_empty());
        assert!(organization.logo.is_none());
        assert!(response.datasets.is_empty());
        assert!(response.experiments.is_empty());
        assert!(response.readme.is_none());
        assert!(response.entitlement_limits.is_none());
        assert!(
            response
                .default_compute_limits
                .as_ref()
                .is_some_and(|c| c.limits_cpu.is_none())
        );
    }

    #[test]
    fn success_is_required() {
        assert!(serde_json::from_str::<OrganizationResponse>(r#"{"organization": null}"#).is_err());
        assert!(
            serde_json::from_str::<OrganizationListResponse>(
                r#"{"success": null, "organizations": []}"#
            )
            .is_err()
        );
    }

    #[test]
    fn numbers_reject_strings_and_integers_reject_fractions() {
        let text = r#"{"success": true, "entitlementLimits": {"totalStorage": "100"}}"#;
        assert!(serde_json::from_str::<OrganizationResponse>(text).is_err());
        let fraction = r#"{"success": true, "organizations": [{"trialId": 1.25}]}"#;
        assert!(serde_json::from_str::<OrganizationListResponse>(fraction).is_err());
        let integral = r#"{"success": true, "organizations": [{"id": 3.0, "whitelabelId": 7.0}]}"#;
        let response: OrganizationListResponse = serde_json::from_str(integral).unwrap();
        assert_eq!(response.organizations[0].id, Some(3));
        assert_eq!(response.organizations[0].whitelabel_id, Some(7));
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body = r#"{"success": true, "billing": {"plan": "x"}, "organization": {"id": 1, "futureFlag": true, "users": [{"id": 2, "shoeSize": 44}]}}"#;
        let response: OrganizationResponse = serde_json::from_str(body).unwrap();
        let organization = response.organization.expect("organization");
        assert_eq!(organization.users[0].id, Some(2));
    }
}
