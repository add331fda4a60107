//! Checks that a hand-written example and the model agree field for field.

use crate::api::tolerant::Timestamp;
use serde::Serialize;
use serde_json::Value;

/// Parses `example` as `T` and asserts, by walking the example next to the
/// re-serialized model, that:
/// - every key of the example is a field of the model (a misspelled field name would
///   otherwise be silently ignored and read as `None`),
/// - every field of the model is populated by the example (so the example is full),
///   except the paths listed in `may_be_absent` (`[]` stands for any array index),
/// - every value survives the round trip (timestamps compared as instants, numbers
///   as `f64`), and the example holds no `null` and no empty array.
pub(crate) fn parse_fully_mapped<T>(example: &str, may_be_absent: &[&str]) -> T
where
    T: serde::de::DeserializeOwned + Serialize,
{
    let model: T = serde_json::from_str(example).expect("example parses");
    let input: Value = serde_json::from_str(example).expect("example is JSON");
    let output = serde_json::to_value(&model).expect("model serializes");
    let mut problems = Vec::new();
    compare("", &input, &output, may_be_absent, &mut problems);
    assert!(
        problems.is_empty(),
        "example and model disagree:\n{}",
        problems.join("\n")
    );
    model
}

fn compare(
    path: &str,
    input: &Value,
    output: &Value,
    may_be_absent: &[&str],
    problems: &mut Vec<String>,
) {
    match (input, output) {
        (Value::Object(example), Value::Object(model)) => {
            for (key, value) in example {
                let child = format!("{path}.{key}");
                match model.get(key) {
                    Some(out) => compare(&child, value, out, may_be_absent, problems),
                    None => problems.push(format!("{child}: not a field of the model")),
                }
            }
            for (key, value) in model {
                let child = format!("{path}.{key}");
                if !example.contains_key(key) && !may_be_absent.contains(&child.as_str()) {
                    problems.push(format!("{child}: model field not populated ({value})"));
                }
            }
        }
        (Value::Array(example), Value::Array(model)) => {
            if example.is_empty() {
                problems.push(format!("{path}: empty array in the example"));
            }
            if example.len() != model.len() {
                problems.push(format!(
                    "{path}: {} elements became {}",
                    example.len(),
                    model.len()
                ));
            }
            let child = format!("{path}[]");
            for (value, out) in example.iter().zip(model) {
                compare(&child, value, out, may_be_absent, problems);
            }
        }
        (Value::Null, _) => problems.push(format!("{path}: null in the example")),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (Value::String(a), Value::String(b)) if a == b || same_instant(a, b) => {}
        (a, b) if a == b => {}
        (a, b) => problems.push(format!("{path}: {a} became {b}")),
    }
}

fn same_instant(a: &str, b: &str) -> bool {
    match (a.parse::<Timestamp>(), b.parse::<Timestamp>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The base fields of a user record, every one populated (an object body without braces).
macro_rules! user_base_json {
    () => {
        r#""id": 101,
        "username": "zmuller",
        "name": "Zoë Müller",
        "email": "zoe.muller@example.com",
        "created": "2023-04-12T08:15:30.123Z",
        "staffInfo": {"isStaff": false, "hasSudoRights": true, "companyName": "Édition Ünïcode SA"},
        "pending": false,
        "activated": true,
        "mfaConfigured": true,
        "photo": "https://cdn.example.com/photos/101.jpg",
        "lastSeen": "2026-01-30T17:45:00+01:00",
        "jobTitle": "Ingénieure données",
        "permissions": ["org:projects:data:write", "org:users:members:read"],
        "companyName": "Édition Ünïcode SA",
        "paymentCustomerId": "cus_Q1w2E3r4",
        "hasPendingPayments": false,
        "tier": "free",
        "idps": ["google", "saml"]"#
    };
}
pub(crate) use user_base_json;

/// A project with every field populated, including a collaborator with `isOwner`.
macro_rules! project_json {
    () => {
        concat!(
            r#"{
            "id": 4711,
            "name": "Édition Ünïcode — gesture detection",
            "description": "Détection de gestes sur l'accéléromètre",
            "created": "2024-03-01T09:00:00Z",
            "owner": "Zoë Müller",
            "ownerIsDeveloperProfile": false,
            "collaborators": [{"#,
            $crate::api::models::test_support::user_base_json!(),
            r#", "isOwner": true}],
            "labelingMethod": "single_label",
            "metadata": {"sensorPack": "v2", "notes": ["ünïcode", 3]},
            "isEnterpriseProject": true,
            "whitelabelId": 7,
            "tier": "enterprise",
            "hasPublicVersion": true,
            "isPublic": false,
            "allowsLivePublicAccess": false,
            "indPauseProcessingSamples": false,
            "publicProjectListed": true,
            "lastAccessed": "2026-01-31T10:00:00.000Z",
            "lastModified": "2026-01-29T16:20:05Z",
            "lastModificationDetails": "Neue Klasse „Wischen“ hinzugefügt",
            "logo": "https://cdn.example.com/logos/4711.png",
            "ownerUserId": 101,
            "ownerOrganizationId": 12,
            "ownerAvatar": "https://cdn.example.com/avatars/101.png",
            "developerProfileUserId": 202,
            "dataExplorerScreenshot": "https://cdn.example.com/shots/4711.png",
            "whitelabelName": "Acme Studio",
            "tags": ["gestures", "imu"],
            "category": "Accelerometer",
            "license": "Apache-2.0",
            "deletedDate": "2026-02-01T00:00:00Z",
            "fullDeletionDate": "2026-03-01T00:00:00Z",
            "scheduledFullDeletionDate": "2026-03-01T00:00:00.000+00:00"
        }"#
        )
    };
}
pub(crate) use project_json;

/// An experiment with every field populated.
macro_rules! experiment_json {
    () => {
        r#"{"type": "eon-tuner", "title": "EON Tüner", "enabled": true, "showToUser": true, "help": "Findet die beste Architektur"}"#
    };
}
pub(crate) use experiment_json;

/// Entitlement limits with every field populated.
macro_rules! entitlement_limits_json {
    () => {
        r#"{"totalStorage": 107374182400, "computeTimePerYear": 3600000.5, "gpuComputeTimePerYear": 720000, "numberOfProjects": 50, "numberOfUsers": 25}"#
    };
}
pub(crate) use entitlement_limits_json;
