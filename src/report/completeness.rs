//! Whether each report row's figures are complete: `complete`, `missing` (what the
//! figures lack and why, empty when nothing) and `data_as_of` (the observation time
//! of the oldest input used). Read once per run from the views of
//! `queries/completeness.sql` and attached to the finished frames by their keys, so
//! no report's formulas know about it. Statuses are computed on what is known: the
//! figure of an incomplete row is a lower bound, so `exceeded` stays certain.

use crate::calendar::{day_of, parse_day};
use crate::report::error::{ReportError, pl};
use crate::report::tables::TableError;
use chrono::NaiveDate;
use polars::prelude::*;
use rusqlite::Connection;
use std::collections::HashMap;

/// The completeness columns, in the order they follow each report's own columns.
pub const COLUMNS: [&str; 3] = ["complete", "missing", "data_as_of"];

/// A row's `missing` names at most this many projects, users or days, then says how
/// many more.
const NAMED: usize = 3;

/// What one row's figures lack and the age of their inputs.
#[derive(Debug, Clone, Default, PartialEq)]
struct Gap {
    missing: Vec<String>,
    as_of: Option<String>,
}

impl Gap {
    /// Both gaps together: every missing input, the older observation.
    fn with(&self, other: &Gap) -> Gap {
        let mut missing = self.missing.clone();
        missing.extend(other.missing.iter().cloned());
        Gap {
            missing,
            as_of: oldest(self.as_of.clone(), other.as_of.clone()),
        }
    }
}

/// Whose daily metrics a row's figures read: a user's own, or every user's of a
/// white label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum People {
    User,
    Whitelabel,
}

/// The completeness of every project, organization and white label at T.
pub struct Completeness {
    /// Per project: its information (and its organization, when unknown).
    projects: HashMap<i64, Gap>,
    /// Per organization: its own document (`get-organization`).
    documents: HashMap<i64, Gap>,
    /// Per organization: its compute, the sum over its projects' information.
    compute: HashMap<i64, Gap>,
    /// White label users of which nothing is stored after a failure.
    users: Vec<String>,
    /// Per user and per white label: the days (day number, what is wrong) on which
    /// more than one of a user's daily records fell, by day.
    collided: HashMap<(People, i64), Vec<(i64, String)>>,
    /// Day number of the as-of date.
    today: i64,
    /// The observation time of the report's sync run.
    run_as_of: Option<String>,
}

fn query_err(part: &'static str) -> impl Fn(rusqlite::Error) -> ReportError {
    crate::report::error::query_err("completeness", "embedded queries/completeness.sql", part)
}

