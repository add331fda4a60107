//! What an organization's page shows besides the report tables, read from the
//! mirror: once for every page, the change log of the last 30 days and each
//! metric's figures on every day of the last 90 that the mirror holds ([`History`],
//! from [`crate::report::figure_history`]); the members a range of organizations at
//! a time ([`Members`]). The alert conditions come from the alerts room
//! (`alerts::held`), with [`Extra::trial_orgs`].

use crate::calendar::day_of;
use crate::report::changes::{self, Changes, KindFilter, Point, Query};
use crate::report::error::ReportError;
pub use crate::report::figure_history::Figures;
use crate::report::project_compute::ProjectCompute;
use crate::report::status::Status;
use crate::report::tables::Table;
use crate::report::trials::Trials;
use crate::report::{KeptTable, KeptTables, ReportOptions, entitlements, pii};
use chrono::{Days, NaiveDate};
use polars::prelude::DataFrame;
use rusqlite::Connection;
use std::collections::HashMap;

/// Days of history a page charts, and of changes it lists.
pub const HISTORY_DAYS: u64 = 90;
pub const CHANGE_DAYS: u64 = 30;

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
    /// Each organization's metrics over the last 90 days.
    pub history: History,
    /// The first day the mirror holds data for, when it is inside the 90 days.
    pub history_starts: Option<NaiveDate>,
}

/// Since when a metric at or over its limit has been there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// The first day the history saw it there (day number).
    On(i64),
    /// The first day the history holds (day number) already saw it there.
    Before(i64),
}

/// Every organization's metrics on each day of the window that the mirror holds,
/// as the entitlements report has them as of that day: T's from the run's own
/// table, the days before from [`crate::report::figure_history`]. A series keeps
/// only the days its figures changed on: limits, users and projects rarely change,
/// and over `xxlarge` (45,005 rows) a figure per row and day would take 160 MB.
#[derive(Debug, Default)]
pub struct History {
    /// The days read (day numbers), oldest first, T last.
    days: Vec<i64>,
    /// Each (organization, metric)'s series.
    series: HashMap<(i64, String), Series>,
}

/// One metric's figures over the days read.
#[derive(Debug, Default)]
struct Series {
    /// From which day read (its index in `days`) its figures were what, oldest
    /// first; None: not listed from that day on.
    changes: Vec<(usize, Option<Figures>)>,
    /// The last day read that listed it.
    seen: usize,
}

impl History {
    /// A history of `days` (day numbers, oldest first) from each series' figures on
    /// each of them (None: not listed that day).
    pub fn of_days(
        days: Vec<i64>,
        series: impl IntoIterator<Item = crate::report::figure_history::Series>,
    ) -> History {
        let mut out = History {
            days,
            series: HashMap::new(),
        };
        for (key, figures) in series {
            let mut kept = Series::default();
            for (slot, figures) in figures.into_iter().enumerate() {
                if figures.is_some() {
                    kept.seen = slot;
                }
                let changed = match kept.changes.last() {
                    Some((_, last)) => *last != figures,
                    None => figures.is_some(),
                };
                if changed {
                    kept.changes.push((slot, figures));
                }
            }
            if !kept.changes.is_empty() {
                out.series.insert(key, kept);
            }
        }
        out
    }

    /// Adds the entitlements table as of `day`, a day after every day added before.
    pub fn add(&mut self, day: i64, df: &DataFrame) -> Result<(), ReportError> {
        let slot = self.days.len();
        self.days.push(day);
        // The table as its job builds it, without the completeness columns the
        // run's own rows carry.
        let t = Table::new(entitlements::NAME.as_str(), df);
        let (orgs, metrics) = (t.int("organization_id")?, t.text("metric")?);
        let (used, limit, status) = (t.float("used")?, t.float("limit")?, t.text("status")?);
        for r in 0..t.height() {
            let (Some(org), Some(metric)) = (orgs[r], metrics[r]) else {
                continue;
            };
            let figures = Some(Figures {
                used: used[r],
                limit: limit[r],
                status: status[r].and_then(Status::parse).unwrap_or(Status::NoData),
            });
            let series = self.series.entry((org, metric.to_string())).or_default();
            series.seen = slot;
            if series.changes.last().map(|(_, f)| *f) != Some(figures) {
                series.changes.push((slot, figures));
            }
        }
        // A series the day did not list ends here.
        for series in self.series.values_mut() {
            if series.seen < slot && series.changes.last().is_some_and(|(_, f)| f.is_some()) {
                series.changes.push((slot, None));
            }
        }
        Ok(())
    }

