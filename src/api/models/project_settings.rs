//! The per-project state and settings objects of the project information response.

use crate::api::tolerant::Timestamp;
use serde::{Deserialize, Serialize};

/// Amount of data in a project or one of its categories.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataSummary {
    /// Total length of the samples (milliseconds); the API's description leaves the
    /// numeric type open (docs/api.md, get-project-info), so fractions are kept.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub total_length_ms: Option<f64>,
    /// Labels present.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub labels: Vec<String>,
    /// Number of files; a float for the same reason as `total_length_ms`.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub data_count: Option<f64>,
}

/// Data summaries per data category.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataSummaryPerCategory {
    /// Training data.
    pub training: Option<DataSummary>,
    /// Testing data.
    pub testing: Option<DataSummary>,
    /// Post-processing data.
    pub post_processing: Option<DataSummary>,
}

/// Compute time budget of the current period.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputeTime {
    /// Start of the period.
    pub period_start_date: Option<Timestamp>,
    /// End of the period.
    pub period_end_date: Option<Timestamp>,
    /// Compute time used in the period (milliseconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub time_used_ms: Option<i64>,
    /// Compute time left in the period (milliseconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub time_left_ms: Option<i64>,
}

/// Data acquisition settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcquisitionSettings {
    /// Sampling interval (milliseconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub interval_ms: Option<i64>,
    /// Sample length (milliseconds).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub length_ms: Option<i64>,
    /// Whether segments are shifted.
    pub segment_shift: Option<bool>,
    /// Default page size.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub default_page_size: Option<i64>,
    /// View type, e.g. `list`.
    pub view_type: Option<String>,
    /// Number of grid columns.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub grid_column_count: Option<i64>,
    /// Number of grid columns in the detailed view.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub grid_column_count_detailed: Option<i64>,
    /// Whether exact sample lengths are shown.
    pub show_exact_sample_length: Option<bool>,
    /// Whether bounding boxes are edited inline.
    pub inline_edit_bounding_boxes: Option<bool>,
    /// Sensor last used.
    pub sensor: Option<String>,
    /// Label last used.
    pub label: Option<String>,
    /// Segment length.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub segment_length: Option<i64>,
}

/// Deployment settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploySettings {
    /// Whether the EON compiler is used.
    pub eon_compiler: Option<bool>,
    /// Sensor, e.g. `accelerometer`.
    pub sensor: Option<String>,
    /// Generated library name for Arduino.
    pub arduino_library_name: Option<String>,
    /// Generated library name for TinkerKit.
    pub tinkerkit_library_name: Option<String>,
    /// Generated library name for Particle.
    pub particle_library_name: Option<String>,
    /// Model engine of the last deployment, e.g. `tflite-eon`.
    pub last_deploy_model_engine: Option<String>,
}

/// Estimated model latency on one device.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencyDevice {
    /// Microcontroller.
    pub mcu: Option<String>,
    /// Device name.
    pub name: Option<String>,
    /// Whether this device is selected.
    pub selected: Option<bool>,
    /// Latency of the int8 model.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub int8_latency: Option<f64>,
    /// Latency of the int8 convolution layers.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub int8_conv_latency: Option<f64>,
    /// Latency of the float32 model.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub float32_latency: Option<f64>,
    /// Latency of the float32 convolution layers.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub float32_conv_latency: Option<f64>,
    /// Help text.
    pub help_text: Option<String>,
}

/// Links to the mobile clients of the project.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectUrls {
    /// Mobile client.
    pub mobile_client: Option<String>,
    /// Mobile client for a computer.
    pub mobile_client_computer: Option<String>,
    /// Mobile client for inference.
    pub mobile_client_inference: Option<String>,
}

/// State of the getting-started wizard.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GettingStartedWizard {
    /// Whether the wizard is shown.
    pub show_wizard: Option<bool>,
    /// Current step.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub step: Option<i64>,
    /// Tutorial, e.g. `kws`.
    pub tutorial: Option<String>,
    /// Classes of the tutorial.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub classes: Vec<String>,
}

/// Performance settings of a project.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectPerformance {
    /// Whether jobs get a GPU.
    pub gpu: Option<bool>,
    /// Job limit (no unit is documented: docs/api.md).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub job_limit_m: Option<i64>,
    /// Largest file the DSP accepts (megabytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub dsp_file_size_mb: Option<i64>,
    /// Whether enterprise performance applies.
    pub enterprise_performance: Option<bool>,
    /// RAM of a training job (megabytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub train_job_ram_mb: Option<i64>,
}
