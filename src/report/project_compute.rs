//! `project_compute`: one row per project with project information, soft-deleted
//! ones included: its compute budget period, time used and left, the share of the
//! budget used, a flag at the threshold (80 % by default) and its deletion date.

use crate::report::Ctx;
use crate::report::attention::entity;
use crate::report::batches::Emit;
use crate::report::completeness::{Completeness, Source, Sources};
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
use crate::report::status::flag;
use crate::report::tables::{Table, TableError};
use crate::report::units::human;
use polars::prelude::*;

/// The report's name.
pub const NAME: ReportName = ReportName::new("project_compute");

/// The report: a row per project, read back by the attention list and the pages.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "each project's compute used against its budget",
    include_str!("../../queries/project_compute.sql"),
    COLUMNS,
    build,
)
.complete(row_sources, describe)
.kept()
.cost(3);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "project_id",
    "project_name",
    "organization_id",
    "organization_name",
    "period_start",
    "period_end",
    "time_used_ms",
    "time_left_ms",
    "time_used_human",
    "time_left_human",
    "pct_used",
    "flagged",
    "last_accessed",
    "deleted_date",
];

/// What the extract's rows hold.
const READ: &[(&str, Kind)] = &[
    ("project_id", Kind::Int),
    ("project_name", Kind::Text),
    ("organization_id", Kind::Int),
    ("organization_name", Kind::Text),
    ("period_start", Kind::Text),
    ("period_end", Kind::Text),
    ("time_used_ms", Kind::Int),
    ("time_left_ms", Kind::Int),
    ("last_accessed", Kind::Text),
    ("deleted_date", Kind::Text),
];

fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let report = ctx.report();
    ctx.read_batches("main", READ, &mut |mut df| {
        add_flag(report, &mut df, ctx.thresholds.flag_pct)?;
        emit(df)
    })
}

/// Adds `pct_used` = 100 × used / (used + left) (empty without a budget), `flagged`
/// at `flag_pct` (the percentage rounded on the flag's side of it, see
/// [`crate::report::status`]) and the hours as a person reads them.
fn add_flag(report: &str, df: &mut DataFrame, flag_pct: f64) -> Result<(), ReportError> {
    let table = Table::new(report, df);
    let (used, left) = (table.float("time_used_ms")?, table.float("time_left_ms")?);
    let n = df.height();
    let (mut pct, mut flagged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (u, l) in used.iter().zip(&left) {
        let budget = u.zip(*l).map(|(u, l)| u + l).filter(|b| *b > 0.0);
        match (u, budget) {
            (Some(u), Some(b)) => {
                let (f, p) = flag(100.0 * u / b, flag_pct);
                pct.push(Some(p));
                flagged.push(Some(f));
            }
            _ => {
                pct.push(None);
                flagged.push(None);
            }
        }
    }
    let columns = [
        Column::new("pct_used".into(), pct),
        Column::new("flagged".into(), flagged),
        Column::new(
            "time_used_human".into(),
            used.iter().map(|v| human(*v, "ms")).collect::<Vec<_>>(),
        ),
        Column::new(
            "time_left_human".into(),
            left.iter().map(|v| human(*v, "ms")).collect::<Vec<_>>(),
        ),
    ];
    for c in columns {
        df.with_column(c).map_err(pl(report, "deriving pct_used"))?;
    }
    Ok(())
}

/// The completeness of each row (`crate::report::completeness`): each row is one
/// project's information.
pub(crate) fn row_sources<'a>(
    _: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    Ok(Box::new(
        Table::new(NAME.as_str(), df)
            .int("project_id")?
            .into_iter()
            .map(|p| Some(Source::Project(p))),
    ))
}

crate::report::tables::report_table! {
    /// `project_compute`: one row per project.
    ProjectCompute = NAME {
        project_id: int,
        project_name: text,
        organization_id: int,
        organization_name: text,
        time_used_ms: float,
        time_left_ms: float,
        pct_used: float,
        flagged: flag,
        period_end: text,
        complete: flag,
        missing: text,
    }
}

