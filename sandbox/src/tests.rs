//! End-to-end tests: a real server on 127.0.0.1:0, spoken to with plain HTTP/1.1 over
//! `tokio::net::TcpStream` (no client library between the test and the wire).

use std::collections::HashMap;
use std::time::Instant;

use chrono::NaiveDate;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::world::{self, DailyMetric, Metrics, World};
use super::*;

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

fn host_of(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// One request on its own connection.
async fn call(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let host = host_of(url);
    let mut stream = TcpStream::connect(host).await.expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

struct Client {
    url: String,
    auth: Vec<(String, String)>,
}

impl Client {
    fn jwt(info: &SandboxInfo) -> Self {
        Self {
            url: info.url.clone(),
            auth: vec![("x-jwt-token".into(), info.jwt.clone())],
        }
    }
    fn key(info: &SandboxInfo, key: &str) -> Self {
        Self {
            url: info.url.clone(),
            auth: vec![("x-api-key".into(), key.to_string())],
        }
    }
    async fn get(&self, path: &str) -> Reply {
        let h: Vec<(&str, &str)> = self
            .auth
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        call(&self.url, "GET", path, &h, None).await
    }
    async fn post(&self, path: &str, body: Option<&str>) -> Reply {
        let h: Vec<(&str, &str)> = self
            .auth
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        call(&self.url, "POST", path, &h, body).await
    }
}

fn date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 4, 10).unwrap_or_default()
}

async fn sandbox(profile: Profile, faults: &str) -> SandboxHandle {
    start(SandboxOptions {
        profile,
        seed: 77,
        start_date: Some(date()),
        faults: faults.parse().expect("fault spec"),
        ..SandboxOptions::default()
    })
    .await
    .expect("sandbox starts")
}

fn assert_fields(v: &Value, fields: &[&str], what: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    for f in fields {
        assert!(
            obj.contains_key(*f),
            "{what} lacks `{f}`: keys {:?}",
            obj.keys().collect::<Vec<_>>()
        );
    }
}

#[rustfmt::skip]
const USER_FIELDS: &[&str] = &[
    "id", "username", "name", "email", "created", "staffInfo", "pending", "activated",
    "mfaConfigured", "photo", "lastSeen", "jobTitle", "permissions", "companyName",
    "paymentCustomerId", "hasPendingPayments", "tier", "idps",
];
#[rustfmt::skip]
const MEMBER_EXTRA: &[&str] = &[
    "added", "role", "projectCount", "datasets", "lastAccessToOrganization",
    "lastOrganizationProjectAccessed",
];
#[rustfmt::skip]
const PROJECT_FIELDS: &[&str] = &[
    "id", "name", "description", "created", "owner", "ownerIsDeveloperProfile", "collaborators",
    "labelingMethod", "metadata", "isEnterpriseProject", "whitelabelId", "tier",
    "hasPublicVersion", "isPublic", "allowsLivePublicAccess", "indPauseProcessingSamples",
    "publicProjectListed", "lastAccessed", "lastModified", "lastModificationDetails", "logo",
    "ownerUserId", "ownerOrganizationId", "ownerAvatar", "developerProfileUserId",
    "dataExplorerScreenshot", "whitelabelName", "tags", "category", "license", "deletedDate",
    "fullDeletionDate", "scheduledFullDeletionDate",
];
#[rustfmt::skip]
const ORG_FIELDS: &[&str] = &[
    "id", "name", "showHeaderImgMask", "users", "isDeveloperProfile", "whitelabelId", "trialId",
    "trialExpiredDate", "trialUpgradedDate", "created", "logo", "headerImg", "whitelabelName",
    "projects", "contractStartDate", "deletedDate",
];
#[rustfmt::skip]
const PROJECT_INFO_FIELDS: &[&str] = &[
    "success", "project", "developmentKeys", "impulse", "devices", "dataSummary",
    "dataSummaryPerCategory", "computeTime", "acquisitionSettings", "collaborators",
    "deploySettings", "experiments", "latencyDevices", "urls", "showCreateFirstImpulse",
    "showGettingStartedWizard", "performance", "trainJobNotificationUids",
    "dspJobNotificationUids", "modelTestingJobNotificationUids", "exportJobNotificationUids",
    "hasNewTrainingData", "studioUrl", "inPretrainedModelFlow",
    "showSensorDataInAcquisitionGraph", "notifications", "csvImportConfig", "dspPageSize",
    "targetConstraints", "defaultImpulseId", "lastShownModelEngine", "versioningStorageSizeMib",
];

fn check_project(p: &Value) {
    assert_fields(p, PROJECT_FIELDS, "project");
    let collabs = p["collaborators"].as_array().expect("collaborators");
    for c in collabs {
        assert_fields(c, USER_FIELDS, "collaborator");
        assert_fields(c, &["isOwner"], "collaborator");
    }
    if p["ownerUserId"].is_i64() {
        assert!(
            collabs.iter().any(|c| c["isOwner"] == true),
            "an owner in {p}"
        );
    }
}

fn check_org(o: &Value) {
    assert_fields(o, ORG_FIELDS, "organization");
    for u in o["users"].as_array().expect("users") {
        assert_fields(u, USER_FIELDS, "member");
        assert_fields(u, MEMBER_EXTRA, "member");
    }
    for p in o["projects"].as_array().expect("projects") {
        check_project(p);
    }
}

