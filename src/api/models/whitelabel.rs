//! The white label user (get-whitelabel-user) with its organizations, trials and daily metrics.

use super::envelope::impl_api_response;
use super::user::user_record;
use super::{EntitlementLimits, Experiment, Project};
use crate::api::tolerant::{DatedTimestamp, Timestamp};
use serde::{Deserialize, Serialize};

user_record! {
    /// A user as a white label administrator sees it.
    pub struct WhitelabelUser {
        /// Organizations of the user.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
        pub organizations: Vec<OrganizationSummary>,
        /// Projects of the user.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
        pub projects: Vec<Project>,
        /// Experiments the user has access to.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
        pub experiments: Vec<Experiment>,
        /// Whether the user is suspended.
        pub suspended: Option<bool>,
        /// Trials of the user.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
        pub trials: Vec<Trial>,
        /// Whether the user is on an evaluation.
        pub evaluation: Option<bool>,
        /// Whether the user is an ambassador.
        pub ambassador: Option<bool>,
        /// Daily usage metrics, typically one per day of the last year.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_year_vec")]
        pub daily_metrics: Vec<DailyMetrics>,
    }
}

/// An organization as listed in a white label user record.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationSummary {
    /// Organization identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Whether this is a developer profile.
    pub is_developer_profile: Option<bool>,
    /// White label the organization belongs to.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub whitelabel_id: Option<i64>,
    /// Whether the user is an administrator of the organization.
    pub is_admin: Option<bool>,
    /// When the organization was created.
    pub created: Option<Timestamp>,
    /// Trial identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub trial_id: Option<i64>,
    /// When the trial expired.
    pub trial_expired_date: Option<Timestamp>,
    /// When the trial was upgraded.
    pub trial_upgraded_date: Option<Timestamp>,
    /// Entitlements.
    pub entitlement_limits: Option<EntitlementLimits>,
    /// Number of users.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub user_count: Option<i64>,
    /// Number of administrators.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub admin_count: Option<i64>,
    /// Number of private projects.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub private_project_count: Option<i64>,
    /// License applied to the organization's public projects.
    pub public_project_license: Option<PublicProjectLicense>,
    /// Logo URL.
    pub logo: Option<String>,
    /// When the organization was last accessed.
    pub last_accessed: Option<Timestamp>,
}

/// License of an organization's public projects.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicProjectLicense {
    /// License name.
    pub name: Option<String>,
    /// Link to the license text.
    pub link: Option<String>,
}

/// A trial of a user.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trial {
    /// Trial identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// User identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub user_id: Option<i64>,
    /// Organization identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub organization_id: Option<i64>,
    /// When the trial was created.
    pub created: Option<Timestamp>,
    /// When the trial is due to expire.
    pub expiration_date: Option<Timestamp>,
    /// When the trial expired.
    pub expired_date: Option<Timestamp>,
    /// When the trial was deleted.
    pub deleted_date: Option<Timestamp>,
    /// When the trial was upgraded.
    pub upgraded_date: Option<Timestamp>,
    /// Notes.
    pub notes: Option<String>,
}

/// Usage metrics of one day.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyMetrics {
    /// The day measured, as written (its offset names the calendar day).
    pub date: Option<DatedTimestamp>,
    /// Total users.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_users: Option<i64>,
    /// Total staff users.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_staff_users: Option<i64>,
    /// Total projects.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_projects: Option<i64>,
    /// CPU compute time of the current contract (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_current_contract_cpu_compute_time_seconds: Option<i64>,
    /// GPU compute time of the current contract (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_current_contract_gpu_compute_time_seconds: Option<i64>,
    /// Compute time of the current contract (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_current_contract_compute_time_seconds: Option<i64>,
    /// Total storage size (bytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_storage_size_bytes: Option<i64>,
    /// Users added that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub users_added: Option<i64>,
    /// Users deleted that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub users_deleted: Option<i64>,
    /// Projects added that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub projects_added: Option<i64>,
    /// Projects deleted that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub projects_deleted: Option<i64>,
    /// CPU compute time used that day (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub cpu_compute_time_seconds: Option<i64>,
    /// GPU compute time used that day (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub gpu_compute_time_seconds: Option<i64>,
    /// Compute time used that day (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub compute_time_seconds: Option<i64>,
    /// Storage added that day (bytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub storage_bytes_added: Option<i64>,
    /// Storage deleted that day (bytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub storage_bytes_deleted: Option<i64>,
    /// Staff users added that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub staff_users_added: Option<i64>,
    /// Staff users deleted that day.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub staff_users_deleted: Option<i64>,
    /// Since when the compute time totals are calculated.
    pub compute_time_calculated_since: Option<Timestamp>,
}

/// Response of get-whitelabel-user
/// (`GET /v1/api/organizations/{organizationId}/whitelabel/users/{userId}`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhitelabelUserResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The user.
    pub user: Option<WhitelabelUser>,
}

