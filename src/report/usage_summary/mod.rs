//! `usage_summary`: per organization and per white label, over the last 7 and 30
//! days: people and projects added and removed, storage growth, active users, and
//! snapshot counts at the as-of date (stale projects, pending users, users without
//! MFA, suspended users).

mod storage;

use crate::report::Ctx;
use crate::report::cols::project;
use crate::report::completeness::{Completeness, Source, Sources};
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
use crate::report::tables::{Table, TableError};
use polars::prelude::*;

/// The windows, in days.
pub const WINDOWS: [i64; 2] = [7, 30];

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "scope",
    "id",
    "name",
    "window_days",
    "users_added",
    "users_deleted",
    "projects_added",
    "projects_deleted",
    "storage_growth_bytes",
    "active_users",
    "stale_projects",
    "pending_users",
    "users_without_mfa",
    "suspended_users",
];

/// Count columns: 0 when nothing matched (as opposed to storage growth, unknown
/// when nobody in the scope has daily metrics).
const COUNTS: &[&str] = &[
    "users_added",
    "users_deleted",
    "projects_added",
    "projects_deleted",
    "active_users",
    "stale_projects",
    "pending_users",
    "users_without_mfa",
    "suspended_users",
];

/// The extract's sections, with the columns each is read with.
const SCOPES: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("id", Kind::Int),
    ("name", Kind::Text),
];
const PEOPLE: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("scope_id", Kind::Int),
    ("user_id", Kind::Int),
    ("joined", Kind::Day),
    ("last_seen", Kind::Day),
    ("pending", Kind::Int),
    ("mfa_configured", Kind::Int),
    ("suspended", Kind::Int),
];
const DEPARTED: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("scope_id", Kind::Int),
    ("user_id", Kind::Int),
    ("removed_at", Kind::Day),
];
const PROJECTS: &[(&str, Kind)] = &[
    ("project_id", Kind::Int),
    ("organization_id", Kind::Int),
    ("whitelabel_id", Kind::Int),
    ("created", Kind::Day),
    ("deleted_date", Kind::Day),
    ("last_accessed", Kind::Day),
    ("removed_at", Kind::Day),
];
/// The `storage` column that sums a user's deltas over the last `days` days.
fn storage_column(days: i64) -> String {
    format!("storage_delta_{days}d")
}

/// The extract, read once and shared by both windows.
struct Inputs {
    scopes: DataFrame,
    people: DataFrame,
    departed: DataFrame,
    /// Each project twice: once in its organization, once in its white label.
    scoped_projects: LazyFrame,
    /// (scope, scope_id, user_id), once each.
    members: LazyFrame,
    storage: DataFrame,
}

pub fn build(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let inputs = read_inputs(ctx)?;
    let windows: Vec<LazyFrame> = WINDOWS.iter().map(|&w| window(&inputs, ctx, w)).collect();
    let fill: Vec<Expr> = COUNTS
        .iter()
        .map(|c| col(*c).fill_null(lit(0i64)))
        .collect();
    let df = concat(windows, UnionArgs::default())
        .map_err(pl(report, "stacking windows"))?
        .with_columns(fill)
        .sort(
            ["scope", "id", "window_days"],
            SortMultipleOptions::default(),
        )
        .collect()
        .map_err(pl(report, "counting per scope"))?;
    project(report, &df, COLUMNS)
}

fn read_inputs(ctx: &Ctx<'_>) -> Result<Inputs, ReportError> {
    let scopes = ctx.read("scopes", SCOPES)?;
    let people = ctx.read("people", PEOPLE)?;
    let departed = ctx.read("departed", DEPARTED)?;
    let projects = ctx.read("projects", PROJECTS)?;
    let storage = storage::read(ctx)?;
    Ok(Inputs {
        scopes,
        members: members_per_scope(&people),
        people,
        departed,
        scoped_projects: projects_per_scope(ctx.report(), projects)?,
        storage,
    })
}

/// Each project counts in its organization and in its white label.
fn projects_per_scope(report: &str, projects: DataFrame) -> Result<LazyFrame, ReportError> {
    Ok(concat(
        [
            projects.clone().lazy().with_columns([
                lit("organization").alias("scope"),
                col("organization_id").alias("scope_id"),
            ]),
            projects.lazy().with_columns([
                lit("whitelabel").alias("scope"),
                col("whitelabel_id").alias("scope_id"),
            ]),
        ],
        UnionArgs::default(),
    )
    .map_err(pl(report, "projects per scope"))?
    .filter(col("scope_id").is_not_null()))
}