fn http_date(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[rustfmt::skip]
const ORG_RESPONSE_FIELDS: &[&str] = &[
    "success", "organization", "datasets", "defaultComputeLimits", "experiments", "cliLists",
    "performance", "whitelabelId",
];
#[rustfmt::skip]
const DATASET_FIELDS: &[&str] = &[
    "dataset", "lastFileCreated", "totalFileSize", "totalFileCount", "totalItemCount",
    "totalItemCountChecklistOK", "totalItemCountChecklistFailed", "tags", "type", "category",
    "bucket", "bucketPath",
];
#[rustfmt::skip]
const BUCKET_FIELDS: &[&str] = &[
    "id", "bucket", "path", "fullBucketPathDescription", "dataItemNamingLevelsDeep",
];
#[rustfmt::skip]
const WHITELABEL_USER_EXTRA: &[&str] = &[
    "organizations", "projects", "experiments", "suspended", "trials", "evaluation",
    "ambassador", "dailyMetrics",
];
#[rustfmt::skip]
const ORG_SUMMARY_FIELDS: &[&str] = &[
    "id", "name", "isDeveloperProfile", "whitelabelId", "isAdmin", "created", "trialId",
    "trialExpiredDate", "trialUpgradedDate", "entitlementLimits", "userCount", "adminCount",
    "privateProjectCount", "publicProjectLicense", "logo", "lastAccessed",
];
#[rustfmt::skip]
const DAILY_METRIC_FIELDS: &[&str] = &[
    "date", "totalUsers", "totalStaffUsers", "totalProjects",
    "totalCurrentContractCpuComputeTimeSeconds", "totalCurrentContractGpuComputeTimeSeconds",
    "totalCurrentContractComputeTimeSeconds", "totalStorageSizeBytes", "usersAdded",
    "usersDeleted", "projectsAdded", "projectsDeleted", "cpuComputeTimeSeconds",
    "gpuComputeTimeSeconds", "computeTimeSeconds", "storageBytesAdded", "storageBytesDeleted",
    "staffUsersAdded", "staffUsersDeleted", "computeTimeCalculatedSince",
];
#[rustfmt::skip]
const DEVICE_FIELDS: &[&str] = &[
    "id", "deviceId", "created", "lastSeen", "name", "deviceType", "sensors",
    "remote_mgmt_connected", "supportsSnapshotStreaming", "remoteMgmtMode",
];
#[rustfmt::skip]
const LATENCY_DEVICE_FIELDS: &[&str] = &[
    "mcu", "name", "selected", "int8Latency", "int8ConvLatency", "float32Latency",
    "float32ConvLatency", "helpText",
];
#[rustfmt::skip]
const PROCESSOR_FIELDS: &[&str] = &[
    "part", "format", "architecture", "specificArchitecture", "accelerator", "fpu",
    "clockRateMhz", "memory",
];

/// One world toured through every operation in the order of docs/api.md, each step building
/// on the ones before (the project create-project makes is read back, outlives a
/// time travel and is removed at the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_operations_end_to_end() {
    let sb = sandbox(Profile::Small, "").await;
    let t = Tour::new(&sb.info);
    let (org_id, member_id) = list_organizations_serves_the_white_label(&t).await;
    get_organization_serves_the_full_document(&t, org_id).await;
    let user = get_whitelabel_user_serves_the_user_and_metrics(&t, member_id).await;
    list_user_organizations_includes_the_members_organization(&t, member_id, org_id).await;
    list_projects_lists_only_active_projects(&t).await;
    get_project_info_serves_every_object(&t).await;
    let listed_before = list_user_projects_count(&t).await;
    let new = create_project_is_read_back_everywhere(&t, &sb, listed_before).await;
    create_project_by_email_and_its_refusals(&t, &user).await;
    errors_carry_the_envelope(&t, member_id).await;
    admin_routes_take_only_the_jwt(&t).await;
    time_travel_moves_the_date_and_the_metrics(&t, member_id, &user).await;
    an_injected_failure_stays_on_its_path_until_healed(&t, org_id).await;
    a_removed_project_is_gone_with_its_key(&t, &new).await;
    sb.shutdown().await;
}

/// What every step of the tour uses.
struct Tour {
    info: SandboxInfo,
    jwt: Client,
    /// The API key of the white label's admin organization.
    admin_key: Client,
    wl_org: i64,
    /// The sandbox's clock at the start (noon of the start date).
    clock: chrono::DateTime<chrono::Utc>,
}

impl Tour {
    fn new(info: &SandboxInfo) -> Self {
        Tour {
            info: info.clone(),
            jwt: Client::jwt(info),
            admin_key: Client::key(info, &info.org_api_key),
            wl_org: info.whitelabel_organization_id,
            clock: chrono::NaiveDateTime::new(date(), chrono::NaiveTime::MIN).and_utc()
                + chrono::Duration::hours(12),
        }
    }

    fn create_path(&self) -> String {
        format!("/v1/api/organizations/{}/whitelabel/projects", self.wl_org)
    }

    fn user_path(&self, user: i64) -> String {
        format!(
            "/v1/api/organizations/{}/whitelabel/users/{user}",
            self.wl_org
        )
    }
}