impl_api_response!(WhitelabelUserResponse => crate::api::metrics_scan::parse_whitelabel_user);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::ApiResponse;
    use crate::api::models::test_support::{
        entitlement_limits_json, experiment_json, parse_fully_mapped, project_json, user_base_json,
    };

    const DAILY_METRICS: &str = r#"{
        "date": "2026-01-30T00:00:00Z",
        "totalUsers": 1520,
        "totalStaffUsers": 12,
        "totalProjects": 8421,
        "totalCurrentContractCpuComputeTimeSeconds": 360000,
        "totalCurrentContractGpuComputeTimeSeconds": 72000,
        "totalCurrentContractComputeTimeSeconds": 432000,
        "totalStorageSizeBytes": 1099511627776,
        "usersAdded": 3,
        "usersDeleted": 1,
        "projectsAdded": 17,
        "projectsDeleted": 2,
        "cpuComputeTimeSeconds": 5400,
        "gpuComputeTimeSeconds": 1800,
        "computeTimeSeconds": 7200,
        "storageBytesAdded": 52428800,
        "storageBytesDeleted": 1048576,
        "staffUsersAdded": 0,
        "staffUsersDeleted": 0,
        "computeTimeCalculatedSince": "2025-02-01T00:00:00.000Z"
    }"#;

    fn full_body() -> String {
        let head = concat!(
            r#"{"success": true, "error": "n/a", "user": {"#,
            user_base_json!(),
            r#",
            "organizations": [{
                "id": 12,
                "name": "Édition Ünïcode SA",
                "isDeveloperProfile": false,
                "whitelabelId": 7,
                "isAdmin": true,
                "created": "2023-04-01T00:00:00Z",
                "trialId": 33,
                "trialExpiredDate": "2023-06-01T00:00:00Z",
                "trialUpgradedDate": "2023-05-20T00:00:00Z",
                "entitlementLimits": "#,
            entitlement_limits_json!(),
            r#",
                "userCount": 25,
                "adminCount": 3,
                "privateProjectCount": 11,
                "publicProjectLicense": {"name": "Apache-2.0", "link": "https://www.apache.org/licenses/LICENSE-2.0"},
                "logo": "https://cdn.example.com/org/12/logo.png",
                "lastAccessed": "2026-01-31T09:59:59.999Z"
            }],
            "projects": ["#,
            project_json!(),
            r#"],
            "experiments": ["#,
            experiment_json!(),
            r#"],
            "suspended": false,
            "trials": [{
                "id": 33,
                "userId": 101,
                "organizationId": 12,
                "created": "2023-05-01T00:00:00Z",
                "expirationDate": "2023-06-01T00:00:00Z",
                "expiredDate": "2023-06-01T00:00:05Z",
                "deletedDate": "2023-07-01T00:00:00Z",
                "upgradedDate": "2023-05-20T00:00:00Z",
                "notes": "Verlängert wegen Messe – Zoë"
            }],
            "evaluation": true,
            "ambassador": false,
            "dailyMetrics": ["#
        );
        format!("{head}{DAILY_METRICS}]}}}}")
    }

    #[test]
    fn full_whitelabel_user_parses_with_every_field() {
        let response: WhitelabelUserResponse = parse_fully_mapped(&full_body(), &[]);
        assert!(response.success());
        let user = response.user.as_ref().expect("user");
        assert_eq!(user.name.as_deref(), Some("Zoë Müller"));
        assert_eq!(user.organizations[0].private_project_count, Some(11));
        assert_eq!(
            user.organizations[0]
                .public_project_license
                .as_ref()
                .and_then(|l| l.name.as_deref()),
            Some("Apache-2.0")
        );
        assert_eq!(
            user.trials[0].notes.as_deref(),
            Some("Verlängert wegen Messe – Zoë")
        );
        let day = &user.daily_metrics[0];
        assert_eq!(day.total_storage_size_bytes, Some(1_099_511_627_776));
        assert_eq!(day.compute_time_seconds, Some(7200));
        assert_eq!(
            day.date.map(|d| d.day().to_string()).as_deref(),
            Some("2026-01-30")
        );
        assert_eq!(user.projects[0].id, Some(4711));
        assert_eq!(user.experiments[0].enabled, Some(true));
    }

    #[test]
    fn a_year_of_daily_metrics_parses() {
        let day =
            r#"{"date": "2025-01-01T00:00:00Z", "totalUsers": 10.0, "computeTimeSeconds": 60}"#;
        let days = vec![day; 365].join(",");
        let body = format!(r#"{{"success": true, "user": {{"id": 5, "dailyMetrics": [{days}]}}}}"#);
        let response: WhitelabelUserResponse = serde_json::from_str(&body).unwrap();
        let user = response.user.expect("user");
        assert_eq!(user.daily_metrics.len(), 365);
        assert!(user.daily_metrics.iter().all(|d| d.total_users == Some(10)));
        assert!(user.daily_metrics.iter().all(|d| d.users_added.is_none()));
    }

    #[test]
    fn missing_and_null_fields_are_none_or_empty() {
        let body = r#"{"success": false, "error": "User not found", "user": {"id": 5, "trials": null, "suspended": null,
            "organizations": [{"id": 1, "publicProjectLicense": null}]}}"#;
        let response: WhitelabelUserResponse = serde_json::from_str(body).unwrap();
        assert!(!response.success());
        assert_eq!(response.error_text(), Some("User not found"));
        let user = response.user.expect("user");
        assert!(user.trials.is_empty());
        assert!(user.daily_metrics.is_empty());
        assert!(user.suspended.is_none());
        assert!(user.staff_info.is_none());
        assert!(user.organizations[0].public_project_license.is_none());
        assert!(user.organizations[0].user_count.is_none());
    }

    #[test]
    fn success_is_required() {
        let error =
            serde_json::from_str::<WhitelabelUserResponse>(r#"{"user": null}"#).unwrap_err();
        assert!(
            error.to_string().contains("missing field `success`"),
            "{error}"
        );
    }

    #[test]
    fn bad_metric_value_is_an_error() {
        let body = r#"{"success": true, "user": {"dailyMetrics": [{"usersAdded": 2.5}]}}"#;
        assert!(serde_json::from_str::<WhitelabelUserResponse>(body).is_err());
        let body = r#"{"success": true, "user": {"dailyMetrics": [{"date": "gestern"}]}}"#;
        let error = serde_json::from_str::<WhitelabelUserResponse>(body).unwrap_err();
        assert!(error.to_string().contains("\"gestern\""), "{error}");
    }
}
