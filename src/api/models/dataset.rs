//! Datasets of an organization (the `datasets` of the single-organization response).

use crate::api::tolerant::Timestamp;
use serde::{Deserialize, Serialize};

/// An organization dataset.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dataset {
    /// Dataset name.
    pub dataset: Option<String>,
    /// When the newest file was created.
    pub last_file_created: Option<Timestamp>,
    /// Total size of the files (bytes).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_file_size: Option<i64>,
    /// Number of files.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_file_count: Option<i64>,
    /// Number of data items.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_item_count: Option<i64>,
    /// Number of data items that passed the checklist.
    // The upper-case `OK` is not what camelCase derives from the field name.
    #[serde(
        rename = "totalItemCountChecklistOK",
        default,
        deserialize_with = "crate::api::tolerant::opt_i64"
    )]
    pub total_item_count_checklist_ok: Option<i64>,
    /// Number of data items that failed the checklist.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub total_item_count_checklist_failed: Option<i64>,
    /// Tags.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub tags: Vec<String>,
    /// Dataset type, e.g. `clinical` (the JSON name is `type`).
    pub r#type: Option<String>,
    /// Category.
    pub category: Option<String>,
    /// Storage bucket the dataset lives in.
    pub bucket: Option<DatasetBucket>,
    /// Path inside the bucket.
    pub bucket_path: Option<String>,
}

/// The storage bucket of a dataset.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetBucket {
    /// Bucket identifier.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub id: Option<i64>,
    /// Bucket name.
    pub bucket: Option<String>,
    /// Path inside the bucket.
    pub path: Option<String>,
    /// Human-readable description of the full bucket path.
    pub full_bucket_path_description: Option<String>,
    /// How many directory levels deep data items are named.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub data_item_naming_levels_deep: Option<i64>,
}
