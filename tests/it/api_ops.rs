//! Every operation through the client, over HTTP, against the
//! sandbox; the credential rules; create-project's validation; a created project read back.

use crate::common;
use orgledger::api::ApiError;
use orgledger::api::models::{CreateProjectRequest, ProjectVisibility};
use orgledger_sandbox::Profile;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_round_trips() {
    let sb = common::sandbox(Profile::Tiny).await;
    let c = common::admin(&sb);
    let wl = sb.info.whitelabel_organization_id;

    let orgs = c.list_organizations().await.expect("list-organizations");
    assert!(orgs.value.organizations.iter().any(|o| o.id == Some(wl)));
    assert!(
        orgs.server_time.is_some(),
        "the sandbox sends its clock in Date"
    );

    let org = c.get_organization(wl).await.expect("get-organization");
    let organization = org
        .value
        .organization
        .as_ref()
        .expect("organization object");
    assert_eq!(organization.id, Some(wl));
    let member = organization
        .users
        .iter()
        .find_map(|u| u.id)
        .expect("a member");

    let user = c
        .get_whitelabel_user(wl, member)
        .await
        .expect("get-whitelabel-user");
    assert_eq!(user.value.user.as_ref().and_then(|u| u.id), Some(member));

    let user_orgs = c
        .list_user_organizations(member)
        .await
        .expect("list-user-organizations");
    assert!(!user_orgs.value.organizations.is_empty());

    let projects = c.list_projects().await.expect("list-projects");
    assert!(
        projects
            .value
            .projects
            .iter()
            .any(|p| p.id == Some(sb.info.project_id))
    );

    let info = c
        .get_project_info(sb.info.project_id, None)
        .await
        .expect("get-project-info");
    assert_eq!(
        info.value.project.as_ref().and_then(|p| p.id),
        Some(sb.info.project_id)
    );
    assert!(info.value.compute_time.is_some());
    let with_impulse = c
        .get_project_info(sb.info.project_id, Some(1))
        .await
        .expect("get-project-info with impulseId");
    assert_eq!(
        with_impulse.value.project.as_ref().and_then(|p| p.id),
        Some(sb.info.project_id)
    );

    c.list_user_projects().await.expect("list-user-projects");

    let request = CreateProjectRequest {
        project_name: "Zoë's Ünïcode project".into(),
        project_visibility: Some(ProjectVisibility::Private),
        owner_id: Some(member),
        owner_email: None,
    };
    let created = c
        .create_project(wl, &request)
        .await
        .expect("create-project");
    let new_id = created.value.id.expect("new project id");
    assert!(created.value.api_key.is_some_and(|k| !k.is_empty()));
    let again = c
        .list_projects()
        .await
        .expect("list-projects after create-project");
    assert!(
        again.value.projects.iter().any(|p| p.id == Some(new_id)),
        "created project is listed"
    );
    let new_info = c
        .get_project_info(new_id, None)
        .await
        .expect("get-project-info of the new project");
    let project = new_info.value.project.expect("project");
    assert_eq!(project.name.as_deref(), Some("Zoë's Ünïcode project"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_rules() {
    let sb = common::sandbox(Profile::Tiny).await;
    let wl = sb.info.whitelabel_organization_id;

    let status = |e: orgledger::api::Failure| e.error.http_status();
    let nobody = common::client(&sb, None, None);
    assert_eq!(
        nobody.list_organizations().await.map_err(status).err(),
        Some(Some(401))
    );
    let stranger = common::client(&sb, Some("ei_not_a_key"), None);
    assert_eq!(
        stranger.list_projects().await.map_err(status).err(),
        Some(Some(401))
    );

    let project_key = common::client(&sb, Some(&sb.info.project_api_key), None);
    let own = project_key
        .list_projects()
        .await
        .expect("list-projects with a project key");
    let ids: Vec<_> = own.value.projects.iter().filter_map(|p| p.id).collect();
    assert_eq!(
        ids,
        vec![sb.info.project_id],
        "a project key narrows list-projects to its project"
    );
    project_key
        .get_project_info(sb.info.project_id, None)
        .await
        .expect("own project");
    assert_eq!(
        project_key.get_organization(wl).await.map_err(status).err(),
        Some(Some(403))
    );

    let org_key = common::client(&sb, Some(&sb.info.org_api_key), None);
    let listed = org_key
        .list_organizations()
        .await
        .expect("list-organizations with an org key");
    assert_eq!(
        listed.value.organizations.len(),
        1,
        "an org key narrows list-organizations to its organization"
    );
    assert_eq!(
        org_key
            .list_user_organizations(1)
            .await
            .map_err(status)
            .err(),
        Some(Some(403)),
        "list-user-organizations is JWT-only"
    );

    // Both credentials: the JWT decides, so list-organizations widens again.
    let both = common::client(&sb, Some(&sb.info.org_api_key), Some(&sb.info.jwt));
    let wide = both
        .list_organizations()
        .await
        .expect("list-organizations with both");
    assert!(wide.value.organizations.len() > 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_project_is_validated_on_both_sides() {
    let sb = common::sandbox(Profile::Tiny).await;
    let c = common::admin(&sb);
    let wl = sb.info.whitelabel_organization_id;
    let bad = CreateProjectRequest {
        project_name: "  ".into(),
        project_visibility: None,
        owner_id: Some(1),
        owner_email: None,
    };
    let refused = c.create_project(wl, &bad).await.expect_err("empty name");
    assert!(matches!(refused.error, ApiError::InvalidRequest { .. }));
    assert_eq!(refused.attempts, 0, "nothing was sent");
    let no_owner = CreateProjectRequest {
        project_name: "x".into(),
        project_visibility: None,
        owner_id: None,
        owner_email: None,
    };
    assert!(c.create_project(wl, &no_owner).await.is_err());

    // The server enforces the same contract for clients that do not validate.
    let http = common::http();
    for body in [
        r#"{"projectVisibility":"public","ownerId":1}"#,
        r#"{"projectName":"x"}"#,
        r#"{"projectName":"x","ownerId":1,"projectVisibility":"secret"}"#,
        r#"{not json"#,
    ] {
        let response = http
            .post(format!(
                "{}/v1/api/organizations/{wl}/whitelabel/projects",
                sb.info.url
            ))
            .header("x-jwt-token", &sb.info.jwt)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("answer");
        assert_eq!(response.status().as_u16(), 400, "body {body}");
        let bytes = response.bytes().await.expect("body");
        let envelope: serde_json::Value = serde_json::from_slice(&bytes).expect("json envelope");
        assert_eq!(envelope["success"], false, "body {body}");
        assert!(envelope["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_information_carries_every_top_level_field() {
    let sb = common::sandbox(Profile::Tiny).await;
    let info = common::admin(&sb)
        .get_project_info(sb.info.project_id, None)
        .await
        .expect("get-project-info");
    let raw: serde_json::Value = serde_json::from_slice(&info.raw).expect("json");
    for field in [
        "success",
        "project",
        "developmentKeys",
        "impulse",
        "devices",
        "dataSummary",
        "dataSummaryPerCategory",
        "computeTime",
        "acquisitionSettings",
        "collaborators",
        "deploySettings",
        "experiments",
        "latencyDevices",
        "urls",
        "showCreateFirstImpulse",
        "showGettingStartedWizard",
        "performance",
        "trainJobNotificationUids",
        "dspJobNotificationUids",
        "modelTestingJobNotificationUids",
        "exportJobNotificationUids",
        "hasNewTrainingData",
        "studioUrl",
        "inPretrainedModelFlow",
        "showSensorDataInAcquisitionGraph",
        "notifications",
        "csvImportConfig",
        "dspPageSize",
        "targetConstraints",
        "defaultImpulseId",
        "lastShownModelEngine",
        "versioningStorageSizeMib",
    ] {
        assert!(raw.get(field).is_some(), "get-project-info lacks {field}");
    }
}