impl Completeness {
    /// Reads the views of `queries/completeness.sql` on a report connection, for a
    /// report as of `as_of`.
    pub fn read(conn: &Connection, as_of: NaiveDate) -> Result<Completeness, ReportError> {
        let mut c = Completeness {
            projects: HashMap::new(),
            documents: HashMap::new(),
            compute: HashMap::new(),
            users: Vec::new(),
            collided: HashMap::new(),
            today: day_of(as_of),
            run_as_of: None,
        };
        c.read_projects(conn)?;
        c.read_documents(conn)?;
        let err = query_err("missing_users");
        let mut stmt = conn
            .prepare("SELECT missing FROM missing_users ORDER BY user_id")
            .map_err(&err)?;
        c.users = stmt
            .query_map([], |row| row.get(0))
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)?;
        c.read_collided_days(conn)?;
        let err = query_err("report_run");
        c.run_as_of = conn
            .query_row("SELECT MAX(observed_at) FROM report_run", [], |row| {
                row.get(0)
            })
            .map_err(&err)?;
        Ok(c)
    }

    /// The `project_completeness` view: each project's gap, and each
    /// organization's compute (the projects whose information it lacks).
    fn read_projects(&mut self, conn: &Connection) -> Result<(), ReportError> {
        let err = query_err("project_completeness");
        let mut stmt = conn
            .prepare(
                "SELECT project_id, organization_id, info_missing, organization_missing, data_as_of \
                 FROM project_completeness ORDER BY project_id",
            )
            .map_err(&err)?;
        let mut rows = stmt.query([]).map_err(&err)?;
        let mut per_org: HashMap<i64, (Vec<String>, usize, Option<String>)> = HashMap::new();
        while let Some(row) = rows.next().map_err(&err)? {
            let project: i64 = row.get(0).map_err(&err)?;
            let org: Option<i64> = row.get(1).map_err(&err)?;
            let info: Option<String> = row.get(2).map_err(&err)?;
            let owner: Option<String> = row.get(3).map_err(&err)?;
            let as_of: Option<String> = row.get(4).map_err(&err)?;
            if let Some(org) = org {
                let entry = per_org.entry(org).or_default();
                if let Some(info) = &info {
                    if entry.0.len() < NAMED {
                        entry.0.push(info.clone());
                    }
                    entry.1 += 1;
                }
                entry.2 = oldest(entry.2.take(), as_of.clone());
            }
            let missing = info.into_iter().chain(owner).collect();
            self.projects.insert(project, Gap { missing, as_of });
        }
        for (org, (mut named, count, as_of)) in per_org {
            if count > named.len() {
                named.push(format!("and {} more projects", count - named.len()));
            }
            let gap = Gap {
                missing: named,
                as_of,
            };
            self.compute.insert(org, gap);
        }
        Ok(())
    }

    /// The `organization_completeness` view: each organization's own document.
    fn read_documents(&mut self, conn: &Connection) -> Result<(), ReportError> {
        let err = query_err("organization_completeness");
        let mut stmt = conn
            .prepare(
                "SELECT organization_id, document_missing, document_as_of \
                 FROM organization_completeness",
            )
            .map_err(&err)?;
        let mut rows = stmt.query([]).map_err(&err)?;
        while let Some(row) = rows.next().map_err(&err)? {
            let org: i64 = row.get(0).map_err(&err)?;
            let missing: Option<String> = row.get(1).map_err(&err)?;
            let as_of: Option<String> = row.get(2).map_err(&err)?;
            let gap = Gap {
                missing: missing.into_iter().collect(),
                as_of,
            };
            self.documents.insert(org, gap);
        }
        Ok(())
    }

    /// The `collided_day` view, by user and by the user's white label.
    fn read_collided_days(&mut self, conn: &Connection) -> Result<(), ReportError> {
        let err = query_err("collided_day");
        let mut stmt = conn
            .prepare(
                "SELECT user_id, day, whitelabel_id, missing FROM collided_day \
                 ORDER BY day, user_id",
            )
            .map_err(&err)?;
        let mut rows = stmt.query([]).map_err(&err)?;
        while let Some(row) = rows.next().map_err(&err)? {
            let user: i64 = row.get(0).map_err(&err)?;
            let day: String = row.get(1).map_err(&err)?;
            let whitelabel: Option<i64> = row.get(2).map_err(&err)?;
            let missing: String = row.get(3).map_err(&err)?;
            let Some(day) = parse_day(&day) else { continue };
            let mut add = |people, id| {
                self.collided
                    .entry((people, id))
                    .or_default()
                    .push((day, missing.clone()));
            };
            add(People::User, user);
            if let Some(whitelabel) = whitelabel {
                add(People::Whitelabel, whitelabel);
            }
        }
        Ok(())
    }

    /// An organization's own document.
    fn document(&self, org: Option<i64>) -> Gap {
        org.and_then(|o| self.documents.get(&o).cloned())
            .unwrap_or_else(|| Gap {
                missing: Vec::new(),
                as_of: self.run_as_of.clone(),
            })
    }

    /// An organization's document and its compute (the sum over its projects).
    fn organization_compute(&self, org: Option<i64>) -> Gap {
        let doc = self.document(org);
        match org.and_then(|o| self.compute.get(&o)) {
            Some(compute) => doc.with(compute),
            None => doc,
        }
    }

    /// The white label's users.
    fn whitelabel(&self) -> Gap {
        Gap {
            missing: named(self.users.iter().cloned(), "users"),
            as_of: self.run_as_of.clone(),
        }
    }

    /// The days from `first` to `last` on which daily records of the user (or of a
    /// user of the white label) collided.
    fn collided_days(&self, people: People, id: i64, (first, last): (i64, i64)) -> Gap {
        let days = self.collided.get(&(people, id)).into_iter().flatten();
        let missing = days
            .filter(|(day, _)| (first..=last).contains(day))
            .map(|(_, missing)| missing.clone());
        Gap {
            missing: named(missing, "days"),
            as_of: self.run_as_of.clone(),
        }
    }

    /// Day number of the as-of date the completeness was read for.
    pub(crate) fn today(&self) -> i64 {
        self.today
    }

    /// Whether no daily record of anybody collided with another (the common case:
    /// a row reading daily metrics then needs no look at its days).
    pub(crate) fn no_collided_days(&self) -> bool {
        self.collided.is_empty()
    }

    /// The source of a row that reads `people`'s (`id`'s) daily metrics from day
    /// `first` to `last`: the collided days among them, or None when none collided
    /// (the columns stay empty on such rows).
    pub(crate) fn daily_source(
        &self,
        people: People,
        id: i64,
        (first, last): (i64, i64),
    ) -> Option<Source> {
        let days = self.collided.get(&(people, id))?;
        days.iter()
            .any(|(day, _)| (first..=last).contains(day))
            .then_some(Source::CollidedDays {
                people,
                id,
                first,
                last,
            })
    }

    /// Adds the completeness columns to a report's frame, each row's taken from
    /// the input `sources` says it depends on.
    pub fn attach(
        &self,
        report: &str,
        sources: RowSources,
        mut df: DataFrame,
    ) -> Result<DataFrame, ReportError> {
        let sources = sources(self, &df)?;
        // Rows share a few distinct gaps (one per organization, project or the white
        // label): each is put into words once, and a row holds only its index. A gap
        // per row cost compute_trends over an xlarge mirror (2.2 million rows, most
        // of which the columns do not apply to) hundreds of MB.
        let mut index: HashMap<Source, u32> = HashMap::new();
        let mut cells: Vec<Cells> = Vec::new();
        let rows: Vec<Option<u32>> = sources
            .map(|source| {
                let source = source?;
                Some(*index.entry(source).or_insert_with(|| {
                    cells.push(Cells::of(self.gap(source)));
                    (cells.len() - 1) as u32
                }))
            })
            .collect();
        let cell = |r: &Option<u32>| r.map(|i| &cells[i as usize]);
        let complete: BooleanChunked = rows.iter().map(|r| cell(r).map(|c| c.complete)).collect();
        let missing: StringChunked = rows
            .iter()
            .map(|r| cell(r).map(|c| c.missing.as_str()))
            .collect();
        let as_of: StringChunked = rows
            .iter()
            .map(|r| cell(r).and_then(|c| c.as_of.as_deref()))
            .collect();
        for c in [
            complete.with_name(COLUMNS[0].into()).into_column(),
            missing.with_name(COLUMNS[1].into()).into_column(),
            as_of.with_name(COLUMNS[2].into()).into_column(),
        ] {
            df.with_column(c)
                .map_err(pl(report, "adding the completeness columns"))?;
        }
        Ok(df)
    }

    /// The gap of one source.
    fn gap(&self, source: Source) -> Gap {
        match source {
            Source::Document(org) => self.document(org),
            Source::OrganizationCompute(org) => self.organization_compute(org),
            Source::Project(project) => project
                .and_then(|p| self.projects.get(&p).cloned())
                .unwrap_or_else(|| Gap {
                    missing: Vec::new(),
                    as_of: self.run_as_of.clone(),
                }),
            Source::Whitelabel => self.whitelabel(),
            Source::CollidedDays {
                people,
                id,
                first,
                last,
            } => self.collided_days(people, id, (first, last)),
        }
    }
}

