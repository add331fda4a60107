//! The project information response (get-project-info) and its small top-level objects.

use super::envelope::impl_api_response;
use super::{
    AcquisitionSettings, Collaborator, ComputeTime, DataSummary, DataSummaryPerCategory,
    DeploySettings, Device, Experiment, GettingStartedWizard, LatencyDevice, Project,
    ProjectPerformance, ProjectUrls, Readme, TargetConstraints,
};
use crate::api::secret::Secret;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Response of get-project-info (`GET /v1/api/{projectId}`): the full information of one
/// project. The API's description calls most fields always present (docs/api.md,
/// get-project-info), but all are optional here so a partial document still mirrors
/// what it has.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectInfoResponse {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
    /// The project.
    pub project: Option<Project>,
    /// The project's API and HMAC keys (secrets).
    pub development_keys: Option<DevelopmentKeys>,
    /// How far the impulse is set up.
    pub impulse: Option<ImpulseState>,
    /// Connected devices.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub devices: Vec<Device>,
    /// Data of the whole project.
    pub data_summary: Option<DataSummary>,
    /// Data per category.
    pub data_summary_per_category: Option<DataSummaryPerCategory>,
    /// Compute time budget.
    pub compute_time: Option<ComputeTime>,
    /// Acquisition settings.
    pub acquisition_settings: Option<AcquisitionSettings>,
    /// Collaborators (without `isOwner`).
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub collaborators: Vec<Collaborator>,
    /// Deployment settings.
    pub deploy_settings: Option<DeploySettings>,
    /// Experiments the project has access to.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub experiments: Vec<Experiment>,
    /// Latency estimates per device.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub latency_devices: Vec<LatencyDevice>,
    /// Mobile client links.
    pub urls: Option<ProjectUrls>,
    /// Whether to prompt for the first impulse.
    pub show_create_first_impulse: Option<bool>,
    /// Getting-started wizard state.
    pub show_getting_started_wizard: Option<GettingStartedWizard>,
    /// Performance settings.
    pub performance: Option<ProjectPerformance>,
    /// Users notified when a training or retrain job finishes.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_i64_vec")]
    pub train_job_notification_uids: Vec<i64>,
    /// Users notified when a DSP job finishes.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_i64_vec")]
    pub dsp_job_notification_uids: Vec<i64>,
    /// Users notified when a model testing job finishes.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_i64_vec")]
    pub model_testing_job_notification_uids: Vec<i64>,
    /// Users notified when an export job finishes.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_i64_vec")]
    pub export_job_notification_uids: Vec<i64>,
    /// Whether there is training data newer than the last training.
    pub has_new_training_data: Option<bool>,
    /// Studio URL.
    pub studio_url: Option<String>,
    /// Deprecated by the service (the impulse type `BYOM` replaces it).
    pub in_pretrained_model_flow: Option<bool>,
    /// Whether actual sensor data shows in acquisition charts (structured labels).
    pub show_sensor_data_in_acquisition_graph: Option<bool>,
    /// Notifications to show within the project.
    #[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]
    pub notifications: Vec<String>,
    /// Readme; present only if one is set.
    pub readme: Option<Readme>,
    /// How CSV files are processed (free-form object).
    pub csv_import_config: Option<serde_json::Value>,
    /// DSP page size.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub dsp_page_size: Option<i64>,
    /// Hardware target constraints.
    pub target_constraints: Option<TargetConstraints>,
    /// Default selected impulse.
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub default_impulse_id: Option<i64>,
    /// Last model engine shown on the Keras/DSP/BYOM/Anomaly screens.
    pub last_shown_model_engine: Option<ModelEngine>,
    /// Storage used by versioning (MiB).
    #[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]
    pub versioning_storage_size_mib: Option<i64>,
}

impl_api_response!(ProjectInfoResponse);

/// The project's development keys; `Debug` shows neither.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DevelopmentKeys {
    /// API key of the project.
    pub api_key: Option<Secret>,
    /// HMAC key of the project.
    pub hmac_key: Option<Secret>,
}

/// How far the impulse is set up.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImpulseState {
    /// Whether an impulse was created.
    pub created: Option<bool>,
    /// Whether it is configured.
    pub configured: Option<bool>,
    /// Whether it is complete.
    pub complete: Option<bool>,
}

/// A model engine (`lastShownModelEngine`). Values outside the three documented ones
/// (docs/api.md, get-project-info) are kept as [`ModelEngine::Other`] so a new engine
/// does not fail the whole document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelEngine {
    /// `tflite-eon`
    TfliteEon,
    /// `tflite-eon-ram-optimized`
    TfliteEonRamOptimized,
    /// `tflite`
    Tflite,
    /// A value outside the documented three, kept verbatim.
    Other(String),
}

