//! Serde models of every resource the API returns (docs/api.md).
//!
//! Conventions: JSON names are camelCase; every field is optional (absent and `null`
//! both read as `None`, arrays as empty) except the envelope's `success`; integers,
//! numbers and timestamps go through the lenient parsers of `api::tolerant`
//! (timestamps become [`crate::api::Timestamp`]). Unknown fields are
//! ignored, since the client keeps each raw body next to its parsed model.

mod common;
mod create_project;
mod dataset;
mod device;
mod envelope;
mod organization;
mod project;
mod project_info;
mod project_settings;
mod target;
mod user;
mod whitelabel;

#[cfg(test)]
mod test_support;

pub use common::{Experiment, Readme};
pub use create_project::{
    CreateProjectRequest, CreateProjectResponse, InvalidRequest, ProjectVisibility,
};
pub use dataset::{Dataset, DatasetBucket};
pub use device::{Device, InferenceInfo, Sensor};
pub use envelope::{ApiResponse, Envelope};
pub use organization::{
    CliLists, CliOption, ComputeLimits, EntitlementLimits, IdOnly, Organization,
    OrganizationIdList, OrganizationLink, OrganizationLinkList, OrganizationListResponse,
    OrganizationPerformance, OrganizationResponse,
};
pub use project::{Project, ProjectListResponse};
pub use project_info::{DevelopmentKeys, ImpulseState, ModelEngine, ProjectInfoResponse};
pub use project_settings::{
    AcquisitionSettings, ComputeTime, DataSummary, DataSummaryPerCategory, DeploySettings,
    GettingStartedWizard, LatencyDevice, ProjectPerformance, ProjectUrls,
};
pub use target::{
    ApplicationBudget, MemoryPair, MemorySpec, Processor, Range, TargetConstraints, TargetDevice,
};
pub use user::{Collaborator, OrganizationMember, StaffInfo};
pub use whitelabel::{
    DailyMetrics, OrganizationSummary, PublicProjectLicense, Trial, WhitelabelUser,
    WhitelabelUserResponse,
};