fn members_per_scope(people: &DataFrame) -> LazyFrame {
    people
        .clone()
        .lazy()
        .filter(col("scope_id").is_not_null())
        .select([col("scope"), col("scope_id"), col("user_id")])
        .unique(None, UniqueKeepStrategy::First)
}

/// The last `days` days up to the as-of date, both ends included.
fn within(c: &str, today: i64, days: i64) -> Expr {
    col(c).gt(lit(today - days)).and(col(c).lt_eq(lit(today)))
}

/// How many rows of a group match.
fn count(e: Expr, name: &str) -> Expr {
    e.sum().cast(DataType::Int64).alias(name.to_string())
}

fn by_scope() -> [Expr; 2] {
    [col("scope"), col("scope_id")]
}

/// One row per scope for the window of `days`: every count joined to the scope list.
fn window(inputs: &Inputs, ctx: &Ctx<'_>, days: i64) -> LazyFrame {
    let today = ctx.today;
    let counts = [
        people_counts(inputs, today, days),
        departures(inputs, today, days),
        project_counts(inputs, today, days, today - ctx.thresholds.stale_days),
        storage_growth(inputs, days),
    ];
    let mut lf = inputs
        .scopes
        .clone()
        .lazy()
        .with_column(lit(days).alias("window_days"));
    for agg in counts {
        lf = lf.join(
            agg,
            [col("scope"), col("id")],
            by_scope(),
            JoinArgs::new(JoinType::Left),
        );
    }
    lf
}

/// Members who joined or were active in the window, and the snapshot counts.
fn people_counts(inputs: &Inputs, today: i64, days: i64) -> LazyFrame {
    inputs.people.clone().lazy().group_by(by_scope()).agg([
        count(within("joined", today, days), "users_added"),
        count(within("last_seen", today, days), "active_users"),
        count(col("pending").eq(lit(1)), "pending_users"),
        count(col("mfa_configured").eq(lit(0)), "users_without_mfa"),
        count(col("suspended").eq(lit(1)), "suspended_users"),
    ])
}

/// People who left the scope in the window.
fn departures(inputs: &Inputs, today: i64, days: i64) -> LazyFrame {
    inputs
        .departed
        .clone()
        .lazy()
        .filter(within("removed_at", today, days))
        .group_by(by_scope())
        .agg([col("user_id")
            .n_unique()
            .cast(DataType::Int64)
            .alias("users_deleted")])
}

/// Projects created and deleted in the window, and live projects not accessed
/// since `stale_before`.
fn project_counts(inputs: &Inputs, today: i64, days: i64, stale_before: i64) -> LazyFrame {
    let within = |c: &str| within(c, today, days);
    let live = col("removed_at").is_null().and(
        col("deleted_date")
            .is_null()
            .or(col("deleted_date").gt(lit(today))),
    );
    inputs.scoped_projects.clone().group_by(by_scope()).agg([
        count(within("created"), "projects_added"),
        count(
            within("deleted_date").or(col("deleted_date").is_null().and(within("removed_at"))),
            "projects_deleted",
        ),
        count(
            live.and(col("last_accessed").lt(lit(stale_before))),
            "stale_projects",
        ),
    ])
}

/// The members' storage deltas in the window, summed per scope (members without
/// daily metrics in the window add nothing).
fn storage_growth(inputs: &Inputs, days: i64) -> LazyFrame {
    let delta = storage_column(days);
    inputs
        .members
        .clone()
        .join(
            inputs
                .storage
                .clone()
                .lazy()
                .filter(col(delta.as_str()).is_not_null()),
            [col("user_id")],
            [col("user_id")],
            JoinArgs::new(JoinType::Inner),
        )
        .group_by(by_scope())
        .agg([col(delta.as_str()).sum().alias("storage_growth_bytes")])
}