/// With the JWT, every organization of the white label; returns a regular
/// organization and one of its members.
async fn list_organizations_serves_the_white_label(t: &Tour) -> (i64, i64) {
    let r = t.jwt.get("/v1/api/organizations").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.get("date"), Some(&http_date(t.clock)));
    assert_eq!(
        r.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    let body = r.json();
    assert_fields(&body, &["success", "organizations"], "list-organizations");
    let orgs = body["organizations"].as_array().expect("organizations");
    assert!(orgs.len() >= 15, "{}", orgs.len());
    orgs.iter().for_each(check_org);
    let regular = orgs
        .iter()
        .find(|o| {
            o["isDeveloperProfile"] == false
                && o["id"] != t.wl_org
                && !o["users"].as_array().is_none_or(|u| u.is_empty())
        })
        .expect("a regular organization");
    (
        regular["id"].as_i64().unwrap_or(0),
        regular["users"][0]["id"].as_i64().unwrap_or(0),
    )
}

async fn get_organization_serves_the_full_document(t: &Tour, org_id: i64) {
    let r = t.jwt.get(&format!("/v1/api/organizations/{org_id}")).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_fields(&body, ORG_RESPONSE_FIELDS, "get-organization");
    check_org(&body["organization"]);
    for d in body["datasets"].as_array().expect("datasets") {
        assert_fields(d, DATASET_FIELDS, "dataset");
        assert_fields(&d["bucket"], BUCKET_FIELDS, "bucket");
    }
    assert_eq!(
        body["cliLists"]["objectDetectionLastLayerOptions"][0]["value"],
        "mobilenet-ssd"
    );
}

/// Returns the user record.
async fn get_whitelabel_user_serves_the_user_and_metrics(t: &Tour, member_id: i64) -> Value {
    let r = t.jwt.get(&t.user_path(member_id)).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    assert_fields(&body, &["success", "user"], "get-whitelabel-user");
    let user = &body["user"];
    assert_fields(user, USER_FIELDS, "white label user");
    assert_fields(user, WHITELABEL_USER_EXTRA, "white label user");
    for o in user["organizations"].as_array().expect("organizations") {
        assert_fields(o, ORG_SUMMARY_FIELDS, "organization summary");
    }
    let metrics = user["dailyMetrics"].as_array().expect("daily metrics");
    assert!(!metrics.is_empty());
    assert_fields(&metrics[0], DAILY_METRIC_FIELDS, "daily metrics");
    user.clone()
}

async fn list_user_organizations_includes_the_members_organization(
    t: &Tour,
    member_id: i64,
    org_id: i64,
) {
    let r = t
        .jwt
        .get(&format!("/v1/api/users/{member_id}/organizations"))
        .await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_fields(
        &body,
        &["success", "organizations"],
        "list-user-organizations",
    );
    let theirs = body["organizations"].as_array().expect("organizations");
    assert!(theirs.iter().any(|o| o["id"] == org_id));
    theirs.iter().for_each(check_org);
}

async fn list_projects_lists_only_active_projects(t: &Tour) {
    let r = t.jwt.get("/v1/api/projects").await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_fields(&body, &["success", "projects"], "list-projects");
    let projects = body["projects"].as_array().expect("projects");
    assert!(projects.len() > 50);
    projects.iter().for_each(check_project);
    assert!(projects.iter().all(|p| p["deletedDate"].is_null()));
}

/// Every nested object of the answer has its fields; `impulseId` selects an
/// impulse, and an unknown or malformed one is refused.
async fn get_project_info_serves_every_object(t: &Tour) {
    let project_id = t.info.project_id;
    let r = t.jwt.get(&format!("/v1/api/{project_id}")).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_fields(&body, PROJECT_INFO_FIELDS, "get-project-info");
    check_project(&body["project"]);
    assert_eq!(
        body["developmentKeys"]["apiKey"],
        t.info.project_api_key.as_str()
    );
    let target = &body["targetConstraints"];
    let cpu = &target["targetDevices"][0]["processors"][0];
    #[rustfmt::skip]
    let objects: &[(&Value, &[&str], &str)] = &[
        (&body["developmentKeys"], &["apiKey", "hmacKey"], "developmentKeys"),
        (&body["deploySettings"], &["eonCompiler", "sensor", "arduinoLibraryName",
            "tinkerkitLibraryName", "particleLibraryName", "lastDeployModelEngine"],
            "deploySettings"),
        (&body["computeTime"], &["periodStartDate", "periodEndDate", "timeUsedMs",
            "timeLeftMs"], "computeTime"),
        (&body["dataSummaryPerCategory"], &["training", "testing", "postProcessing"],
            "per category"),
        (&body["showGettingStartedWizard"], &["showWizard", "step", "tutorial", "classes"],
            "wizard"),
        (&body["performance"], &["gpu", "jobLimitM", "dspFileSizeMb",
            "enterprisePerformance", "trainJobRamMb"], "performance"),
        (&body["urls"], &["mobileClient", "mobileClientComputer", "mobileClientInference"],
            "urls"),
        // `remote_mgmt_host` and `inferenceInfo` are optional: left out when absent.
        (&body["devices"][0], DEVICE_FIELDS, "device"),
        (&body["devices"][0]["sensors"][0], &["name", "maxSampleLengthS", "frequencies"],
            "sensor"),
        (&body["latencyDevices"][0], LATENCY_DEVICE_FIELDS, "latency device"),
        (target, &["targetDevices", "applicationBudgets", "selectedTargetBasedOn"],
            "targetConstraints"),
        (&target["targetDevices"][0], &["processors", "board", "name", "latencyDevice"],
            "target device"),
        (cpu, PROCESSOR_FIELDS, "processor"),
        (&cpu["memory"]["ram"], &["fastBytes", "slowBytes"], "memory spec"),
        (&cpu["clockRateMhz"], &["minimum", "maximum"], "range"),
    ];
    for (value, fields, what) in objects {
        assert_fields(value, fields, what);
    }
    for c in body["collaborators"].as_array().expect("collaborators") {
        assert_fields(c, USER_FIELDS, "project info collaborator");
        assert!(c.get("isOwner").is_none(), "no isOwner at the top level");
    }
    if body["defaultImpulseId"] == 1 {
        let r = t
            .jwt
            .get(&format!("/v1/api/{project_id}?impulseId=1"))
            .await;
        assert_eq!(r.status, 200);
    }
    for (impulse, status) in [("99", 404), ("x", 400)] {
        let r = t
            .jwt
            .get(&format!("/v1/api/{project_id}?impulseId={impulse}"))
            .await;
        assert_eq!(r.status, status, "impulseId={impulse}");
    }
}

