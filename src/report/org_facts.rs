//! What an organization's page shows besides the report tables, read from the
//! mirror: once for every page, the change log of the last 30 days and the
//! entitlements report on sampled days of the last 90; the members a range of
//! organizations at a time ([`Members`]). The alert conditions come from the alerts
//! room (`alerts::held`), with [`Extra::trial_orgs`].

use crate::report::changes::{self, Changes, KindFilter, Point, Query};
use crate::report::error::ReportError;
use crate::report::project_compute::ProjectCompute;
use crate::report::tables::Table;
use crate::report::trials::Trials;
use crate::report::{KeptTable, KeptTables, Reading, ReportOptions, entitlements, pii};
use chrono::{Days, NaiveDate};
use polars::prelude::DataFrame;
use rusqlite::Connection;
use std::collections::HashMap;

/// Days of history a page charts, and of changes it lists.
pub const HISTORY_DAYS: u64 = 90;
pub const CHANGE_DAYS: u64 = 30;
/// Days between the sampled days of the history: each sample is one read of the
/// entitlements extract as of that day (about 0.15 s over `large` with 90 days of
/// history). They are read one after the other: side by side on two threads the run
/// took 0.3 s less and 60 MB more at its peak (280-303 MB against 222-243 MB).
const SAMPLE_EVERY: u64 = 15;

/// One member, as the page lists them (pseudonyms with `--redact-pii`).
pub struct Member {
    pub name: String,
    pub email: String,
    pub role: String,
    pub last_seen: String,
    pub pending: bool,
}

/// One row of the change log.
pub struct ChangeRow {
    pub observed_at: String,
    pub kind: String,
    pub entity: String,
    pub field: String,
    pub before: String,
    pub after: String,
}

/// What is read once for every page, by organization id.
#[derive(Default)]
pub struct Extra {
    pub changes: HashMap<i64, Vec<ChangeRow>>,
    /// Trial id → its organization, by the trials report.
    pub trial_orgs: HashMap<i64, i64>,
    /// (organization, metric) → (day number, used), oldest first.
    pub history: HashMap<(i64, String), Vec<(i64, f64)>>,
    /// The first day the mirror holds data for, when it is inside the 90 days.
    pub history_starts: Option<NaiveDate>,
}

fn query_err(what: &'static str) -> impl Fn(rusqlite::Error) -> ReportError {
    crate::report::error::query_err("organization pages", "the mirror", what)
}

/// Reads it; `tables` are the run's report tables (already pseudonymized).
pub fn read(opts: &ReportOptions, tables: &KeptTables) -> Result<Extra, ReportError> {
    let conn = crate::report::open(&opts.db, opts.as_of)?;
    let owner = owners(tables)?;
    let mut extra = Extra {
        changes: change_log(&conn, opts, &owner)?,
        ..Extra::default()
    };
    let today = tables.get(entitlements::NAME).map(KeptTable::whole);
    history(opts, today.transpose()?, &conn, &mut extra)?;
    extra.trial_orgs = owner.trials;
    Ok(extra)
}

/// The organizations' members, read a range of organizations at a time: over
/// `xxlarge` every member at once (85,000, each with four texts) took 20-40 MB
/// beside the pages.
pub struct Members {
    conn: Connection,
    names: Option<pii::Pseudonyms>,
}

impl Members {
    /// Opens the mirror as of the run's day; names and e-mail addresses are
    /// pseudonyms with `--redact-pii`.
    pub fn open(opts: &ReportOptions) -> Result<Members, ReportError> {
        let conn = crate::report::open(&opts.db, opts.as_of)?;
        let names = opts
            .redact_pii
            .then(|| pii::Pseudonyms::read(&conn))
            .transpose()?;
        Ok(Members { conn, names })
    }