/// An incomplete row in the attention list: its project.
fn describe<'a>(df: &'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError> {
    let t = ProjectCompute::read(df)?;
    let (id, name) = (t.project_id, t.project_name);
    Ok(Box::new(move |r| entity("project", id[r], name[r])))
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use rusqlite::types::Value;

    #[test]
    fn pct_used_and_flag() {
        let mut m = TestMirror::new();
        m.run("2025-03-31T06:00:00.000Z", |w| {
            w.put(&ORGANIZATIONS, &[("id", i(1)), ("name", t("Alpha"))]);
            for (id, used, left) in [
                (1, 8_000, 2_000),
                (2, 7_999, 2_001),
                (3, 0, 0),
                (4, 150, 50),
                (5, 79_996_000, 20_004_000),
            ] {
                w.put(
                    &PROJECTS,
                    &[
                        ("id", i(id)),
                        ("name", t(&format!("P{id}"))),
                        ("owner_organization_id", i(1)),
                    ],
                );
                w.put(
                    &PROJECT_INFO,
                    &[
                        ("project_id", i(id)),
                        ("compute_period_start", t("2025-03-01T00:00:00.000Z")),
                        ("compute_period_end", t("2025-04-01T00:00:00.000Z")),
                        ("compute_time_used_ms", i(used)),
                        ("compute_time_left_ms", i(left)),
                    ],
                );
            }
        });
        let out = m.report("2025-03-31", &["project_compute"]);
        let df = &out.frames["project_compute"];
        assert_eq!(df.height(), 5);
        let row = |id: &str| find(df, &[("project_id", id)]);
        // 8000 / (8000 + 2000) = 80 % → flagged (the threshold is inclusive).
        assert_num(df, row("1"), "pct_used", Some(80.0));
        assert_eq!(text_of(df, row("1"), "flagged"), "true");
        // 7999 / 10000 = 79.99 % → not flagged.
        assert_num(df, row("2"), "pct_used", Some(79.99));
        assert_eq!(text_of(df, row("2"), "flagged"), "false");
        // 79,996 / 100,000 = 79.996 %: not flagged, so printed 79.99, not 80.00.
        assert_num(df, row("5"), "pct_used", Some(79.99));
        assert_eq!(text_of(df, row("5"), "flagged"), "false");
        assert_eq!(
            txt(df, row("5"), "time_used_human").as_deref(),
            Some("22.2 h")
        );
        // No budget at all: unknown, not zero.
        assert_num(df, row("3"), "pct_used", None);
        assert_eq!(text_of(df, row("3"), "flagged"), "");
        // 150 / 200 = 75 %.
        assert_num(df, row("4"), "pct_used", Some(75.0));
        assert_eq!(
            txt(df, row("4"), "organization_name").as_deref(),
            Some("Alpha")
        );
        assert_eq!(txt(df, row("4"), "project_name").as_deref(), Some("P4"));
    }

    #[test]
    fn a_project_without_owner_organization_belongs_to_the_organization_listing_it_or_its_users_only_profile()
     {
        let mut m = TestMirror::new();
        m.run("2025-03-31T06:00:00.000Z", |w| {
            for (org, user) in [(3, 301), (4, 401), (5, 401)] {
                w.put(
                    &ORGANIZATIONS,
                    &[
                        ("id", i(org)),
                        ("name", t(&format!("Dev {org}"))),
                        ("is_developer_profile", i(1)),
                    ],
                );
                w.scope(
                    &ORGANIZATION_MEMBERS,
                    &[i(org)],
                    &[&[
                        ("organization_id", i(org)),
                        ("user_id", i(user)),
                        ("role", t("admin")),
                    ]],
                );
            }
            // 31: user 301's profile is 3. 41: user 401 has two profiles (4 and 5) and
            // nothing says which. 42: also 401's, listed by 5's get-organization answer.
            // 51: no user at all. 52: named owner organization.
            w.scope(
                &ORGANIZATION_PROJECTS,
                &[i(5)],
                &[&[("organization_id", i(5)), ("project_id", i(42))]],
            );
            for (id, dev_user, owner_org) in [
                (31, Some(301), None),
                (41, Some(401), None),
                (42, Some(401), None),
                (51, None, None),
                (52, Some(401), Some(5)),
            ] {
                w.put(
                    &PROJECTS,
                    &[
                        ("id", i(id)),
                        ("owner_user_id", dev_user.map_or(Value::Null, i)),
                        ("developer_profile_user_id", dev_user.map_or(Value::Null, i)),
                        ("owner_organization_id", owner_org.map_or(Value::Null, i)),
                    ],
                );
                w.put(
                    &PROJECT_INFO,
                    &[("project_id", i(id)), ("compute_time_used_ms", i(1_000))],
                );
            }
        });
        let out = m.report("2025-03-31", &["project_compute"]);
        let df = &out.frames["project_compute"];
        let org = |id: &str| {
            let r = find(df, &[("project_id", id)]);
            (
                txt(df, r, "organization_id"),
                txt(df, r, "organization_name"),
            )
        };
        assert_eq!(org("31"), (Some("3".into()), Some("Dev 3".into())));
        assert_eq!(org("41"), (None, None));
        assert_eq!(
            txt(df, find(df, &[("project_id", "41")]), "missing").as_deref(),
            Some(
                "organization unknown: the project names no owner organization and its user \
                 401 has 2 developer profiles (4, 5), none of whose get-organization answers \
                 lists it"
            )
        );
        assert_eq!(org("42"), (Some("5".into()), Some("Dev 5".into())));
        assert_eq!(org("51"), (None, None));
        assert_eq!(org("52"), (Some("5".into()), Some("Dev 5".into())));

        // 42 is deleted: organization 5's next answer no longer lists it, and its
        // compute still belongs to 5.
        m.run("2025-04-01T06:00:00.000Z", |w| {
            w.scope(&ORGANIZATION_PROJECTS, &[i(5)], &[]);
            w.put(
                &PROJECTS,
                &[
                    ("id", i(42)),
                    ("owner_user_id", i(401)),
                    ("developer_profile_user_id", i(401)),
                    ("deleted_date", t("2025-03-31T12:00:00.000Z")),
                ],
            );
        });
        let out = m.report("2025-04-01", &["project_compute"]);
        let df = &out.frames["project_compute"];
        let r = find(df, &[("project_id", "42")]);
        assert_eq!(txt(df, r, "organization_id").as_deref(), Some("5"));
    }
}
