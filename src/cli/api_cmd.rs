//! `orgledger api <operation>` and `orgledger project create`: one call, its JSON
//! answer on stdout. Secret values in answers (development keys, a new project's
//! API key) are redacted unless `--show-secrets` is given.

use crate::api::models::{CreateProjectRequest, ProjectVisibility};
use crate::api::{Client, Failure, Fetched};
use crate::cli::Exit;
use crate::cli::args::{ApiArgs, ApiOp, CreateArgs, PaceArgs, Visibility};
use crate::cli::settings::Settings;
use anyhow::Result;
use serde_json::Value;

fn print_answer<T>(result: Result<Fetched<T>, Failure>, show_secrets: bool) -> Result<Exit> {
    match result {
        Ok(fetched) => {
            let mut json: Value = serde_json::from_slice(&fetched.raw)?;
            if !show_secrets {
                crate::api::secret_scrub::redact_json(&mut json);
            }
            crate::outln!("{}", serde_json::to_string_pretty(&json)?);
            Ok(Exit::Ok)
        }
        Err(failure) => {
            eprintln!(
                "error: {} (after {} attempt(s))",
                failure.error, failure.attempts
            );
            Ok(Exit::Failure)
        }
    }
}

/// Runs `api <operation>`.
pub async fn run(settings: &Settings, args: &ApiArgs) -> Result<Exit> {
    let client = Client::new(settings.client_config(&args.conn, &PaceArgs::default())?)?;
    let show = args.show_secrets;
    match args.op {
        ApiOp::GetOrganization { org } => print_answer(client.get_organization(org).await, show),
        ApiOp::GetWhitelabelUser { org, user } => {
            print_answer(client.get_whitelabel_user(org, user).await, show)
        }
        ApiOp::ListOrganizations => print_answer(client.list_organizations().await, show),
        ApiOp::ListUserOrganizations { user } => {
            print_answer(client.list_user_organizations(user).await, show)
        }
        ApiOp::ListProjects => print_answer(client.list_projects().await, show),
        ApiOp::GetProjectInfo {
            project,
            impulse_id,
        } => print_answer(client.get_project_info(project, impulse_id).await, show),
        ApiOp::ListUserProjects => print_answer(client.list_user_projects().await, show),
    }
}

/// Runs `project create`.
pub async fn create_project(settings: &Settings, args: &CreateArgs) -> Result<Exit> {
    let client = Client::new(settings.client_config(&args.conn, &PaceArgs::default())?)?;
    let request = CreateProjectRequest {
        project_name: args.name.clone(),
        project_visibility: args.visibility.map(|v| match v {
            Visibility::Public => ProjectVisibility::Public,
            Visibility::Private => ProjectVisibility::Private,
        }),
        owner_id: args.owner_id,
        owner_email: args.owner_email.clone(),
    };
    match client.create_project(args.org, &request).await {
        Ok(created) => {
            let key = created.value.api_key.as_ref();
            let shown = match key {
                Some(k) if args.show_secrets => Value::from(k.expose()),
                Some(k) => Value::from(format!(
                    "[redacted; fingerprint {}; --show-secrets prints it]",
                    k.fingerprint()
                )),
                None => Value::Null,
            };
            let out = serde_json::json!({ "id": created.value.id, "apiKey": shown });
            crate::outln!("{}", serde_json::to_string_pretty(&out)?);
            Ok(Exit::Ok)
        }
        Err(failure) => {
            eprintln!("error: {}", failure.error);
            Ok(Exit::Failure)
        }
    }
}