    /// The members of the organizations `orgs`, each organization's by name.
    pub fn of(&self, orgs: &[i64]) -> Result<HashMap<i64, Vec<Member>>, ReportError> {
        let err = query_err("members");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT organization_id, COALESCE(name, username, ''), COALESCE(email, ''), \
                 COALESCE(role, ''), COALESCE(last_seen, ''), COALESCE(pending, 0) \
                 FROM organization_members \
                 WHERE organization_id IN (SELECT value FROM json_each(?1)) \
                 ORDER BY organization_id, 2",
            )
            .map_err(&err)?;
        let ids: Vec<String> = orgs.iter().map(i64::to_string).collect();
        let mut rows = stmt.query([format!("[{}]", ids.join(","))]).map_err(&err)?;
        let mut out: HashMap<i64, Vec<Member>> = HashMap::new();
        let personal = |text: String| match &self.names {
            Some(names) if !text.is_empty() => names.pseudonym(&text),
            _ => text,
        };
        while let Some(row) = rows.next().map_err(&err)? {
            let org: Option<i64> = row.get(0).map_err(&err)?;
            let Some(org) = org else { continue };
            out.entry(org).or_default().push(Member {
                name: personal(row.get(1).map_err(&err)?),
                email: personal(row.get(2).map_err(&err)?),
                role: row.get(3).map_err(&err)?,
                last_seen: row.get(4).map_err(&err)?,
                pending: row.get::<_, i64>(5).map_err(&err)? != 0,
            });
        }
        Ok(out)
    }
}

/// The change log of the last 30 days, each change given to the organization its
/// entity belongs to (members and organizations by id, projects and trials through
/// the report tables).
fn change_log(
    conn: &Connection,
    opts: &ReportOptions,
    owner: &Owners,
) -> Result<HashMap<i64, Vec<ChangeRow>>, ReportError> {
    let extract = crate::report::builtin_extract(changes::NAME.as_str())?;
    let since = opts.as_of - Days::new(CHANGE_DAYS);
    let query = Query {
        since: Point::end_of_day(since),
        until: Point::end_of_day(opts.as_of),
        kinds: KindFilter::default(),
        all_fields: false,
    };
    let all = changes::read(conn, &extract, &query)?;
    let mut df = changes::frame(&all)?;
    if opts.redact_pii {
        df = pii::redact(
            &pii::Pseudonyms::read(conn)?,
            changes::NAME.as_str(),
            df,
            false,
        )?;
    }
    let t = Changes::read(&df)?;
    let cell = |column: &[Option<&str>], r: usize| column[r].unwrap_or("").to_string();
    let mut out: HashMap<i64, Vec<ChangeRow>> = HashMap::new();
    let owned = (0..t.height()).filter_map(|r| {
        let org = owner.of(&cell(&t.entity_type, r), &cell(&t.entity_id, r))?;
        Some((
            org,
            ChangeRow {
                observed_at: cell(&t.observed_at, r),
                kind: cell(&t.kind, r),
                entity: cell(&t.entity_name, r),
                field: cell(&t.field, r),
                before: cell(&t.before, r),
                after: cell(&t.after, r),
            },
        ))
    });
    for (org, row) in owned {
        out.entry(org).or_default().push(row);
    }
    Ok(out)
}

/// Which organization a change's entity belongs to.
struct Owners {
    projects: HashMap<i64, i64>,
    trials: HashMap<i64, i64>,
}

fn owners(tables: &KeptTables) -> Result<Owners, ReportError> {
    let pairs = |out: &mut HashMap<i64, i64>, keys: Vec<Option<i64>>, orgs: Vec<Option<i64>>| {
        out.extend(
            keys.into_iter()
                .zip(orgs)
                .filter_map(|(k, o)| Some((k?, o?))),
        );
    };
    let (mut projects, mut trials) = (HashMap::new(), HashMap::new());
    if let Some(table) = tables.get(ProjectCompute::REPORT) {
        table.for_each_batch(|df| {
            let t = ProjectCompute::read(df)?;
            pairs(&mut projects, t.project_id, t.organization_id);
            Ok(())
        })?;
    }
    if let Some(table) = tables.get(Trials::REPORT) {
        table.for_each_batch(|df| {
            let t = Trials::read(df)?;
            pairs(&mut trials, t.trial_id, t.organization_id);
            Ok(())
        })?;
    }
    Ok(Owners { projects, trials })
}

