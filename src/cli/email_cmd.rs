//! `orgledger email test --to ADDRESS`: one short message through the configured
//! server, and the step that failed if one did.

use crate::cli::Exit;
use crate::cli::args::{EmailAction, EmailArgs, EmailTestArgs};
use crate::cli::settings::{self, Settings};
use crate::email::layout;
use crate::email::message::{self, Content};
use anyhow::Result;
use maud::html;

/// Runs the command.
pub async fn run(settings: &Settings, args: &EmailArgs) -> Result<Exit> {
    match &args.action {
        EmailAction::Test(test) => test_message(settings, test).await,
    }
}

async fn test_message(settings: &Settings, args: &EmailTestArgs) -> Result<Exit> {
    let mailer = settings.require_mailer("email test")?;
    let to = message::mailbox(&args.to, "--to").map_err(settings::usage)?;
    let server = mailer.describe();
    let sentence = format!(
        "orgledger sent this message through {server} to check its [email] settings; nothing needs to be done."
    );
    let content = Content {
        subject: "orgledger e-mail test".to_string(),
        text: format!("{sentence}\n"),
        html: layout::document("orgledger e-mail test", html! { p { (sentence) } }),
        attachments: Vec::new(),
    };
    // A test is a new message each time: its id follows the moment it is sent.
    let key = format!("test/{to}/{}", crate::mirror::now_text());
    let bytes = message::build(mailer.from(), &to, &key, &content)?;
    match mailer.send_once(&to.email, &bytes).await {
        Ok(accepted) => {
            crate::outln!(
                "sent a test message to {to} through {server}: the server answered {} {}",
                accepted.code,
                accepted.text
            );
            Ok(Exit::Ok)
        }
        Err(failure) => {
            eprintln!("the test message to {to} was not sent through {server}: {failure}");
            Ok(Exit::Failure)
        }
    }
}