/// What a row's figures are made of, as far as their completeness goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// An organization's own document.
    Document(Option<i64>),
    /// An organization's document and its compute, summed over its projects.
    OrganizationCompute(Option<i64>),
    /// A project's information.
    Project(Option<i64>),
    /// The white label's users.
    Whitelabel,
    /// The days from `first` to `last` of a user's or white label's daily metrics,
    /// some of which collided.
    CollidedDays {
        people: People,
        id: i64,
        first: i64,
        last: i64,
    },
}

/// The source of each row of a report's frame (`None` for a row the columns do not
/// apply to: users' and white labels' trends that read no collided day). A report
/// whose rows carry the completeness columns defines its own, next to its formulas
/// (`row_sources` in its module), and names it in the registry
/// (`crate::report::registry`).
pub(crate) type RowSources =
    for<'a> fn(&'a Completeness, &'a DataFrame) -> Result<Sources<'a>, TableError>;

/// Each row's [`Source`], in row order.
pub(crate) type Sources<'a> = Box<dyn Iterator<Item = Option<Source>> + 'a>;

/// The first few of `items`, then how many more there are (`and N more <what>`).
fn named(items: impl Iterator<Item = String>, what: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut more = 0;
    for item in items {
        if named.len() < NAMED {
            named.push(item);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        named.push(format!("and {more} more {what}"));
    }
    named
}

/// A gap in the words of the three columns.
struct Cells {
    complete: bool,
    missing: String,
    as_of: Option<String>,
}

impl Cells {
    fn of(gap: Gap) -> Cells {
        Cells {
            complete: gap.missing.is_empty(),
            missing: gap.missing.join("; "),
            as_of: gap.as_of,
        }
    }
}

/// The older of two observation times (text order is time order).
fn oldest(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_gaps_keep_every_missing_input_and_the_older_observation() {
        let a = Gap {
            missing: vec!["project 1 (x)".into()],
            as_of: Some("2026-06-01T06:00:00.000Z".into()),
        };
        let b = Gap {
            missing: vec!["project 2 (y)".into()],
            as_of: Some("2026-05-30T06:00:00.000Z".into()),
        };
        let both = a.with(&b);
        assert_eq!(both.missing, vec!["project 1 (x)", "project 2 (y)"]);
        assert_eq!(both.as_of.as_deref(), Some("2026-05-30T06:00:00.000Z"));
        assert_eq!(
            a.with(&Gap::default()).as_of.as_deref(),
            Some("2026-06-01T06:00:00.000Z")
        );
    }
}
