//! Whether each report row's figures are complete: `complete`, `missing` (what the
//! figures lack and why, empty when nothing) and `data_as_of` (the observation time
//! of the oldest input used). Read once per run from the views of
//! `queries/completeness.sql` and attached to the finished frames by their keys, so
//! no report's formulas know about it. Statuses are computed on what is known: the
//! figure of an incomplete row is a lower bound, so `exceeded` stays certain.

use crate::report::cols::{ints, strs};
use crate::report::error::{ReportError, SqlSite, pl};
use polars::prelude::*;
use rusqlite::Connection;
use std::collections::HashMap;

/// The completeness columns, in the order they follow each report's own columns.
pub const COLUMNS: [&str; 3] = ["complete", "missing", "data_as_of"];

/// Reports whose rows carry the completeness columns.
pub const REPORTS: [&str; 4] = [
    "entitlements",
    "project_compute",
    "compute_trends",
    "usage_summary",
];

/// An organization's compute lists at most this many missing projects by name.
const NAMED_PROJECTS: usize = 3;

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

/// The completeness of every project, organization and white label at T.
#[derive(Debug, Default)]
pub struct Completeness {
    /// Per project: its information (and its organization, when unknown).
    projects: HashMap<i64, Gap>,
    /// Per organization: its own document (`get-organization`).
    documents: HashMap<i64, Gap>,
    /// Per organization: its compute, the sum over its projects' information.
    compute: HashMap<i64, Gap>,
    /// White label users of which nothing is stored after a failure.
    users: Vec<String>,
    /// The observation time of the report's sync run.
    run_as_of: Option<String>,
}

fn site(part: &str) -> Box<SqlSite> {
    SqlSite::boxed("completeness", "embedded queries/completeness.sql", part)
}

fn query_err(part: &'static str) -> impl Fn(rusqlite::Error) -> ReportError {
    move |cause| ReportError::Query {
        site: site(part),
        cause,
    }
}

impl Completeness {
    /// Reads the views of `queries/completeness.sql` on a report connection.
    pub fn read(conn: &Connection) -> Result<Completeness, ReportError> {
        let mut c = Completeness::default();
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
                    if entry.0.len() < NAMED_PROJECTS {
                        entry.0.push(info.clone());
                    }
                    entry.1 += 1;
                }
                entry.2 = oldest(entry.2.take(), as_of.clone());
            }
            let missing = info.into_iter().chain(owner).collect();
            c.projects.insert(project, Gap { missing, as_of });
        }
        for (org, (mut named, count, as_of)) in per_org {
            if count > named.len() {
                named.push(format!("and {} more projects", count - named.len()));
            }
            c.compute.insert(
                org,
                Gap {
                    missing: named,
                    as_of,
                },
            );
        }

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
            c.documents.insert(
                org,
                Gap {
                    missing: missing.into_iter().collect(),
                    as_of,
                },
            );
        }

        let err = query_err("missing_users");
        let mut stmt = conn
            .prepare("SELECT missing FROM missing_users ORDER BY user_id")
            .map_err(&err)?;
        c.users = stmt
            .query_map([], |row| row.get(0))
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)?;

        let err = query_err("report_run");
        c.run_as_of = conn
            .query_row("SELECT MAX(observed_at) FROM report_run", [], |row| {
                row.get(0)
            })
            .map_err(&err)?;
        Ok(c)
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
        let mut missing: Vec<String> = self.users.iter().take(NAMED_PROJECTS).cloned().collect();
        if self.users.len() > missing.len() {
            missing.push(format!(
                "and {} more users",
                self.users.len() - missing.len()
            ));
        }
        Gap {
            missing,
            as_of: self.run_as_of.clone(),
        }
    }

    /// Adds the completeness columns to a built-in report's frame (other reports
    /// are returned as they are).
    pub fn attach(&self, report: &str, mut df: DataFrame) -> Result<DataFrame, ReportError> {
        let Some(sources) = sources(report, &df) else {
            return Ok(df);
        };
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
        }
    }
}

/// What a row's figures are made of, as far as their completeness goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    /// An organization's own document.
    Document(Option<i64>),
    /// An organization's document and its compute, summed over its projects.
    OrganizationCompute(Option<i64>),
    /// A project's information.
    Project(Option<i64>),
    /// The white label's users.
    Whitelabel,
}

/// The source of each row of a built-in report's frame (`None` for a row the columns
/// do not apply to: users' and white labels' trends); `None` for reports without the
/// columns.
fn sources<'a>(
    report: &str,
    df: &'a DataFrame,
) -> Option<Box<dyn Iterator<Item = Option<Source>> + 'a>> {
    Some(match report {
        "entitlements" => {
            let org = ints(df, "organization_id");
            let metric = strs(df, "metric");
            let source = strs(df, "source");
            Box::new((0..df.height()).map(move |r| {
                // Only compute summed over project information depends on it; a
                // developer profile's figure comes from its daily metrics.
                let from_projects = metric[r] == Some("compute_seconds")
                    && source[r].is_some_and(|s| s.contains("project_info"));
                Some(if from_projects {
                    Source::OrganizationCompute(org[r])
                } else {
                    Source::Document(org[r])
                })
            }))
        }
        "project_compute" => Box::new(
            ints(df, "project_id")
                .into_iter()
                .map(|p| Some(Source::Project(p))),
        ),
        "compute_trends" => {
            // Read from the columns as they are, not copied into vectors: the report
            // has 2.2 million rows over an xlarge mirror.
            let kind = df.column("entity_type").ok().and_then(|c| c.str().ok());
            let id = df.column("entity_id").ok().and_then(|c| c.i64().ok());
            match (kind, id) {
                (Some(kind), Some(id)) => Box::new(kind.iter().zip(id.iter()).map(|(kind, id)| {
                    (kind == Some("organization")).then_some(Source::OrganizationCompute(id))
                })),
                _ => Box::new(std::iter::repeat_n(None, df.height())),
            }
        }
        "usage_summary" => {
            let scope = strs(df, "scope");
            let id = ints(df, "id");
            Box::new((0..df.height()).map(move |r| {
                Some(match scope[r] {
                    Some("organization") => Source::Document(id[r]),
                    _ => Source::Whitelabel,
                })
            }))
        }
        _ => return None,
    })
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