/// How many projects list-user-projects lists.
async fn list_user_projects_count(t: &Tour) -> usize {
    let r = t.jwt.get("/v1/api/user/projects").await;
    assert_eq!(r.status, 200);
    assert_fields(&r.json(), &["success", "projects"], "list-user-projects");
    r.json()["projects"].as_array().map_or(0, Vec::len)
}

/// A project made by create-project.
struct NewProject {
    id: i64,
    key: String,
}

/// Owned by the white label admin, so list-user-projects (which listed
/// `listed_before`) shows it too; its key reads it.
async fn create_project_is_read_back_everywhere(
    t: &Tour,
    sb: &SandboxHandle,
    listed_before: usize,
) -> NewProject {
    let admin_user = {
        let ws = sb.state.world.read().expect("lock");
        ws.world.white_labels[0].admin_user_id
    };
    let r = t
        .jwt
        .post(
            &t.create_path(),
            Some(&format!(r#"{{"projectName":"Édition 東京","ownerId":{admin_user},"projectVisibility":"public"}}"#)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_fields(&created, &["success", "id", "apiKey"], "create-project");
    let new = NewProject {
        id: created["id"].as_i64().expect("id"),
        key: created["apiKey"].as_str().expect("key").to_string(),
    };
    let listed = t.jwt.get("/v1/api/projects").await.json();
    assert!(lists(&listed["projects"], new.id));
    let r = t.jwt.get(&format!("/v1/api/{}", new.id)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["project"]["name"], "Édition 東京");
    assert_eq!(r.json()["developmentKeys"]["apiKey"], new.key.as_str());
    let org = t
        .jwt
        .get(&format!("/v1/api/organizations/{}", t.wl_org))
        .await
        .json();
    assert!(lists(&org["organization"]["projects"], new.id));
    let mine = t.jwt.get("/v1/api/user/projects").await.json();
    assert_eq!(
        mine["projects"].as_array().map_or(0, Vec::len),
        listed_before + 1
    );
    // The new project's key works for list-projects and get-project-info.
    let pk = Client::key(&t.info, &new.key);
    assert_eq!(pk.get(&format!("/v1/api/{}", new.id)).await.status, 200);
    assert_eq!(
        pk.get("/v1/api/projects").await.json()["projects"][0]["id"],
        new.id
    );
    new
}

/// Whether a list of projects holds project `id`.
fn lists(projects: &Value, id: i64) -> bool {
    projects
        .as_array()
        .expect("projects")
        .iter()
        .any(|p| p["id"] == id)
}

/// The owner by e-mail (any case), through the admin organization's API key; a
/// body breaking the contract is refused with the envelope.
async fn create_project_by_email_and_its_refusals(t: &Tour, user: &Value) {
    let email = user["email"].as_str().expect("email").to_uppercase();
    let r = t
        .admin_key
        .post(
            &t.create_path(),
            Some(&format!(
                r#"{{"projectName":"by mail","ownerEmail":"{email}"}}"#
            )),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    for (body, status) in [
        ("{", 400),
        (r#"{"projectName":"x"}"#, 400),
        (r#"{"projectName":"","ownerId":1}"#, 400),
        (
            r#"{"projectName":"x","ownerId":1,"projectVisibility":"hidden"}"#,
            400,
        ),
        (r#"{"projectName":"x","ownerId":999999999}"#, 404),
        (
            r#"{"projectName":"x","ownerEmail":"nobody@nowhere.example"}"#,
            404,
        ),
    ] {
        let r = t.jwt.post(&t.create_path(), Some(body)).await;
        assert_eq!(r.status, status, "{body}");
        assert_eq!(r.json()["success"], false);
        assert!(r.json()["error"].is_string());
    }
}

async fn errors_carry_the_envelope(t: &Tour, member_id: i64) {
    let anon = anonymous(&t.info);
    for (client, path, status) in [
        (&anon, "/v1/api/organizations".to_string(), 401),
        (
            &Client::key(&t.info, "ei_wrong"),
            "/v1/api/projects".to_string(),
            401,
        ),
        (
            &t.admin_key,
            format!("/v1/api/users/{member_id}/organizations"),
            403,
        ),
        (&t.jwt, "/v1/api/999999999".to_string(), 404),
        (&t.jwt, "/v1/api/organizations/abc".to_string(), 400),
        (&t.jwt, "/v1/api/nope/nope/nope".to_string(), 404),
    ] {
        let r = client.get(&path).await;
        assert_eq!(r.status, status, "{path}");
        assert_eq!(r.json()["success"], false, "{path}");
        assert!(r.json()["error"].is_string(), "{path}");
        assert!(r.headers.contains_key("date"));
    }
    let r = t.jwt.post("/v1/api/projects", None).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["success"], false);
}

/// A client without credentials.
fn anonymous(info: &SandboxInfo) -> Client {
    Client {
        url: info.url.clone(),
        auth: Vec::new(),
    }
}

async fn admin_routes_take_only_the_jwt(t: &Tour) {
    let anon = anonymous(&t.info);
    assert_eq!(anon.post("/sandbox/advance?days=1", None).await.status, 401);
    assert_eq!(
        t.admin_key
            .post("/sandbox/advance?days=1", None)
            .await
            .status,
        401
    );
    assert_eq!(
        t.jwt.post("/sandbox/advance?days=-1", None).await.status,
        400
    );
    assert_eq!(anon.get("/sandbox/health").await.status, 200);
}

/// The Date header and the user's daily metrics follow the clock.
async fn time_travel_moves_the_date_and_the_metrics(t: &Tour, member_id: i64, user: &Value) {
    let last_date = |metrics: &Value| {
        metrics
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["date"].clone())
    };
    let r = t.jwt.post("/sandbox/advance?days=3", None).await;
    assert_eq!(r.status, 200);
    let later = t.clock + chrono::Duration::days(3);
    assert_eq!(
        r.json()["now"],
        later.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    );
    let r = t.jwt.get(&t.user_path(member_id)).await;
    assert_eq!(r.headers.get("date"), Some(&http_date(later)));
    let last_after = last_date(&r.json()["user"]["dailyMetrics"]);
    assert_ne!(last_date(&user["dailyMetrics"]), last_after);
    assert_eq!(
        last_after.as_ref().and_then(Value::as_str),
        Some(&*format!("{}T00:00:00.000Z", later.date_naive()))
    );
}

async fn an_injected_failure_stays_on_its_path_until_healed(t: &Tour, org_id: i64) {
    let target = format!("/v1/api/organizations/{org_id}");
    let r = t
        .jwt
        .post(&format!("/sandbox/fail?path={target}&status=503"), None)
        .await;
    assert_eq!(r.status, 200);
    for _ in 0..2 {
        let r = t.jwt.get(&target).await;
        assert_eq!(r.status, 503);
        assert_eq!(r.json()["success"], false);
    }
    assert_eq!(
        t.jwt.get("/v1/api/organizations").await.status,
        200,
        "other paths unaffected"
    );
    let h: Vec<(&str, &str)> = vec![("x-jwt-token", t.info.jwt.as_str())];
    let r = call(
        &t.info.url,
        "DELETE",
        &format!("/sandbox/fail?path={target}"),
        &h,
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(t.jwt.get(&target).await.status, 200);
}

/// Gone from listings and from get-project-info; its key no longer works.
async fn a_removed_project_is_gone_with_its_key(t: &Tour, new: &NewProject) {
    let remove = format!("/sandbox/remove-project?id={}", new.id);
    assert_eq!(t.jwt.post(&remove, None).await.status, 200);
    assert_eq!(t.jwt.get(&format!("/v1/api/{}", new.id)).await.status, 404);
    let listed = t.jwt.get("/v1/api/projects").await.json();
    assert!(!lists(&listed["projects"], new.id));
    let pk = Client::key(&t.info, &new.key);
    assert_eq!(
        pk.get("/v1/api/projects").await.status,
        401,
        "its key is gone too"
    );
    assert_eq!(t.jwt.post(&remove, None).await.status, 404);
}

#[tokio::test]
async fn project_key_and_org_key_scopes() {
    let sb = sandbox(Profile::Tiny, "").await;
    let info = sb.info.clone();
    let pk = Client::key(&info, &info.project_api_key);
    let projects = pk.get("/v1/api/projects").await.json();
    let list = projects["projects"].as_array().expect("projects");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], info.project_id);
    let orgs = pk.get("/v1/api/organizations").await.json();
    assert_eq!(orgs["organizations"].as_array().map_or(0, Vec::len), 1);
    assert_eq!(
        orgs["organizations"][0]["id"],
        list[0]["ownerOrganizationId"]
    );
    assert_eq!(pk.get("/v1/api/user/projects").await.status, 403);
    let ok = Client::key(&info, &info.org_api_key);
    let orgs = ok.get("/v1/api/organizations").await.json();
    assert_eq!(
        orgs["organizations"][0]["id"],
        info.whitelabel_organization_id
    );
    // Both credentials: the JWT decides (wider scope).
    let both = Client {
        url: info.url.clone(),
        auth: vec![
            ("x-api-key".into(), info.org_api_key.clone()),
            ("x-jwt-token".into(), info.jwt.clone()),
        ],
    };
    let orgs = both.get("/v1/api/organizations").await.json();
    assert!(orgs["organizations"].as_array().map_or(0, Vec::len) >= 3);
    sb.shutdown().await;
}

#[tokio::test]
async fn faults_are_injected() {
    let path = "/v1/api/organizations";
    for (spec, check) in [
        ("5xx=1", 0),
        ("429=1", 1),
        ("malformed=1", 2),
        ("truncated=1", 3),
        ("envelope=1", 4),
    ] {
        let sb = sandbox(Profile::Tiny, spec).await;
        let jwt = Client::jwt(&sb.info);
        let r = jwt.get(path).await;
        assert!(r.headers.contains_key("date"), "{spec}");
        match check {
            0 => {
                assert!([500, 502, 503].contains(&r.status), "{spec}");
                assert_eq!(r.json()["success"], false);
            }
            1 => {
                assert_eq!(r.status, 429);
                assert_eq!(r.headers.get("retry-after").map(String::as_str), Some("1"));
            }
            2 => {
                assert_eq!(r.status, 200);
                assert!(serde_json::from_slice::<Value>(&r.body).is_err());
            }
            3 => {
                assert_eq!(r.status, 200);
                assert!(serde_json::from_slice::<Value>(&r.body).is_err());
                assert!(r.body.starts_with(b"{\"success\":true"));
            }
            _ => {
                assert_eq!(r.status, 200);
                assert_eq!(
                    r.json(),
                    serde_json::json!({"success": false, "error": "transient failure"})
                );
            }
        }
        // Admin routes are never faulted.
        assert_eq!(jwt.get("/sandbox/health").await.status, 200);
        sb.shutdown().await;
    }
    // Slow: the right answer, late.
    let sb = sandbox(Profile::Tiny, "slow=1").await;
    let t = Instant::now();
    let r = Client::jwt(&sb.info).get(path).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["success"], true);
    assert!(t.elapsed() >= std::time::Duration::from_millis(1000));
    sb.shutdown().await;
    // Same seed and spec: the same sequence of outcomes.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let sb = sandbox(Profile::Tiny, "5xx=0.3,envelope=0.2").await;
        let jwt = Client::jwt(&sb.info);
        let mut seq = Vec::new();
        for _ in 0..30 {
            let r = jwt.get(path).await;
            seq.push((r.status, r.json()["success"].clone()));
        }
        runs.push(seq);
        sb.shutdown().await;
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0].iter().any(|(s, _)| *s != 200));
    assert!(runs[0].iter().any(|(s, ok)| *s == 200 && *ok == true));
}

/// A hand-made world: explicit metrics are served as given.
#[tokio::test]
async fn hand_made_world() {
    let now = chrono::NaiveDate::from_ymd_opt(2024, 2, 29)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .map(|d| d.and_utc())
        .unwrap_or_default();
    let day = |n: i64| now - chrono::Duration::days(n) - chrono::Duration::hours(12);
    let metric = |n: i64| DailyMetric {
        date: day(n),
        total_projects: 1,
        cpu_compute_time_seconds: 10 * n,
        compute_time_seconds: 10 * n,
        compute_time_calculated_since: day(400),
        ..DailyMetric::default()
    };
    let world = World {
        seed: 5,
        now,
        white_labels: vec![world::WhiteLabel {
            id: 1,
            name: "Hand".into(),
            admin_organization_id: 10,
            admin_user_id: 100,
            jwt: "jwt-hand".into(),
        }],
        organizations: vec![world::Organization {
            id: 10,
            name: "Hand Admin".into(),
            whitelabel_id: Some(1),
            members: vec![world::Member {
                user_id: 100,
                role: "admin".into(),
                ..Default::default()
            }],
            api_key: "org-key-10".into(),
            ..Default::default()
        }],
        users: vec![world::User {
            id: 100,
            name: "Zoë Hand".into(),
            email: "zoe@example.com".into(),
            metrics: Metrics::Explicit(vec![metric(500), metric(2), metric(1), metric(0)]),
            ..Default::default()
        }],
        projects: vec![world::Project {
            id: 7,
            name: "Only".into(),
            owner_organization_id: 10,
            owner_user_id: Some(100),
            collaborators: vec![100],
            api_key: "project-key-7".into(),
            ..Default::default()
        }],
        trials: Vec::new(),
    };
    let sb = start(SandboxOptions {
        world: Some(world),
        ..SandboxOptions::default()
    })
    .await
    .expect("starts");
    assert_eq!(sb.info.project_id, 7);
    assert_eq!(sb.info.jwt, "jwt-hand");
    let jwt = Client::jwt(&sb.info);
    let r = jwt
        .get("/v1/api/organizations/10/whitelabel/users/100")
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers.get("date").map(String::as_str),
        Some("Thu, 29 Feb 2024 12:00:00 GMT")
    );
    let m = r.json()["user"]["dailyMetrics"].clone();
    let m = m.as_array().expect("metrics");
    assert_eq!(m.len(), 3, "the record older than 365 days is not served");
    assert_eq!(m[0]["cpuComputeTimeSeconds"], 20);
    assert_eq!(m[2]["date"], "2024-02-29T00:00:00.000Z");
    assert_eq!(r.json()["user"]["projects"][0]["id"], 7);
    let r = Client::key(&sb.info, "project-key-7")
        .get("/v1/api/7")
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["impulse"]["created"], false);
    assert_eq!(r.json()["project"]["owner"], "Hand Admin");
    sb.shutdown().await;
}