/// The completeness of each row (`crate::report::completeness`): an organization's
/// document, or the white label's users.
pub(crate) fn row_sources<'a>(
    _: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    let table = Table::new("usage_summary", df);
    let (scope, id) = (table.text("scope")?, table.int("id")?);
    Ok(Box::new((0..df.height()).map(move |r| {
        Some(match scope[r] {
            Some("organization") => Source::Document(id[r]),
            _ => Source::Whitelabel,
        })
    })))
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use polars::prelude::DataFrame;
    use rusqlite::types::Value;

    /// Members of organization 1: (user, added, last seen, pending, MFA configured).
    const MEMBERS: [(i64, &str, &str, i64, i64); 4] = [
        (
            1,
            "2025-03-28T10:00:00.000Z",
            "2025-03-30T10:00:00.000Z",
            0,
            1,
        ),
        (
            2,
            "2025-03-10T10:00:00.000Z",
            "2025-03-20T10:00:00.000Z",
            1,
            0,
        ),
        (
            3,
            "2024-12-01T10:00:00.000Z",
            "2024-12-31T10:00:00.000Z",
            0,
            0,
        ),
        (
            4,
            "2024-01-01T10:00:00.000Z",
            "2025-03-01T10:00:00.000Z",
            0,
            1,
        ),
    ];

    /// Users of white label 9: (id, created, last seen, pending, MFA, suspended).
    const USERS_OF_WL: [(i64, &str, &str, i64, i64, i64); 4] = [
        (
            1,
            "2025-03-29T08:00:00.000Z",
            "2025-03-30T10:00:00.000Z",
            0,
            1,
            0,
        ),
        (
            2,
            "2025-02-01T08:00:00.000Z",
            "2025-03-20T10:00:00.000Z",
            1,
            0,
            1,
        ),
        (
            3,
            "2025-03-05T08:00:00.000Z",
            "2024-12-31T10:00:00.000Z",
            0,
            0,
            0,
        ),
        (
            4,
            "2024-01-01T08:00:00.000Z",
            "2025-03-01T10:00:00.000Z",
            0,
            1,
            0,
        ),
    ];

    /// Projects of organization 1 and white label 9: (id, created, last accessed,
    /// deleted).
    const PROJECTS_OF_ORG: [(i64, &str, &str, Option<&str>); 5] = [
        (
            1,
            "2025-03-29T00:00:00.000Z",
            "2025-03-30T00:00:00.000Z",
            None,
        ),
        (
            2,
            "2025-03-15T00:00:00.000Z",
            "2024-01-01T00:00:00.000Z",
            Some("2025-03-30T00:00:00.000Z"),
        ),
        (
            3,
            "2024-06-01T00:00:00.000Z",
            "2024-12-01T00:00:00.000Z",
            None,
        ),
        (
            4,
            "2024-06-01T00:00:00.000Z",
            "2024-12-31T00:00:00.000Z",
            None,
        ),
        (
            5,
            "2024-06-01T00:00:00.000Z",
            "2025-03-01T00:00:00.000Z",
            None,
        ),
    ];

    /// One sync that sees the first `members` members, `users` users and `projects`
    /// projects (the others are removed).
    fn write(w: &Run<'_>, members: usize, users: usize, projects: usize) {
        w.put(
            &ORGANIZATIONS,
            &[
                ("id", i(1)),
                ("name", t("One")),
                ("whitelabel_id", i(9)),
                ("whitelabel_name", t("Nine")),
            ],
        );
        let rows: Vec<Vec<(&str, Value)>> = MEMBERS[..members]
            .iter()
            .map(|&(user, added, seen, pending, mfa)| {
                vec![
                    ("organization_id", i(1)),
                    ("user_id", i(user)),
                    ("added", t(added)),
                    ("last_seen", t(seen)),
                    ("pending", i(pending)),
                    ("mfa_configured", i(mfa)),
                ]
            })
            .collect();
        w.scope_rows(&ORGANIZATION_MEMBERS, &[i(1)], &rows);
        for &(id, created, seen, pending, mfa, suspended) in &USERS_OF_WL[..users] {
            w.put(
                &USERS,
                &[
                    ("id", i(id)),
                    ("created", t(created)),
                    ("last_seen", t(seen)),
                    ("pending", i(pending)),
                    ("mfa_configured", i(mfa)),
                    ("suspended", i(suspended)),
                    ("whitelabel_organization_id", i(1)),
                ],
            );
        }
        keep_first(w, &USERS, users);
        for &(id, created, accessed, deleted) in &PROJECTS_OF_ORG[..projects] {
            w.put(
                &PROJECTS,
                &[
                    ("id", i(id)),
                    ("owner_organization_id", i(1)),
                    ("whitelabel_id", i(9)),
                    ("created", t(created)),
                    ("last_accessed", t(accessed)),
                    ("deleted_date", deleted.map_or(Value::Null, t)),
                ],
            );
        }
        keep_first(w, &PROJECTS, projects);
    }

    /// Removes every row of `table` but ids 1 to `n`.
    fn keep_first(w: &Run<'_>, table: &'static TableSpec, n: usize) {
        let kept: Vec<Vec<Value>> = (1..=n as i64).map(|id| vec![i(id)]).collect();
        let kept: Vec<&[Value]> = kept.iter().map(|v| v.as_slice()).collect();
        w.remove_unseen(table, &kept);
    }

    /// Daily storage records: (user, day, bytes added, bytes deleted).
    fn write_storage(w: &Run<'_>, user: i64, days: &[(&str, i64, i64)]) {
        let rows: Vec<Vec<(&str, Value)>> = days
            .iter()
            .map(|&(day, added, deleted)| {
                vec![
                    ("user_id", i(user)),
                    ("day", t(day)),
                    ("storage_bytes_added", i(added)),
                    ("storage_bytes_deleted", i(deleted)),
                ]
            })
            .collect();
        w.scope_rows(&DAILY_METRICS, &[i(user)], &rows);
    }

    /// The usage summary on 2025-03-31 of organization 1 in white label 9. The first
    /// sync knows user 4 and project 5; the second (2025-03-27) no longer sees them.
    /// Last 7 days = 2025-03-25 ..= 2025-03-31; 30 days = 2025-03-02 ..= 2025-03-31.
    fn usage_summary() -> DataFrame {
        let mut m = TestMirror::new();
        m.run("2025-03-20T06:00:00.000Z", |w| write(w, 4, 4, 5));
        m.run("2025-03-27T06:00:00.000Z", |w| {
            write(w, 3, 3, 4);
            write_storage(
                w,
                1,
                &[
                    ("2025-03-30", 1000, 100),
                    ("2025-03-20", 500, 0),
                    ("2025-02-20", 7000, 0),
                ],
            );
            write_storage(w, 2, &[("2025-03-31", 0, 300)]);
        });
        let mut out = m.report("2025-03-31", &["usage_summary"]);
        out.frames
            .remove("usage_summary")
            .expect("the usage_summary frame")
    }

    /// Asserts `column` in the rows of organization 1 and white label 9, 7 and 30 days.
    fn expect(df: &DataFrame, column: &str, [org_7, org_30, wl_7, wl_30]: [f64; 4]) {
        for (scope, id, window, want) in [
            ("organization", "1", "7", org_7),
            ("organization", "1", "30", org_30),
            ("whitelabel", "9", "7", wl_7),
            ("whitelabel", "9", "30", wl_30),
        ] {
            let r = find(df, &[("scope", scope), ("id", id), ("window_days", window)]);
            assert_num(df, r, column, Some(want));
        }
    }

    #[test]
    fn one_row_per_scope_and_window_named_after_its_scope() {
        let df = usage_summary();
        assert_eq!(
            df.height(),
            4,
            "organization 1 and white label 9, two windows each"
        );
        for (scope, id, name) in [("organization", "1", "One"), ("whitelabel", "9", "Nine")] {
            let r = find(&df, &[("scope", scope), ("id", id), ("window_days", "7")]);
            assert_eq!(txt(&df, r, "name").as_deref(), Some(name));
        }
    }

    #[test]
    fn people_added_removed_and_active_count_within_the_window() {
        let df = usage_summary();
        // Organization: user 1 added 03-28, user 2 03-10. White label: user 1 created
        // 03-29, user 3 03-05; user 2 was created in February.
        expect(&df, "users_added", [1.0, 2.0, 1.0, 2.0]);
        // User 4, removed 03-27.
        expect(&df, "users_deleted", [1.0; 4]);
        // User 1 (seen 03-30); user 2 (seen 03-20) in 30 days.
        expect(&df, "active_users", [1.0, 2.0, 1.0, 2.0]);
    }

    #[test]
    fn projects_added_deleted_and_stale_count_within_the_window() {
        let df = usage_summary();
        // Project 1 (03-29); project 2 (03-15) in 30 days.
        expect(&df, "projects_added", [1.0, 2.0, 1.0, 2.0]);
        // Project 2 (deleted 03-30), project 5 (removed 03-27).
        expect(&df, "projects_deleted", [2.0; 4]);
        // Project 3 (accessed 12-01 < 2024-12-31 = T − 90); project 4 is exactly 90 days.
        expect(&df, "stale_projects", [1.0; 4]);
    }

    #[test]
    fn storage_growth_sums_the_members_daily_deltas_within_the_window() {
        // 7 days: user 1: 1000 − 100; user 2: −300. 30 days: 900 + 500 − 300 (02-20 is
        // outside).
        expect(
            &usage_summary(),
            "storage_growth_bytes",
            [600.0, 1100.0, 600.0, 1100.0],
        );
    }

    #[test]
    fn snapshot_counts_are_the_same_in_every_window() {
        let df = usage_summary();
        // User 2.
        expect(&df, "pending_users", [1.0; 4]);
        // Users 2 and 3.
        expect(&df, "users_without_mfa", [2.0; 4]);
        // User 2.
        expect(&df, "suspended_users", [1.0; 4]);
    }
}