impl ModelEngine {
    /// The wire text.
    pub fn as_str(&self) -> &str {
        match self {
            ModelEngine::TfliteEon => "tflite-eon",
            ModelEngine::TfliteEonRamOptimized => "tflite-eon-ram-optimized",
            ModelEngine::Tflite => "tflite",
            ModelEngine::Other(text) => text,
        }
    }
}

impl From<&str> for ModelEngine {
    fn from(text: &str) -> Self {
        match text {
            "tflite-eon" => ModelEngine::TfliteEon,
            "tflite-eon-ram-optimized" => ModelEngine::TfliteEonRamOptimized,
            "tflite" => ModelEngine::Tflite,
            other => ModelEngine::Other(other.to_owned()),
        }
    }
}

impl Serialize for ModelEngine {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ModelEngine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(ModelEngine::from(text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::ApiResponse;
    use crate::api::models::test_support::{
        experiment_json, parse_fully_mapped, project_json, user_base_json,
    };

    const API_KEY: &str = "ei_0123456789abcdef0123456789abcdef";
    const HMAC_KEY: &str = "hmac_fedcba9876543210fedcba98765432";

    fn full_body() -> String {
        let body = concat!(
            r#"{"success": true, "error": "ok", "project": "#,
            project_json!(),
            r#",
            "developmentKeys": {"apiKey": "@API_KEY@", "hmacKey": "@HMAC_KEY@"},
            "impulse": {"created": true, "configured": true, "complete": false},
            "devices": [{
                "id": 9001,
                "deviceId": "ac:87:a3:0a:2d:1b",
                "created": "2025-11-02T14:00:00Z",
                "lastSeen": "2026-01-31T09:00:00.250+01:00",
                "name": "Capteur du salon",
                "deviceType": "NICLA_SENSE",
                "sensors": [{"name": "Accéléromètre", "maxSampleLengthS": 300, "frequencies": [62.5, 100]}],
                "remote_mgmt_connected": true,
                "supportsSnapshotStreaming": false,
                "remoteMgmtMode": "disconnected",
                "remote_mgmt_host": "remote-mgmt.example.com",
                "inferenceInfo": {"projectId": 4711, "projectOwner": "Zoë Müller", "projectName": "Édition Ünïcode", "deployedVersion": 14, "modelType": "classification"}
            }],
            "dataSummary": {"totalLengthMs": 3600000.5, "labels": ["idle", "wischen"], "dataCount": 420},
            "dataSummaryPerCategory": {
                "training": {"totalLengthMs": 2880000, "labels": ["idle", "wischen"], "dataCount": 336},
                "testing": {"totalLengthMs": 720000.5, "labels": ["idle", "wischen"], "dataCount": 84},
                "postProcessing": {"totalLengthMs": 1000, "labels": ["idle"], "dataCount": 1}
            },
            "computeTime": {"periodStartDate": "2026-01-01T00:00:00Z", "periodEndDate": "2026-12-31T23:59:59Z", "timeUsedMs": 1234567, "timeLeftMs": 98765432},
            "acquisitionSettings": {
                "intervalMs": 16, "lengthMs": 10000, "segmentShift": true, "defaultPageSize": 50,
                "viewType": "list", "gridColumnCount": 4, "gridColumnCountDetailed": 2,
                "showExactSampleLength": true, "inlineEditBoundingBoxes": false,
                "sensor": "Accéléromètre", "label": "wischen", "segmentLength": 1000
            },
            "collaborators": [{"#,
            user_base_json!(),
            r#"}],
            "deploySettings": {
                "eonCompiler": true, "sensor": "accelerometer",
                "arduinoLibraryName": "Edition_Unicode_inferencing",
                "tinkerkitLibraryName": "edition-unicode-tinkerkit",
                "particleLibraryName": "edition-unicode-particle",
                "lastDeployModelEngine": "tflite-eon"
            },
            "experiments": ["#,
            experiment_json!(),
            r#"],
            "latencyDevices": [{
                "mcu": "cortex-m4f-80mhz", "name": "Cortex-M4F 80MHz", "selected": true,
                "int8Latency": 12.5, "int8ConvLatency": 9, "float32Latency": 40.25, "float32ConvLatency": 31,
                "helpText": "Schätzung für 80 MHz"
            }],
            "urls": {
                "mobileClient": "https://smartphone.example.com/?apiKey=redacted",
                "mobileClientComputer": "https://smartphone.example.com/computer",
                "mobileClientInference": "https://smartphone.example.com/classifier"
            },
            "showCreateFirstImpulse": false,
            "showGettingStartedWizard": {"showWizard": true, "step": 2, "tutorial": "kws", "classes": ["oui", "non"]},
            "performance": {"gpu": true, "jobLimitM": 60, "dspFileSizeMb": 100, "enterprisePerformance": true, "trainJobRamMb": 8192},
            "trainJobNotificationUids": [101, 202],
            "dspJobNotificationUids": [101],
            "modelTestingJobNotificationUids": [202],
            "exportJobNotificationUids": [303],
            "hasNewTrainingData": true,
            "studioUrl": "https://studio.example.com/studio/4711",
            "inPretrainedModelFlow": false,
            "showSensorDataInAcquisitionGraph": true,
            "notifications": ["Neue Daten verfügbar"],
            "readme": {"markdown": "_Übersicht_", "html": "<h2>Übersicht</h2>"},
            "csvImportConfig": {"delimiter": ";", "timestampColumn": "zeit"},
            "dspPageSize": 25,
            "targetConstraints": {
                "targetDevices": [{
                    "processors": [{
                        "part": "nRF52840", "format": "mcu", "architecture": "Cortex-M",
                        "specificArchitecture": "Cortex-M4F", "accelerator": "none", "fpu": true,
                        "clockRateMhz": {"minimum": 64, "maximum": 64},
                        "memory": {
                            "ram": {"fastBytes": {"minimum": 0, "maximum": 262144}, "slowBytes": {"minimum": 0, "maximum": 0}},
                            "rom": {"fastBytes": {"minimum": 0, "maximum": 1048576}, "slowBytes": {"minimum": 0, "maximum": 0}}
                        }
                    }],
                    "board": "arduino-nano-33-ble", "name": "Arduino Nano 33 BLE Sense", "latencyDevice": "cortex-m4f-80mhz"
                }],
                "applicationBudgets": [{
                    "latencyPerInferenceMs": {"minimum": 0, "maximum": 100},
                    "energyPerInferenceJoules": {"minimum": 0, "maximum": 0.002},
                    "memoryOverhead": {
                        "ram": {"fastBytes": {"minimum": 0, "maximum": 32768}, "slowBytes": {"minimum": 0, "maximum": 0}},
                        "rom": {"fastBytes": {"minimum": 0, "maximum": 65536}, "slowBytes": {"minimum": 0, "maximum": 0}}
                    }
                }],
                "selectedTargetBasedOn": "user-configured"
            },
            "defaultImpulseId": 3,
            "lastShownModelEngine": "tflite-eon-ram-optimized",
            "versioningStorageSizeMib": 512
        }"#
        );
        body.replace("@API_KEY@", API_KEY)
            .replace("@HMAC_KEY@", HMAC_KEY)
    }

    #[test]
    fn full_project_info_parses_with_every_field() {
        // The top-level collaborators are the only user records without `isOwner`.
        let response: ProjectInfoResponse =
            parse_fully_mapped(&full_body(), &[".collaborators[].isOwner"]);
        assert!(response.success());
        assert_eq!(response.project.as_ref().and_then(|p| p.id), Some(4711));
        let keys = response.development_keys.as_ref().expect("keys");
        assert_eq!(keys.api_key.as_ref().map(Secret::expose), Some(API_KEY));
        assert_eq!(keys.hmac_key.as_ref().map(Secret::expose), Some(HMAC_KEY));
        let device = &response.devices[0];
        assert_eq!(device.remote_mgmt_connected, Some(true));
        assert_eq!(
            device.remote_mgmt_host.as_deref(),
            Some("remote-mgmt.example.com")
        );
        assert_eq!(device.sensors[0].frequencies, vec![62.5, 100.0]);
        assert_eq!(
            device
                .inference_info
                .as_ref()
                .and_then(|i| i.deployed_version),
            Some(14)
        );
        assert_eq!(
            response
                .data_summary
                .as_ref()
                .and_then(|d| d.total_length_ms),
            Some(3_600_000.5)
        );
        let per_category = response
            .data_summary_per_category
            .as_ref()
            .expect("per category");
        assert_eq!(
            per_category
                .post_processing
                .as_ref()
                .and_then(|d| d.data_count),
            Some(1.0)
        );
        assert_eq!(
            response.compute_time.as_ref().and_then(|c| c.time_left_ms),
            Some(98_765_432)
        );
        assert!(response.collaborators[0].is_owner.is_none());
        let deploy = response.deploy_settings.as_ref().expect("deploy settings");
        assert_eq!(
            deploy.tinkerkit_library_name.as_deref(),
            Some("edition-unicode-tinkerkit")
        );
        assert_eq!(response.train_job_notification_uids, vec![101, 202]);
        assert_eq!(
            response.last_shown_model_engine,
            Some(ModelEngine::TfliteEonRamOptimized)
        );
        assert_eq!(response.versioning_storage_size_mib, Some(512));
        let target = response.target_constraints.as_ref().expect("target");
        let processor = &target.target_devices[0].processors[0];
        let rom = processor
            .memory
            .as_ref()
            .and_then(|m| m.rom.as_ref())
            .expect("rom");
        assert_eq!(
            rom.fast_bytes.as_ref().and_then(|r| r.maximum),
            Some(1_048_576.0)
        );
        let budget = &target.application_budgets[0];
        assert_eq!(
            budget
                .energy_per_inference_joules
                .as_ref()
                .and_then(|r| r.maximum),
            Some(0.002)
        );
    }

    #[test]
    fn debug_output_never_shows_the_keys() {
        let response: ProjectInfoResponse = serde_json::from_str(&full_body()).unwrap();
        let whole = format!("{response:?}");
        let keys = format!("{:?}", response.development_keys);
        for text in [&whole, &keys] {
            assert!(!text.contains(API_KEY), "API key leaked");
            assert!(!text.contains(HMAC_KEY), "HMAC key leaked");
            assert!(
                !text.contains("0123456789abcdef"),
                "part of the API key leaked"
            );
        }
        assert!(keys.contains("redacted"), "{keys}");
    }

    #[test]
    fn minimal_response_reads_as_none_and_empty() {
        let body = r#"{"success": true, "project": {"id": 1}, "devices": null, "developmentKeys": {"apiKey": null},
            "trainJobNotificationUids": null, "readme": null, "targetConstraints": {"targetDevices": [{"processors": [{"memory": {"ram": null}}]}]}}"#;
        let response: ProjectInfoResponse = serde_json::from_str(body).unwrap();
        assert!(response.devices.is_empty());
        assert!(
            response
                .development_keys
                .as_ref()
                .is_some_and(|k| k.api_key.is_none())
        );
        assert!(response.train_job_notification_uids.is_empty());
        assert!(response.export_job_notification_uids.is_empty());
        assert!(response.readme.is_none());
        assert!(response.csv_import_config.is_none());
        assert!(response.last_shown_model_engine.is_none());
        assert!(response.impulse.is_none());
        let target = response.target_constraints.expect("target");
        let memory = target.target_devices[0].processors[0]
            .memory
            .as_ref()
            .expect("memory");
        assert!(memory.ram.is_none() && memory.rom.is_none());
    }

    #[test]
    fn success_is_required() {
        assert!(serde_json::from_str::<ProjectInfoResponse>(r#"{"project": {"id": 1}}"#).is_err());
        assert!(serde_json::from_str::<ProjectInfoResponse>(r#"{"success": null}"#).is_err());
    }

    #[test]
    fn notification_uids_accept_integral_floats_only() {
        let body = r#"{"success": true, "dspJobNotificationUids": [1.0, 2]}"#;
        let response: ProjectInfoResponse = serde_json::from_str(body).unwrap();
        assert_eq!(response.dsp_job_notification_uids, vec![1, 2]);
        let fraction = r#"{"success": true, "dspJobNotificationUids": [1.5]}"#;
        assert!(serde_json::from_str::<ProjectInfoResponse>(fraction).is_err());
    }

    #[test]
    fn model_engine_keeps_unknown_values() {
        for known in ["tflite-eon", "tflite-eon-ram-optimized", "tflite"] {
            let engine = ModelEngine::from(known);
            assert!(!matches!(engine, ModelEngine::Other(_)), "{known}");
            assert_eq!(engine.as_str(), known);
        }
        let body = r#"{"success": true, "lastShownModelEngine": "tensorrt"}"#;
        let response: ProjectInfoResponse = serde_json::from_str(body).unwrap();
        let engine = response.last_shown_model_engine.expect("engine");
        assert_eq!(engine, ModelEngine::Other("tensorrt".to_owned()));
        assert_eq!(serde_json::to_string(&engine).unwrap(), "\"tensorrt\"");
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body = r#"{"success": true, "impulse": {"created": true, "kind": "BYOM"},
            "devices": [{"id": 4, "firmware": {"v": 2}}], "somethingNew": [null]}"#;
        let response: ProjectInfoResponse = serde_json::from_str(body).unwrap();
        assert_eq!(response.devices[0].id, Some(4));
        assert_eq!(response.impulse.and_then(|i| i.created), Some(true));
    }
}
