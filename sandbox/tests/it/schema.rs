//! The rules of the platform's published schema that the API's description does not show
//! (docs/api.md lists them per operation: integer
//! or number, nullability, enum sets), checked on every answer of a `small` world:
//! one test per rule.

use crate::common::{Api, sandbox};
use orgledger_sandbox::{HardCases, Profile};
use serde_json::Value;
use std::sync::OnceLock;

/// Every answer of get-organization, get-whitelabel-user, both project lists and
/// get-project-info of one `small` world (with its hard cases).
struct Corpus {
    org_infos: Vec<Value>,
    users: Vec<Value>,
    project_lists: Vec<Value>,
    project_infos: Vec<Value>,
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(collect())
    })
}

async fn collect() -> Corpus {
    let sb = sandbox(Profile::Small, HardCases::Default, "").await;
    let api = Api::new(&sb);
    let admin_org = sb.info.whitelabel_organization_id;
    let orgs = api.get("/v1/api/organizations").await.json;
    let mut org_infos = Vec::new();
    let mut user_ids = Vec::new();
    let mut project_ids = Vec::new();
    for org in orgs["organizations"].as_array().expect("organizations") {
        let info = api
            .get(&format!("/v1/api/organizations/{}", org["id"]))
            .await;
        assert_eq!(info.status, 200, "{org}");
        for u in info.json["organization"]["users"]
            .as_array()
            .expect("users")
        {
            user_ids.extend(u["id"].as_i64());
        }
        for p in info.json["organization"]["projects"]
            .as_array()
            .expect("projects")
        {
            project_ids.extend(p["id"].as_f64().map(|id| id as i64));
        }
        org_infos.push(info.json);
    }
    user_ids.sort_unstable();
    user_ids.dedup();
    project_ids.sort_unstable();
    project_ids.dedup();
    let mut users = Vec::new();
    for id in user_ids {
        let r = api
            .get(&format!(
                "/v1/api/organizations/{admin_org}/whitelabel/users/{id}"
            ))
            .await;
        assert_eq!(r.status, 200, "user {id}");
        users.push(r.json);
    }
    let mut project_infos = Vec::new();
    for id in project_ids {
        let r = api.get(&format!("/v1/api/{id}")).await;
        if r.status == 200 && r.json["success"] == true {
            project_infos.push(r.json);
        }
    }
    let project_lists = vec![
        api.get("/v1/api/projects").await.json,
        api.get("/v1/api/user/projects").await.json,
    ];
    sb.shutdown().await;
    Corpus {
        org_infos,
        users,
        project_lists,
        project_infos,
    }
}

fn array<'a>(v: &'a Value, what: &str) -> &'a [Value] {
    v.as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{what} is not an array: {v}"))
}

fn devices() -> Vec<&'static Value> {
    let d: Vec<&Value> = corpus()
        .project_infos
        .iter()
        .flat_map(|i| array(&i["devices"], "devices"))
        .collect();
    assert!(d.len() > 20, "the world has devices to check ({})", d.len());
    d
}

/// Every project record: in lists, in organizations, in users and in get-project-info.
fn projects() -> Vec<&'static Value> {
    let c = corpus();
    let lists = c
        .project_lists
        .iter()
        .flat_map(|l| array(&l["projects"], "projects"));
    let in_orgs = c
        .org_infos
        .iter()
        .flat_map(|o| array(&o["organization"]["projects"], "organization projects"));
    let in_users = c
        .users
        .iter()
        .flat_map(|u| array(&u["user"]["projects"], "user projects"));
    let infos = c.project_infos.iter().map(|i| &i["project"]);
    let all: Vec<&Value> = lists.chain(in_orgs).chain(in_users).chain(infos).collect();
    assert!(all.len() > 100, "{}", all.len());
    all
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64()
}

fn assert_in(v: &Value, allowed: &[&str], what: &str) {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v}"));
    assert!(
        allowed.contains(&s),
        "{what} `{s}` is not one of {allowed:?}"
    );
}

#[test]
fn sensor_max_sample_length_is_an_integer() {
    let mut sensors = 0;
    for d in devices() {
        for s in array(&d["sensors"], "sensors") {
            assert!(is_integer(&s["maxSampleLengthS"]), "{s}");
            for f in array(&s["frequencies"], "frequencies") {
                assert!(f.is_number(), "{s}");
            }
            sensors += 1;
        }
    }
    assert!(sensors > 0);
}

#[test]
fn device_last_seen_is_never_null() {
    for d in devices() {
        assert!(d["lastSeen"].is_string(), "{d}");
        assert!(d["created"].is_string(), "{d}");
    }
}

#[test]
fn inference_model_type_is_one_of_the_platform_three() {
    let mut seen = 0;
    for d in devices() {
        let info = &d["inferenceInfo"];
        assert!(
            !info.is_null() || d.get("inferenceInfo").is_none(),
            "null: {d}"
        );
        if info.is_object() {
            assert_in(
                &info["modelType"],
                &[
                    "classification",
                    "objectDetection",
                    "constrainedObjectDetection",
                ],
                "inferenceInfo.modelType",
            );
            assert!(is_integer(&info["deployedVersion"]), "{info}");
            seen += 1;
        }
    }
    assert!(seen > 0);
}

