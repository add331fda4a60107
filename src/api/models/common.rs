//! Small records that several responses share.

use serde::{Deserialize, Serialize};

/// A platform feature flag the organization or project has access to.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Experiment {
    /// Experiment identifier (the JSON name is `type`).
    pub r#type: Option<String>,
    /// Display title.
    pub title: Option<String>,
    /// Whether the experiment is switched on.
    pub enabled: Option<bool>,
    /// Whether the user interface lists it.
    pub show_to_user: Option<bool>,
    /// Help text.
    pub help: Option<String>,
}

/// A readme, present only when one is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readme {
    /// Source text.
    pub markdown: Option<String>,
    /// Rendered HTML.
    pub html: Option<String>,
}