/// Many keep-alive connections, each sending `n` requests; returns (requests, bytes).
async fn hammer(
    url: &str,
    jwt: &str,
    paths: &[String],
    connections: usize,
    n: usize,
) -> (usize, usize) {
    let mut tasks = Vec::new();
    for c in 0..connections {
        let host = host_of(url).to_string();
        let jwt = jwt.to_string();
        let paths: Vec<String> = paths.iter().skip(c).step_by(connections).cloned().collect();
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(&host).await.expect("connect");
            let (read, mut write) = stream.into_split();
            let mut read = BufReader::with_capacity(1 << 16, read);
            let (mut count, mut bytes) = (0usize, 0usize);
            let mut line = String::new();
            let mut body = Vec::new();
            for i in 0..n {
                let Some(path) = paths.get(i % paths.len().max(1)) else {
                    break;
                };
                let req =
                    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nx-jwt-token: {jwt}\r\n\r\n");
                write.write_all(req.as_bytes()).await.expect("write");
                let mut length = 0usize;
                let mut status = 0u16;
                loop {
                    line.clear();
                    read.read_line(&mut line).await.expect("head");
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if status == 0 {
                        status = l
                            .split(' ')
                            .nth(1)
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0);
                    } else if let Some((k, v)) = l.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                body.resize(length, 0);
                read.read_exact(&mut body).await.expect("body");
                assert_eq!(status, 200, "{path}");
                if i == 0 {
                    assert!(
                        serde_json::from_slice::<Value>(&body).is_ok_and(|v| v["success"] == true)
                    );
                }
                count += 1;
                bytes += length;
            }
            (count, bytes)
        }));
    }
    let mut total = (0, 0);
    for t in tasks {
        let (c, b) = t.await.expect("task");
        total.0 += c;
        total.1 += b;
    }
    total
}