#[test]
fn device_optional_fields_are_left_out_rather_than_null() {
    for d in devices() {
        for field in ["remote_mgmt_host", "inferenceInfo"] {
            assert!(d.get(field).is_none_or(|v| !v.is_null()), "{field}: {d}");
        }
        assert_in(
            &d["remoteMgmtMode"],
            &["disconnected", "ingestion", "inference"],
            "remoteMgmtMode",
        );
    }
}

#[test]
fn getting_started_wizard_names_at_most_two_classes_and_a_known_tutorial() {
    let infos = &corpus().project_infos;
    assert!(
        infos
            .iter()
            .any(|i| { array(&i["dataSummary"]["labels"], "labels").len() > 2 })
    );
    for i in infos {
        let w = &i["showGettingStartedWizard"];
        if let Some(classes) = w.get("classes") {
            assert!(array(classes, "classes").len() <= 2, "{w}");
        }
        if let Some(tutorial) = w.get("tutorial") {
            assert_in(
                tutorial,
                &["kws", "cv"],
                "showGettingStartedWizard.tutorial",
            );
        }
        assert!(is_integer(&w["step"]), "{w}");
    }
}

#[test]
fn organization_summaries_always_carry_entitlement_limits() {
    let mut summaries = 0;
    let mut empty = 0;
    for u in &corpus().users {
        for o in array(&u["user"]["organizations"], "organizations") {
            let limits = &o["entitlementLimits"];
            assert!(limits.is_object(), "{o}");
            empty += usize::from(limits.as_object().is_some_and(|m| m.is_empty()));
            summaries += 1;
        }
    }
    assert!(
        summaries > 50 && empty > 0,
        "{summaries} summaries, {empty} empty"
    );
}

#[test]
fn project_enums_take_the_platform_values() {
    for p in projects() {
        assert_in(
            &p["labelingMethod"],
            &["single_label", "object_detection", "label_map"],
            "labelingMethod",
        );
        assert_in(
            &p["category"],
            &[
                "Accelerometer",
                "Audio",
                "Images",
                "Keyword spotting",
                "Object detection",
                "Other",
            ],
            "category",
        );
        assert_in(
            &p["tier"],
            &["free", "community-plus", "professional", "enterprise"],
            "tier",
        );
        if !p["license"].is_null() {
            assert_in(
                &p["license"],
                &["Apache-2.0", "BSD-3-Clause", "BSD-3-Clause-Clear"],
                "license",
            );
        }
    }
}

#[test]
fn project_information_enums_take_the_platform_values() {
    let engines = ["tflite-eon", "tflite-eon-ram-optimized", "tflite"];
    for i in &corpus().project_infos {
        assert_in(
            &i["acquisitionSettings"]["viewType"],
            &["list", "grid"],
            "viewType",
        );
        assert_in(
            &i["deploySettings"]["sensor"],
            &[
                "accelerometer",
                "microphone",
                "camera",
                "positional",
                "environmental",
                "fusion",
                "unknown",
            ],
            "deploySettings.sensor",
        );
        assert_in(
            &i["deploySettings"]["lastDeployModelEngine"],
            &engines,
            "lastDeployModelEngine",
        );
        assert_in(&i["lastShownModelEngine"], &engines, "lastShownModelEngine");
        if let Some(t) = i.get("targetConstraints") {
            assert_in(
                &t["selectedTargetBasedOn"],
                &[
                    "user-configured",
                    "default",
                    "default-accepted",
                    "recent-project",
                    "connected-device",
                ],
                "selectedTargetBasedOn",
            );
        }
    }
}

#[test]
fn integer_fields_of_project_information_are_integers() {
    for i in &corpus().project_infos {
        let c = &i["computeTime"];
        let a = &i["acquisitionSettings"];
        let p = &i["performance"];
        let mut ints = vec![
            &c["timeUsedMs"],
            &c["timeLeftMs"],
            &a["lengthMs"],
            &a["defaultPageSize"],
            &a["gridColumnCount"],
            &a["gridColumnCountDetailed"],
            &p["jobLimitM"],
            &p["dspFileSizeMb"],
            &p["trainJobRamMb"],
            &i["dataSummary"]["dataCount"],
        ];
        for part in ["training", "testing", "postProcessing"] {
            ints.push(&i["dataSummaryPerCategory"][part]["dataCount"]);
        }
        for v in ints {
            assert!(is_integer(v), "{v} in project {}", i["project"]["id"]);
        }
        for list in [
            "trainJobNotificationUids",
            "dspJobNotificationUids",
            "modelTestingJobNotificationUids",
            "exportJobNotificationUids",
        ] {
            assert!(array(&i[list], list).iter().all(is_integer), "{list}");
        }
    }
}

#[test]
fn organization_limits_and_counts_are_integers() {
    for o in &corpus().org_infos {
        assert!(is_integer(&o["performance"]["jobLimitM"]), "{o}");
        if let Some(limits) = o.get("entitlementLimits") {
            for (k, v) in limits.as_object().expect("limits object") {
                assert!(is_integer(v), "{k}: {v}");
            }
        }
    }
    for u in &corpus().users {
        for s in array(&u["user"]["organizations"], "organizations") {
            for k in ["userCount", "adminCount", "privateProjectCount"] {
                assert!(is_integer(&s[k]), "{k}: {s}");
            }
        }
    }
}
