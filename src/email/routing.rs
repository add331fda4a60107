//! Who gets which alert by e-mail: `[[alerts.email]]` entries, each a set of event
//! kinds and its recipients, optionally an owners file that maps organizations to
//! the addresses of those who own them (account managers). An event goes to every
//! entry whose kinds hold it: to the owners of its organization when the entry's
//! file names it, else to the entry's recipients (events of no organization, such
//! as `sync.*`, always go to the recipients).

use crate::alerts::events::Event;
use crate::alerts::{Kind, MailRoute};
use crate::config::AlertEmailConfig;
use crate::email::EmailError;
use crate::email::message::address;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `[[alerts.email]]` entry, checked and with its owners file read.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    routes: Vec<Route>,
}

#[derive(Debug, Clone)]
struct Route {
    kinds: BTreeSet<Kind>,
    recipients: Vec<String>,
    /// Organization → the addresses of its owners.
    owners: BTreeMap<i64, Vec<String>>,
}

const KEY: &str = "config [[alerts.email]]";

impl Routes {
    /// The entries of the config; an owners file that cannot be read or holds a
    /// line that is not an organization and an address is an error naming the file
    /// and the line.
    pub(crate) fn from_config(entries: &[AlertEmailConfig]) -> Result<Routes, EmailError> {
        let routes = entries
            .iter()
            .map(|entry| {
                let kinds = kinds(entry.kinds.as_deref())?;
                let recipients = entry
                    .recipients
                    .iter()
                    .flatten()
                    .map(|r| address(r, &format!("{KEY} recipients")).map(|a| a.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                let owners = match &entry.owners_file {
                    Some(file) => owners(file)?,
                    None => BTreeMap::new(),
                };
                if recipients.is_empty() && owners.is_empty() {
                    return Err(EmailError::Setup(format!(
                        "{KEY}: an entry sends to no one; give it recipients, an owners_file, or both"
                    )));
                }
                Ok(Route {
                    kinds,
                    recipients,
                    owners,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Routes { routes })
    }
}

impl MailRoute for Routes {
    fn recipients(&self, event: &Event) -> Vec<String> {
        let Some(kind) = Kind::parse(&event.kind) else {
            return Vec::new();
        };
        let org = event.data["organization_id"].as_i64();
        let mut out: Vec<String> = self
            .routes
            .iter()
            .filter(|r| r.kinds.contains(&kind))
            .flat_map(|r| {
                org.and_then(|o| r.owners.get(&o))
                    .unwrap_or(&r.recipients)
                    .iter()
                    .cloned()
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn addresses(&self) -> Vec<String> {
        let all: BTreeSet<&String> = self
            .routes
            .iter()
            .flat_map(|r| r.recipients.iter().chain(r.owners.values().flatten()))
            .collect();
        all.into_iter().cloned().collect()
    }
}

/// Event kinds by name, `trial.*` for a family, `*` for all (the default).
fn kinds(names: Option<&[String]>) -> Result<BTreeSet<Kind>, EmailError> {
    let Some(names) = names else {
        return Ok(Kind::ALL.into_iter().collect());
    };
    let mut out = BTreeSet::new();
    for name in names {
        let matched: Vec<Kind> = match name.strip_suffix('*') {
            Some(prefix) => Kind::ALL
                .into_iter()
                .filter(|k| k.as_str().starts_with(prefix))
                .collect(),
            None => Kind::parse(name).into_iter().collect(),
        };
        if matched.is_empty() {
            let valid: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            return Err(EmailError::Setup(format!(
                "{KEY} kinds: {name:?} names no event kind; valid kinds: {}, or a family such as trial.*",
                valid.join(", ")
            )));
        }
        out.extend(matched);
    }
    Ok(out)
}

/// An owners file: CSV with the columns `organization_id` and `email` (a row per
/// organization and address), or TOML with an address per key and its
/// organizations' ids (`"alice@example.com" = [12, 31]`).
fn owners(file: &Path) -> Result<BTreeMap<i64, Vec<String>>, EmailError> {
    let bad =
        |why: String| EmailError::Setup(format!("{KEY} owners_file {}: {why}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| bad(crate::cause::io(&e)))?;
    let pairs = match file.extension().and_then(|e| e.to_str()) {
        Some("csv") => csv_pairs(&text).map_err(bad)?,
        Some("toml") => toml_pairs(&text).map_err(bad)?,
        _ => return Err(bad("name it .csv or .toml, as its content is".into())),
    };
    let mut by_org: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (org, who, line) in pairs {
        let who = address(
            &who,
            &format!("{KEY} owners_file {}, {line}", file.display()),
        )?;
        let list = by_org.entry(org).or_default();
        if !list.contains(&who.to_string()) {
            list.push(who.to_string());
        }
    }
    Ok(by_org)
}

/// (organization, address, where) of each CSV row.
fn csv_pairs(text: &str) -> Result<Vec<(i64, String, String)>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| e.to_string())?.clone();
    let column = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            format!("line 1 has no column {name}; the header is organization_id,email")
        })
    };
    let (org_at, email_at) = (column("organization_id")?, column("email")?);
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        let line = format!("line {}", record.position().map_or(0, |p| p.line()));
        let org = record.get(org_at).unwrap_or("");
        let org = org
            .parse::<i64>()
            .map_err(|_| format!("{line}: organization_id {org:?} is not a number"))?;
        out.push((org, record.get(email_at).unwrap_or("").to_string(), line));
    }
    Ok(out)
}

/// (organization, address, where) of each TOML key's ids.
fn toml_pairs(text: &str) -> Result<Vec<(i64, String, String)>, String> {
    let table: BTreeMap<String, Vec<i64>> = toml::from_str(text).map_err(|e| {
        format!(
            "{}; write \"address\" = [organization ids]",
            crate::config::where_and_why(text, &e)
        )
    })?;
    Ok(table
        .into_iter()
        .flat_map(|(who, orgs)| {
            let at = format!("key {who:?}");
            orgs.into_iter()
                .map(move |org| (org, who.clone(), at.clone()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, org: Option<i64>) -> Event {
        Event {
            kind: kind.into(),
            id: "evt_1".into(),
            timestamp: "t".into(),
            text: "x".into(),
            data: json!({ "organization_id": org }),
        }
    }

    fn entry(kinds: &[&str], recipients: &[&str], owners: Option<&Path>) -> AlertEmailConfig {
        AlertEmailConfig {
            kinds: Some(kinds.iter().map(|k| k.to_string()).collect()),
            recipients: Some(recipients.iter().map(|r| r.to_string()).collect()),
            owners_file: owners.map(Path::to_path_buf),
        }
    }

    #[test]
    fn owners_get_their_organizations_events_and_the_recipients_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let csv = dir.path().join("owners.csv");
        std::fs::write(&csv, "organization_id,email,name\n12,alice@example.com,Alice\n31,bob@example.com,Bob\n40,alice@example.com,Alice\n")
            .expect("write");
        let routes = Routes::from_config(&[
            entry(&["trial.*"], &["sales@example.com"], Some(&csv)),
            entry(&["entitlement.threshold"], &["finance@example.com"], None),
            entry(&["sync.*"], &["ops@example.com"], Some(&csv)),
        ])
        .expect("routes");
        let to = |kind, org| routes.recipients(&event(kind, org));
        assert_eq!(to("trial.expiring", Some(12)), ["alice@example.com"]);
        assert_eq!(to("trial.expired", Some(40)), ["alice@example.com"]);
        assert_eq!(to("trial.deletion_due", Some(31)), ["bob@example.com"]);
        assert_eq!(to("trial.expiring", Some(99)), ["sales@example.com"]);
        assert_eq!(
            to("entitlement.threshold", Some(12)),
            ["finance@example.com"]
        );
        assert_eq!(to("sync.failing", None), ["ops@example.com"]);
        assert_eq!(
            routes.addresses(),
            [
                "alice@example.com",
                "bob@example.com",
                "finance@example.com",
                "ops@example.com",
                "sales@example.com"
            ]
        );
    }

    #[test]
    fn a_toml_owners_file_reads_the_same_and_mistakes_name_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let toml = dir.path().join("owners.toml");
        std::fs::write(
            &toml,
            "\"alice@example.com\" = [12, 40]\n\"bob@example.com\" = [31]\n",
        )
        .expect("write");
        let routes = Routes::from_config(&[entry(&["*"], &[], Some(&toml))]).expect("routes");
        assert_eq!(
            routes.recipients(&event("trial.expired", Some(31))),
            ["bob@example.com"]
        );
        assert!(routes.recipients(&event("sync.failing", None)).is_empty());

        let csv = dir.path().join("bad.csv");
        std::fs::write(
            &csv,
            "organization_id,email\n12,alice@example.com\nx12,bob@example.com\n",
        )
        .expect("write");
        let err = Routes::from_config(&[entry(&["*"], &[], Some(&csv))]).expect_err("bad id");
        let text = err.to_string();
        assert!(
            text.contains("bad.csv") && text.contains("line 3") && text.contains("x12"),
            "{text}"
        );
        std::fs::write(&csv, "organization_id,email\n12,not-an-address\n").expect("write");
        let err = Routes::from_config(&[entry(&["*"], &[], Some(&csv))]).expect_err("bad address");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Routes::from_config(&[entry(&["trial.soon"], &["a@example.com"], None)])
            .expect_err("kind");
        assert!(err.to_string().contains("trial.soon"), "{err}");
        let err = Routes::from_config(&[entry(&["*"], &[], None)]).expect_err("no one");
        assert!(err.to_string().contains("no one"), "{err}");
    }
}
