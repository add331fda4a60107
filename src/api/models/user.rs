//! User records: the base fields every user record has, and the two records built on
//! them here (project collaborator, organization member).

use crate::api::tolerant::Timestamp;
use serde::{Deserialize, Serialize};

/// Declares a user-record struct: the fields every user record shares (docs/api.md,
/// User records) followed by the extra fields given to it.
///
/// Three records share the base (collaborator, organization member, white label
/// user). `#[serde(flatten)]` would express that without repetition, but it buffers
/// each object into an intermediate map, which makes the large white label responses
/// several times slower to parse; writing the base list out three times would let the
/// copies drift. The macro keeps one list and plain, fast derived code.
macro_rules! user_record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident : $ty:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// User identifier.
            #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
            pub id: Option<i64>,
            /// Login name.
            pub username: Option<String>,
            /// Display name.
            pub name: Option<String>,
            /// E-mail address (personal data).
            pub email: Option<String>,
            /// When the account was created.
            pub created: Option<$crate::api::tolerant::Timestamp>,
            /// Staff flags of the account.
            pub staff_info: Option<$crate::api::models::StaffInfo>,
            /// Whether the account is still pending.
            pub pending: Option<bool>,
            /// Whether the account is activated.
            pub activated: Option<bool>,
            /// Whether multi-factor authentication is configured.
            pub mfa_configured: Option<bool>,
            /// Photo URL.
            pub photo: Option<String>,
            /// When the user was last seen.
            pub last_seen: Option<$crate::api::tolerant::Timestamp>,
            /// Job title.
            pub job_title: Option<String>,
            /// Permission identifiers, `<scope>:<area>:<name>:<action>`.
            #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
            pub permissions: Vec<String>,
            /// Company name.
            pub company_name: Option<String>,
            /// Customer identifier at the payment provider.
            pub payment_customer_id: Option<String>,
            /// Whether payments are pending.
            pub has_pending_payments: Option<bool>,
            /// Account tier, e.g. `free`.
            pub tier: Option<String>,
            /// Identity providers of the user.
            #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
            pub idps: Vec<String>,
            $(
                $(#[$field_meta])*
                pub $field: $ty,
            )*
        }
    };
}
pub(crate) use user_record;

/// Staff flags of a user account.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaffInfo {
    /// Whether the user is platform staff.
    pub is_staff: Option<bool>,
    /// Whether the user has sudo rights.
    pub has_sudo_rights: Option<bool>,
    /// Company name recorded for the staff member.
    pub company_name: Option<String>,
}

user_record! {
    /// A user record in a project's `collaborators`; also the top-level `collaborators`
    /// of the project information response, where `isOwner` is absent.
    pub struct Collaborator {
        /// Whether this collaborator owns the project (only inside a Project).
        pub is_owner: Option<bool>,
    }
}

user_record! {
    /// A member of an organization (element of `organization.users`).
    pub struct OrganizationMember {
        /// When the user joined the organization.
        pub added: Option<Timestamp>,
        /// Role in the organization, e.g. `admin`.
        pub role: Option<String>,
        /// Number of the organization's projects the member has.
        #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
        pub project_count: Option<i64>,
        /// Names of the datasets the member has access to.
        #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
        pub datasets: Vec<String>,
        /// When the member last accessed the organization.
        pub last_access_to_organization: Option<Timestamp>,
        /// Identifier of the organization project the member accessed last.
        #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
        pub last_organization_project_accessed: Option<i64>,
    }
}
