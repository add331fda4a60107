//! Devices connected to a project (the `devices` of the project information).

use crate::api::tolerant::Timestamp;
use serde::{Deserialize, Serialize};

/// A device connected to a project.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    /// Row identifier of the device.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// Device identifier the device reports itself.
    pub device_id: Option<String>,
    /// When the device was first seen.
    pub created: Option<Timestamp>,
    /// When the device was last seen.
    pub last_seen: Option<Timestamp>,
    /// Name.
    pub name: Option<String>,
    /// Device type.
    pub device_type: Option<String>,
    /// Sensors of the device.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub sensors: Vec<Sensor>,
    /// Whether remote management is connected.
    // The service spells these two fields in snake case.
    #[serde(rename = "remote_mgmt_connected")]
    pub remote_mgmt_connected: Option<bool>,
    /// Whether the device can stream snapshots.
    pub supports_snapshot_streaming: Option<bool>,
    /// Remote management mode, e.g. `disconnected`.
    pub remote_mgmt_mode: Option<String>,
    /// Remote management host.
    #[serde(rename = "remote_mgmt_host")]
    pub remote_mgmt_host: Option<String>,
    /// What the device runs, when it runs a deployed model.
    pub inference_info: Option<InferenceInfo>,
}

/// A sensor of a device.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sensor {
    /// Sensor name.
    pub name: Option<String>,
    /// Longest sample the sensor can take (seconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub max_sample_length_s: Option<f64>,
    /// Supported sampling frequencies.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub frequencies: Vec<f64>,
}

/// The model a device runs.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InferenceInfo {
    /// Project the model comes from.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub project_id: Option<i64>,
    /// Owner of that project.
    pub project_owner: Option<String>,
    /// Name of that project.
    pub project_name: Option<String>,
    /// Deployed version.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub deployed_version: Option<i64>,
    /// Model type, e.g. `classification`.
    pub model_type: Option<String>,
}