    /// A metric's figures on every day from the first day read to the last, oldest
    /// first: each day's are those of the latest day read on or before it (the
    /// mirror's state that day), days on which it was not listed left out.
    pub fn daily(&self, org: i64, metric: &str) -> Vec<(i64, Figures)> {
        let (Some(series), Some(&last)) = (
            self.series.get(&(org, metric.to_string())),
            self.days.last(),
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let changes = &series.changes;
        for (k, (slot, figures)) in changes.iter().enumerate() {
            let Some(figures) = figures else {
                continue;
            };
            let until = changes
                .get(k + 1)
                .map_or(last + 1, |(next, _)| self.days[*next]);
            out.extend((self.days[*slot]..until).map(|d| (d, *figures)));
        }
        out
    }

    /// Since when a metric exceeded on the last day read has been over its limit,
    /// or one at the limit at or over it: the first day read of that unbroken
    /// spell; None for any other status (or a metric not listed on the last day).
    pub fn since(&self, org: i64, metric: &str) -> Option<Since> {
        let series = &self.series.get(&(org, metric.to_string()))?.changes;
        let there: fn(Status) -> bool = match series.last()?.1?.status {
            Status::Exceeded => |s| s == Status::Exceeded,
            Status::AtLimit => |s| matches!(s, Status::Exceeded | Status::AtLimit),
            _ => return None,
        };
        let spell = series
            .iter()
            .rev()
            .take_while(|(_, f)| f.is_some_and(|f| there(f.status)))
            .last()?;
        Some(match spell.0 {
            0 => Since::Before(self.days[0]),
            k => Since::On(self.days[k]),
        })
    }
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
    if let Some(today) = today.transpose()? {
        history(opts, &today, &conn, &mut extra)?;
    }
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

/// Each metric's figures on every day of the last 90 the mirror holds: the days
/// before T from the mirror's history, T's from the run's own table (`today`).
fn history(
    opts: &ReportOptions,
    today: &DataFrame,
    conn: &Connection,
    extra: &mut Extra,
) -> Result<(), ReportError> {
    let first = crate::mirror::coverage::first_day(conn).map_err(query_err("coverage"))?;
    let start = opts.as_of - Days::new(HISTORY_DAYS);
    extra.history_starts = first.filter(|f| *f > start);
    if let Some(from) = first.map(|f| f.max(start)) {
        let (days, series) = crate::report::figure_history::read(opts, from, today)?;
        extra.history = History::of_days(days, series);
    }
    extra.history.add(day_of(opts.as_of), today)
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

    /// An entitlements table of (organization, metric, used, limit, status) rows.
    fn day(rows: &[(i64, &str, f64, f64, &str)]) -> DataFrame {
        use polars::prelude::Column;
        let of = |name: &str| name.into();
        DataFrame::new_infer_height(vec![
            Column::new(
                of("organization_id"),
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            ),
            Column::new(of("metric"), rows.iter().map(|r| r.1).collect::<Vec<_>>()),
            Column::new(of("used"), rows.iter().map(|r| r.2).collect::<Vec<_>>()),
            Column::new(of("limit"), rows.iter().map(|r| r.3).collect::<Vec<_>>()),
            Column::new(of("status"), rows.iter().map(|r| r.4).collect::<Vec<_>>()),
        ])
        .expect("a table")
    }

    /// Days 10 (the first), 13 and 14 (T).
    fn history() -> History {
        type Rows = &'static [(i64, &'static str, f64, f64, &'static str)];
        let days: [(i64, Rows); 3] = [
            (
                10,
                &[
                    (1, "compute_seconds", 5.0, 10.0, "ok"),
                    (1, "storage_bytes", 12.0, 10.0, "exceeded"),
                    (2, "users", 3.0, 3.0, "at_limit"),
                    (3, "projects", 1.0, 5.0, "ok"),
                ],
            ),
            (
                13,
                &[
                    (1, "compute_seconds", 12.0, 10.0, "exceeded"),
                    (1, "storage_bytes", 13.0, 10.0, "exceeded"),
                    (2, "users", 4.0, 3.0, "exceeded"),
                ],
            ),
            (
                14,
                &[
                    (1, "compute_seconds", 15.0, 10.0, "exceeded"),
                    (1, "storage_bytes", 14.0, 10.0, "exceeded"),
                    (2, "users", 3.0, 3.0, "at_limit"),
                    (3, "projects", 2.0, 5.0, "ok"),
                ],
            ),
        ];
        let mut h = History::default();
        for (number, rows) in days {
            h.add(number, &day(rows)).expect("a day");
        }
        h
    }

    #[test]
    fn every_day_holds_the_figures_of_the_last_day_read_on_or_before_it() {
        let h = history();
        let used = |org, metric| -> Vec<(i64, Option<f64>)> {
            h.daily(org, metric)
                .into_iter()
                .map(|(d, f)| (d, f.used))
                .collect()
        };
        assert_eq!(
            used(1, "compute_seconds"),
            [
                (10, Some(5.0)),
                (11, Some(5.0)),
                (12, Some(5.0)),
                (13, Some(12.0)),
                (14, Some(15.0))
            ]
        );
        // Not listed on day 13: no figure from it until the next day that listed it.
        assert_eq!(
            used(3, "projects"),
            [
                (10, Some(1.0)),
                (11, Some(1.0)),
                (12, Some(1.0)),
                (14, Some(2.0))
            ]
        );
        assert!(h.daily(9, "users").is_empty());
    }

    #[test]
    fn a_metric_over_its_limit_is_there_since_the_first_day_of_its_spell_the_history_saw() {
        let h = history();
        // Over from day 13 on.
        assert_eq!(h.since(1, "compute_seconds"), Some(Since::On(13)));
        // Over on every day read: already on the first.
        assert_eq!(h.since(1, "storage_bytes"), Some(Since::Before(10)));
        // At the limit on T, over the day before, at it on the first day: at or over
        // all along.
        assert_eq!(h.since(2, "users"), Some(Since::Before(10)));
        assert_eq!(h.since(3, "projects"), None, "under its limit");
        assert_eq!(h.since(9, "users"), None, "not listed");
    }

    #[test]
    fn a_spell_ends_where_the_metric_was_under_or_not_listed_and_one_day_of_history_is_its_first() {
        let mut h = History::default();
        h.add(
            1,
            &day(&[
                (1, "users", 4.0, 3.0, "exceeded"),
                (2, "users", 4.0, 3.0, "exceeded"),
            ]),
        )
        .expect("day 1");
        h.add(2, &day(&[(1, "users", 3.0, 3.0, "at_limit")]))
            .expect("day 2");
        h.add(
            3,
            &day(&[
                (1, "users", 4.0, 3.0, "exceeded"),
                (2, "users", 4.0, 3.0, "exceeded"),
            ]),
        )
        .expect("day 3");
        // Exceeded again on T after a day only at the limit; not listed on day 2.
        assert_eq!(h.since(1, "users"), Some(Since::On(3)));
        assert_eq!(h.since(2, "users"), Some(Since::On(3)));
        let mut once = History::default();
        once.add(7, &day(&[(1, "users", 4.0, 3.0, "exceeded")]))
            .expect("T");
        assert_eq!(once.since(1, "users"), Some(Since::Before(7)));
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
