//! Each hard case is served, at the ids `orgledger_sandbox::hard_cases` names.

use crate::common::{Api, Reply, sandbox};
use orgledger_sandbox::hard_cases::{FOREIGN_WHITE_LABEL, HUGE, TRIAL, org, project, user};
use orgledger_sandbox::{HardCases, Profile, SandboxHandle};
use serde_json::Value;

async fn world(which: HardCases) -> (SandboxHandle, Api) {
    let sb = sandbox(Profile::Tiny, which, "").await;
    let api = Api::new(&sb);
    (sb, api)
}

async fn org_info(api: &Api, id: i64) -> Reply {
    api.get(&format!("/v1/api/organizations/{id}")).await
}

async fn wl_user(api: &Api, sb: &SandboxHandle, id: i64) -> Reply {
    let admin = sb.info.whitelabel_organization_id;
    api.get(&format!(
        "/v1/api/organizations/{admin}/whitelabel/users/{id}"
    ))
    .await
}

fn ids(list: &Value) -> Vec<f64> {
    list.as_array()
        .map(|a| a.iter().filter_map(|v| v["id"].as_f64()).collect())
        .unwrap_or_default()
}

fn listed_project(org: &Value, id: i64) -> &Value {
    org["organization"]["projects"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"].as_f64() == Some(id as f64)))
        .unwrap_or_else(|| panic!("project {id} is not listed: {org}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_whose_information_fails_answers_success_false() {
    let (sb, api) = world(HardCases::All).await;
    let r = api.get(&format!("/v1/api/{}", project::INFO_FAILS)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["success"], false);
    assert!(
        r.json["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{}",
        r.json
    );
    let listed = api.get("/v1/api/projects").await;
    assert!(ids(&listed.json["projects"]).contains(&(project::INFO_FAILS as f64)));
    sb.shutdown().await;
    let (sb, api) = world(HardCases::Default).await;
    let r = api.get(&format!("/v1/api/{}", project::INFO_FAILS)).await;
    assert_eq!(r.json["success"], true, "served in the default worlds");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_deleted_projects_one_served_one_answered_404() {
    let (sb, api) = world(HardCases::Default).await;
    let served = api
        .get(&format!("/v1/api/{}", project::DELETED_SERVED))
        .await;
    assert_eq!(served.status, 200);
    assert!(served.json["project"]["deletedDate"].is_string());
    assert!(served.json["computeTime"]["timeUsedMs"].as_i64() > Some(0));
    let gone = api.get(&format!("/v1/api/{}", project::DELETED_GONE)).await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json["success"], false);
    let owner = org_info(&api, org::ODD_PROJECTS).await;
    for id in [project::DELETED_SERVED, project::DELETED_GONE] {
        assert!(listed_project(&owner.json, id)["deletedDate"].is_string());
    }
    let active = ids(&api.get("/v1/api/projects").await.json["projects"]);
    assert!(
        !active.contains(&(project::DELETED_SERVED as f64)),
        "not listed as active"
    );
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_without_projects_is_listed_with_none() {
    let (sb, api) = world(HardCases::Default).await;
    let listed = api.get("/v1/api/organizations").await;
    assert!(ids(&listed.json["organizations"]).contains(&(org::NO_PROJECTS as f64)));
    let r = org_info(&api, org::NO_PROJECTS).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["organization"]["projects"], Value::Array(Vec::new()));
    assert_eq!(r.json["organization"]["name"], "Hard case: no projects");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn developer_profile_projects_have_a_null_owner_organization() {
    let (sb, api) = world(HardCases::Default).await;
    for (o, p, u) in [
        (
            org::DEV_PENDING_MEMBER,
            project::DEV_PENDING,
            user::DEV_OWNER,
        ),
        (org::DEV_TWIN_A, project::DEV_TWIN_A, user::DEV_TWINS),
        (org::DEV_TWIN_B, project::DEV_TWIN_B, user::DEV_TWINS),
    ] {
        let info = org_info(&api, o).await;
        let listed = listed_project(&info.json, p);
        assert!(listed["ownerOrganizationId"].is_null(), "{listed}");
        assert_eq!(listed["developerProfileUserId"], u);
        assert_eq!(listed["ownerIsDeveloperProfile"], true);
        let r = api.get(&format!("/v1/api/{p}")).await;
        assert!(r.json["project"]["ownerOrganizationId"].is_null());
    }
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn developer_profile_lists_a_pending_second_member() {
    let (sb, api) = world(HardCases::Default).await;
    let r = org_info(&api, org::DEV_PENDING_MEMBER).await;
    assert_eq!(r.json["organization"]["isDeveloperProfile"], true);
    let members = r.json["organization"]["users"].as_array().expect("users");
    assert_eq!(members.len(), 2);
    let pending: Vec<&Value> = members.iter().filter(|m| m["pending"] == true).collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["id"], user::DEV_PENDING);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_has_two_developer_profiles() {
    let (sb, api) = world(HardCases::Default).await;
    let r = wl_user(&api, &sb, user::DEV_TWINS).await;
    let profiles: Vec<f64> = r.json["user"]["organizations"]
        .as_array()
        .expect("organizations")
        .iter()
        .filter(|o| o["isDeveloperProfile"] == true)
        .filter_map(|o| o["id"].as_f64())
        .collect();
    assert_eq!(
        profiles,
        vec![org::DEV_TWIN_A as f64, org::DEV_TWIN_B as f64]
    );
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_outside_the_white_label_is_seen_only_in_summaries() {
    let (sb, api) = world(HardCases::Default).await;
    let listed = ids(&api.get("/v1/api/organizations").await.json["organizations"]);
    assert!(!listed.contains(&(org::OUTSIDE_WHITE_LABEL as f64)));
    assert_eq!(org_info(&api, org::OUTSIDE_WHITE_LABEL).await.status, 403);
    let of_user = api
        .get(&format!("/v1/api/users/{}/organizations", user::MEMBER))
        .await;
    assert!(!ids(&of_user.json["organizations"]).contains(&(org::OUTSIDE_WHITE_LABEL as f64)));
    let r = wl_user(&api, &sb, user::MEMBER).await;
    let summary = r.json["user"]["organizations"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|o| o["id"].as_i64() == Some(org::OUTSIDE_WHITE_LABEL))
        })
        .cloned()
        .expect("in the member's summaries");
    assert_eq!(summary["whitelabelId"], FOREIGN_WHITE_LABEL);
    assert_eq!(summary["entitlementLimits"]["numberOfUsers"], 5);
    assert_eq!(summary["entitlementLimits"]["numberOfProjects"], 10);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_sits_at_the_status_thresholds() {
    let (sb, api) = world(HardCases::Default).await;
    for (id, used) in [
        (org::STORAGE_79_996, 79_996),
        (org::STORAGE_99_996, 99_996),
        (org::STORAGE_AT_LIMIT, 100_000),
    ] {
        let r = org_info(&api, id).await;
        let sizes: i64 = r.json["datasets"]
            .as_array()
            .expect("datasets")
            .iter()
            .filter_map(|d| d["totalFileSize"].as_i64())
            .sum();
        assert_eq!(sizes, used, "organization {id}");
        assert_eq!(r.json["entitlementLimits"]["totalStorage"], 100_000);
    }
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_limits_are_sent_as_exact_integers() {
    let (sb, api) = world(HardCases::Default).await;
    let url = format!("{}/v1/api/organizations/{}", sb.info.url, org::HUGE_LIMITS);
    let text = crate::common::http()
        .get(url)
        .header("x-jwt-token", &sb.info.jwt)
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    assert!(
        text.contains("\"computeTimePerYear\":1152921504606846976"),
        "{text}"
    );
    let r = org_info(&api, org::HUGE_LIMITS).await;
    assert_eq!(
        r.json["entitlementLimits"]["totalStorage"].as_i64(),
        Some(HUGE)
    );
    sb.shutdown().await;
}

fn metric_dates(r: &Reply) -> Vec<String> {
    r.json["user"]["dailyMetrics"]
        .as_array()
        .expect("dailyMetrics")
        .iter()
        .filter_map(|m| m["date"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_metrics_at_plus_two_are_local_midnights() {
    let (sb, api) = world(HardCases::Default).await;
    let dates = metric_dates(&wl_user(&api, &sb, user::PLUS_TWO).await);
    assert!(dates.len() > 300, "{}", dates.len());
    assert!(
        dates.iter().all(|d| d.ends_with("T00:00:00.000+02:00")),
        "{dates:?}"
    );
    assert_eq!(
        dates.last().map(String::as_str),
        Some("2025-04-10T00:00:00.000+02:00")
    );
    let plain = metric_dates(&wl_user(&api, &sb, user::MEMBER).await);
    assert!(plain.iter().all(|d| d.ends_with("T00:00:00.000Z")));
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_metrics_stop_ten_days_before_the_clock() {
    let (sb, api) = world(HardCases::Default).await;
    let dates = metric_dates(&wl_user(&api, &sb, user::METRICS_STOP).await);
    assert_eq!(
        dates.last().map(String::as_str),
        Some("2025-03-31T00:00:00.000Z")
    );
    let advanced = api.post("/sandbox/advance?days=3").await;
    assert_eq!(advanced.status, 200);
    let later = metric_dates(&wl_user(&api, &sb, user::METRICS_STOP).await);
    assert_eq!(later.last(), dates.last(), "time travel adds no records");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn departing_user_leaves_with_a_trial() {
    let (sb, api) = world(HardCases::Default).await;
    let before = wl_user(&api, &sb, user::DEPARTING).await;
    assert_eq!(before.status, 200);
    assert_eq!(ids(&before.json["user"]["trials"]), vec![TRIAL as f64]);
    let removed = api
        .post(&format!("/sandbox/remove-user?id={}", user::DEPARTING))
        .await;
    assert_eq!(removed.status, 200, "{:?}", removed.json);
    assert_eq!(wl_user(&api, &sb, user::DEPARTING).await.status, 404);
    let org = org_info(&api, org::DEPARTING_TRIAL).await;
    assert_eq!(org.json["organization"]["users"], Value::Array(Vec::new()));
    let again = api
        .post(&format!("/sandbox/remove-user?id={}", user::DEPARTING))
        .await;
    assert_eq!(again.status, 404, "already gone");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_is_sent_as_a_whole_float_and_unnamed_fields_come_along() {
    let (sb, api) = world(HardCases::Default).await;
    let listed = api.get("/v1/api/projects").await;
    let odd = listed.json["projects"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|p| p["id"].as_f64() == Some(project::ODD_FIELDS as f64))
        })
        .cloned()
        .expect("listed");
    assert!(odd["id"].is_f64() && !odd["id"].is_i64(), "{}", odd["id"]);
    let r = api.get(&format!("/v1/api/{}", project::ODD_FIELDS)).await;
    assert_eq!(r.json["anomalyLabelsConfig"]["anomalyLabels"][0], "anomaly");
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hard_cases_means_none_of_their_ids() {
    let (sb, api) = world(HardCases::None).await;
    assert_eq!(org_info(&api, org::NO_PROJECTS).await.status, 404);
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_cases_keep_their_shape_through_a_year_of_time_travel() {
    let sb = sandbox(Profile::Small, HardCases::Default, "").await;
    let api = Api::new(&sb);
    assert_eq!(api.post("/sandbox/advance?days=365").await.status, 200);
    let r = org_info(&api, org::NO_PROJECTS).await;
    assert_eq!(r.json["organization"]["projects"], Value::Array(Vec::new()));
    let members = r.json["organization"]["users"].as_array().expect("users");
    assert_eq!(
        ids(&r.json["organization"]["users"]),
        vec![user::MEMBER as f64]
    );
    assert_eq!(members.len(), 1, "no newcomers join a hard case");
    for id in [project::DEV_TWIN_A, project::ODD_FIELDS] {
        let p = api.get(&format!("/v1/api/{id}")).await;
        assert!(
            p.json["project"]["deletedDate"].is_null(),
            "{id} is not deleted"
        );
    }
    sb.shutdown().await;
}