/// A throughput check that only asserts correctness. For a measurement, run
/// `SANDBOX_BENCH_PROFILE=large cargo test --release -p orgledger-sandbox --lib tests::throughput -- --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throughput() {
    let profile = match std::env::var("SANDBOX_BENCH_PROFILE").as_deref() {
        Ok("xxlarge") => Profile::Xxlarge,
        Ok("xlarge") => Profile::Xlarge,
        Ok("large") => Profile::Large,
        Ok("medium") => Profile::Medium,
        Ok("small") => Profile::Small,
        _ => Profile::Tiny,
    };
    let n: usize = std::env::var("SANDBOX_BENCH_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let connections = 8;
    let t0 = Instant::now();
    let sb = sandbox(profile, "").await;
    let generated = t0.elapsed();
    let info = sb.info.clone();
    let (users, projects) = {
        let ws = sb.state.world.read().expect("lock");
        let users: Vec<i64> = ws
            .world
            .users
            .iter()
            .filter(|u| ws.user_in_wl(u.id, 0))
            .map(|u| u.id)
            .collect();
        (users, routes::active_project_ids(&sb.state))
    };
    let projects: Vec<i64> = {
        let ws = sb.state.world.read().expect("lock");
        projects
            .into_iter()
            .filter(|&p| {
                ws.project(p)
                    .is_some_and(|p| ws.org_wl(p.owner_organization_id) == Some(0))
            })
            .collect()
    };
    let user_paths: Vec<String> = users
        .iter()
        .map(|u| {
            format!(
                "/v1/api/organizations/{}/whitelabel/users/{u}",
                info.whitelabel_organization_id
            )
        })
        .collect();
    let project_paths: Vec<String> = projects.iter().map(|p| format!("/v1/api/{p}")).collect();
    let jwt = Client::jwt(&info);
    for path in ["/v1/api/organizations", "/v1/api/projects"] {
        for round in ["first", "cached"] {
            let t = Instant::now();
            let r = jwt.get(path).await;
            assert_eq!(r.status, 200);
            println!(
                "{profile:?} {path} ({round}): {:.1} MB in {:.3} s",
                r.body.len() as f64 / 1e6,
                t.elapsed().as_secs_f64()
            );
        }
    }
    for (name, paths) in [
        ("get-whitelabel-user", &user_paths),
        ("get-project-info", &project_paths),
    ] {
        let t = Instant::now();
        let (count, bytes) = hammer(&info.url, &info.jwt, paths, connections, n).await;
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(count, connections * n);
        println!(
            "{profile:?} {name}: {count} requests in {secs:.2} s = {:.0} req/s, {:.1} MB/s (generation {:.2} s)",
            count as f64 / secs,
            bytes as f64 / secs / 1e6,
            generated.as_secs_f64()
        );
    }
    let t = Instant::now();
    assert_eq!(jwt.post("/sandbox/advance?days=30", None).await.status, 200);
    println!(
        "{profile:?} advance 30 days: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(jwt.get("/v1/api/projects").await.status, 200);
    sb.shutdown().await;
}

/// Prints what each profile contains and how long generation and a year of time travel
/// take: `cargo test --release -p orgledger-sandbox --lib tests::profile_stats -- --ignored --nocapture`.
#[test]
#[ignore]
fn profile_stats() {
    for profile in [
        Profile::Tiny,
        Profile::Small,
        Profile::Medium,
        Profile::Large,
        Profile::Xlarge,
    ] {
        let t = Instant::now();
        let w = generate::generate(profile, 1, date());
        let generation = t.elapsed().as_secs_f64();
        let now = w.now;
        let dev = w
            .organizations
            .iter()
            .filter(|o| o.is_developer_profile)
            .count();
        let trial = w
            .organizations
            .iter()
            .filter(|o| o.trial_id.is_some())
            .count();
        let nolim = w
            .organizations
            .iter()
            .filter(|o| o.entitlement_limits.is_none())
            .count();
        let deleted = w
            .projects
            .iter()
            .filter(|p| p.deleted_date.is_some())
            .count();
        let full = w
            .projects
            .iter()
            .filter(|p| p.full_deletion_date.is_some())
            .count();
        let public = w.projects.iter().filter(|p| p.is_public).count();
        let hot = w
            .projects
            .iter()
            .filter(|p| p.compute.time_used_ms() * 10 >= p.compute.total_ms * 8)
            .count();
        let devices: usize = w.projects.iter().map(|p| p.devices.len()).sum();
        let datasets: usize = w.organizations.iter().map(|o| o.datasets.len()).sum();
        let members: usize = w.organizations.iter().map(|o| o.members.len()).sum();
        let never = w.users.iter().filter(|u| u.last_seen.is_none()).count();
        let mut states: std::collections::BTreeMap<&str, usize> = Default::default();
        for t in &w.trials {
            let s = if t.upgraded_date.is_some() {
                "upgraded"
            } else if t.deleted_date.is_some() {
                "deleted"
            } else if t.expired_date.is_some() {
                "expired(marked)"
            } else if t.expiration_date <= now {
                "expired(by date)"
            } else if t.expiration_date - now <= chrono::Duration::days(14) {
                "expiring"
            } else {
                "active"
            };
            *states.entry(s).or_default() += 1;
        }
        println!(
            "{profile:?}: gen {generation:.2}s wl {} orgs {} (dev {dev}, trial {trial}, no limits {nolim}) users {} (never seen {never}) members {members} projects {} (deleted {deleted}, fully {full}, public {public}, >=80% compute {hot}) datasets {datasets} devices {devices} trials {:?}",
            w.white_labels.len(),
            w.organizations.len(),
            w.users.len(),
            w.projects.len(),
            states
        );
        let mut big = w.clone();
        let t = Instant::now();
        big.advance(365);
        println!(
            "  advance 365 days: {:.2}s -> users {} (deleted {}) projects {}",
            t.elapsed().as_secs_f64(),
            big.users.len(),
            big.users.iter().filter(|u| u.deleted.is_some()).count(),
            big.projects.len()
        );
    }
}

#[tokio::test]
async fn edits_change_one_thing_now_and_refuse_what_does_not_exist() {
    let sb = sandbox(Profile::Tiny, "").await;
    let info = sb.info.clone();
    let jwt = Client::jwt(&info);
    let orgs = jwt.get("/v1/api/organizations").await.json();
    let org = orgs["organizations"]
        .as_array()
        .expect("organizations")
        .iter()
        .find(|o| {
            o["id"] != info.whitelabel_organization_id
                && o["users"].as_array().is_some_and(|u| u.len() >= 2)
        })
        .expect("an organization with two members")
        .clone();
    let org_id = org["id"].as_i64().expect("id");
    let user = org["users"][0]["id"].as_i64().expect("user id");
    let path = format!("/v1/api/organizations/{org_id}");
    let edit = |body: String| {
        let jwt = &jwt;
        async move { jwt.post("/sandbox/edit", Some(&body)).await }
    };

    let r = edit(format!(
        r#"{{"edit":"set_limit","organization":{org_id},"field":"numberOfProjects","value":77}}"#
    ))
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["id"], org_id);
    let r = edit(format!(
        r#"{{"edit":"set_role","organization":{org_id},"user":{user},"role":"owner-ish"}}"#
    ))
    .await;
    assert_eq!(r.status, 200);
    let body = jwt.get(&path).await.json();
    assert_eq!(body["entitlementLimits"]["numberOfProjects"], 77);
    let role_of = |body: &Value, user: i64| {
        body["organization"]["users"]
            .as_array()
            .and_then(|u| u.iter().find(|m| m["id"] == user))
            .map(|m| m["role"].clone())
    };
    assert_eq!(role_of(&body, user), Some(Value::from("owner-ish")));

    let r = edit(format!(
        r#"{{"edit":"remove_member","organization":{org_id},"user":{user}}}"#
    ))
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(role_of(&jwt.get(&path).await.json(), user), None);
    let r = edit(format!(
        r#"{{"edit":"add_member","organization":{org_id},"user":{user},"role":"member"}}"#
    ))
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        role_of(&jwt.get(&path).await.json(), user),
        Some(Value::from("member"))
    );

    let r = edit(r#"{"edit":"add_organization","name":"Nouvelle Société"}"#.into()).await;
    assert_eq!(r.status, 200);
    let new_id = r.json()["id"].as_i64().expect("new id");
    let listed = jwt.get("/v1/api/organizations").await.json();
    assert!(
        listed["organizations"]
            .as_array()
            .expect("organizations")
            .iter()
            .any(|o| o["id"] == new_id && o["name"] == "Nouvelle Société")
    );

    let r = edit(format!(
        r#"{{"edit":"delete_project","project":{}}}"#,
        info.project_id
    ))
    .await;
    assert_eq!(r.status, 200);
    let project = jwt
        .get(&format!("/v1/api/{}", info.project_id))
        .await
        .json();
    assert!(project["project"]["deletedDate"].is_string(), "{project}");

    for (body, status) in [
        (
            r#"{"edit":"upgrade_trial","trial":999999999}"#.to_string(),
            404,
        ),
        (
            format!(r#"{{"edit":"set_limit","organization":{org_id},"field":"cats","value":1}}"#),
            400,
        ),
        (r#"{"edit":"paint_it_blue"}"#.to_string(), 400),
        (
            r#"{"edit":"delete_project","project":999999999}"#.to_string(),
            404,
        ),
    ] {
        assert_eq!(edit(body.clone()).await.status, status, "{body}");
    }
    let anon = Client {
        url: info.url.clone(),
        auth: Vec::new(),
    };
    assert_eq!(
        anon.post(
            "/sandbox/edit",
            Some(r#"{"edit":"add_organization","name":"x"}"#)
        )
        .await
        .status,
        401
    );
    sb.shutdown().await;
}