impl Owners {
    fn of(&self, entity_type: &str, id: &str) -> Option<i64> {
        match entity_type {
            "organization" => id.parse().ok(),
            "member" => id.split('/').next()?.parse().ok(),
            "project" => self.projects.get(&id.parse().ok()?).copied(),
            "trial" => self.trials.get(&id.parse().ok()?).copied(),
            _ => None,
        }
    }
}

/// The entitlements report's usage on every fifteenth day back over the last 90 that
/// the mirror can answer for, and the run's own table for the as-of day: each organization's `used` per
/// metric on those days. The same report job makes every point, so the chart and
/// the table never disagree.
fn history(
    opts: &ReportOptions,
    today: Option<DataFrame>,
    conn: &Connection,
    extra: &mut Extra,
) -> Result<(), ReportError> {
    let first = crate::mirror::coverage::first_day(conn).map_err(query_err("coverage"))?;
    let start = opts.as_of - Days::new(HISTORY_DAYS);
    let days: Vec<NaiveDate> = (1..=HISTORY_DAYS / SAMPLE_EVERY)
        .rev()
        .filter_map(|k| opts.as_of.checked_sub_days(Days::new(k * SAMPLE_EVERY)))
        .filter(|d| first.is_some_and(|f| *d >= f))
        .collect();
    extra.history_starts = first.filter(|f| *f > start);
    let extract = crate::report::builtin_extract(entitlements::NAME.as_str())?;
    let mut tables: Vec<(NaiveDate, DataFrame)> = days
        .iter()
        .map(|&day| {
            let reading = Reading::new(opts, &extract, day);
            reading.run(entitlements::usage).map(|df| (day, df))
        })
        .collect::<Result<_, _>>()?;
    if let Some(now) = today {
        tables.push((opts.as_of, now));
    }
    for (day, df) in &tables {
        let number = crate::calendar::day_of(*day);
        let t = Table::new(entitlements::NAME.as_str(), df);
        let (org, metric, used) = (
            t.int("organization_id")?,
            t.text("metric")?,
            t.float("used")?,
        );
        for r in 0..t.height() {
            let (Some(o), Some(m), Some(u)) = (org[r], metric[r], used[r]) else {
                continue;
            };
            extra
                .history
                .entry((o, m.to_string()))
                .or_default()
                .push((number, u));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testkit::{Reports, TestMirror, small_world};

    fn names(members: &HashMap<i64, Vec<Member>>, org: i64) -> Vec<(String, String)> {
        members
            .get(&org)
            .into_iter()
            .flatten()
            .map(|m| (m.name.clone(), m.email.clone()))
            .collect()
    }

    #[test]
    fn members_come_for_the_organizations_asked_only_by_name_and_pseudonymized_when_redacting() {
        let mut m = TestMirror::new();
        small_world(&mut m);
        m.close();
        let mut opts = m.options("2025-03-31", &[]);
        let members = Members::open(&opts).expect("members");
        let ada = ("Ada Lovelace".to_string(), "ada@example.com".to_string());
        let bjork = (
            "Björk Guðmundsdóttir".to_string(),
            "bjork@example.is".to_string(),
        );
        let both = members.of(&[2, 1]).expect("organizations 1 and 2");
        assert_eq!(names(&both, 1), [ada, bjork]);
        assert!(members.of(&[2]).expect("organization 2").is_empty());
        assert!(members.of(&[]).expect("no organization").is_empty());
        opts.redact_pii = true;
        let redacted = Members::open(&opts).expect("members").of(&[1]).expect("1");
        let shown = names(&redacted, 1);
        assert_eq!(shown.len(), 2);
        assert!(
            shown
                .iter()
                .all(|(n, e)| n.starts_with("user-") && e.starts_with("user-")),
            "pseudonyms, not the people: {shown:?}"
        );
    }
}
