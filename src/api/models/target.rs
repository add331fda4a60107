//! Hardware target constraints of a project.

use serde::{Deserialize, Serialize};

/// The hardware a project targets and the budgets its application must meet.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetConstraints {
    /// Target devices.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub target_devices: Vec<TargetDevice>,
    /// Application budgets.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub application_budgets: Vec<ApplicationBudget>,
    /// What the target selection is based on, e.g. `user-configured`.
    pub selected_target_based_on: Option<String>,
}

/// A target device.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetDevice {
    /// Processors of the device.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub processors: Vec<Processor>,
    /// Board.
    pub board: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Latency device used for estimates.
    pub latency_device: Option<String>,
}

/// A processor of a target device.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Processor {
    /// Part number.
    pub part: Option<String>,
    /// Format.
    pub format: Option<String>,
    /// Architecture.
    pub architecture: Option<String>,
    /// Specific architecture.
    pub specific_architecture: Option<String>,
    /// Accelerator.
    pub accelerator: Option<String>,
    /// Whether there is a floating point unit.
    pub fpu: Option<bool>,
    /// Clock rate (MHz).
    pub clock_rate_mhz: Option<Range>,
    /// Memory.
    pub memory: Option<MemoryPair>,
}

/// Budgets an application must meet on the target.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationBudget {
    /// Latency per inference (milliseconds).
    pub latency_per_inference_ms: Option<Range>,
    /// Energy per inference (joules).
    pub energy_per_inference_joules: Option<Range>,
    /// Memory the application needs besides the model.
    pub memory_overhead: Option<MemoryPair>,
}

/// A closed range of numbers.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Range {
    /// Lower bound.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub minimum: Option<f64>,
    /// Upper bound.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]
    pub maximum: Option<f64>,
}

/// Fast and slow memory of one kind (bytes).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySpec {
    /// Fast memory (bytes).
    pub fast_bytes: Option<Range>,
    /// Slow memory (bytes).
    pub slow_bytes: Option<Range>,
}

/// RAM and ROM.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryPair {
    /// RAM.
    pub ram: Option<MemorySpec>,
    /// ROM.
    pub rom: Option<MemorySpec>,
}
