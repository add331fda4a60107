//! `usage_summary`: per organization and per white label, over the last 7 and 30
//! days: people and projects added and removed, storage growth, active users, and
//! snapshot counts at the as-of date (stale projects, pending users, users without
//! MFA, suspended users).

use crate::report::Ctx;
use crate::report::cols::project;
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
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

pub fn build(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let today = ctx.today;
    let err = |step| pl(report, step);
    let scopes = ctx.read(
        "scopes",
        &[
            ("scope", Kind::Text),
            ("id", Kind::Int),
            ("name", Kind::Text),
        ],
    )?;
    let people = ctx.read(
        "people",
        &[
            ("scope", Kind::Text),
            ("scope_id", Kind::Int),
            ("user_id", Kind::Int),
            ("joined", Kind::Day),
            ("last_seen", Kind::Day),
            ("pending", Kind::Int),
            ("mfa_configured", Kind::Int),
            ("suspended", Kind::Int),
        ],
    )?;
    let departed = ctx.read(
        "departed",
        &[
            ("scope", Kind::Text),
            ("scope_id", Kind::Int),
            ("user_id", Kind::Int),
            ("removed_at", Kind::Day),
        ],
    )?;
    let projects = ctx.read(
        "projects",
        &[
            ("project_id", Kind::Int),
            ("organization_id", Kind::Int),
            ("whitelabel_id", Kind::Int),
            ("created", Kind::Day),
            ("deleted_date", Kind::Day),
            ("last_accessed", Kind::Day),
            ("removed_at", Kind::Day),
        ],
    )?;
    let storage = ctx.read(
        "storage",
        &[
            ("user_id", Kind::Int),
            ("day", Kind::Day),
            ("storage_delta", Kind::Real),
        ],
    )?;

    // Each project counts in its organization and in its white label.
    let scoped_projects = concat(
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
    .map_err(err("projects per scope"))?
    .filter(col("scope_id").is_not_null());
    let members = people
        .clone()
        .lazy()
        .filter(col("scope_id").is_not_null())
        .select([col("scope"), col("scope_id"), col("user_id")])
        .unique(None, UniqueKeepStrategy::First);

    let stale_before = today - ctx.thresholds.stale_days;
    let live = col("removed_at").is_null().and(
        col("deleted_date")
            .is_null()
            .or(col("deleted_date").gt(lit(today))),
    );
    let count = |e: Expr, name: &str| e.sum().cast(DataType::Int64).alias(name.to_string());
    let keys = [col("scope"), col("scope_id")];
    let on = [col("scope"), col("id")];
    let on_agg = [col("scope"), col("scope_id")];

    let mut windows = Vec::new();
    for w in WINDOWS {
        let within = |c: &str| col(c).gt(lit(today - w)).and(col(c).lt_eq(lit(today)));
        let people_agg = people.clone().lazy().group_by(keys.clone()).agg([
            count(within("joined"), "users_added"),
            count(within("last_seen"), "active_users"),
            count(col("pending").eq(lit(1)), "pending_users"),
            count(col("mfa_configured").eq(lit(0)), "users_without_mfa"),
            count(col("suspended").eq(lit(1)), "suspended_users"),
        ]);
        let departed_agg = departed
            .clone()
            .lazy()
            .filter(within("removed_at"))
            .group_by(keys.clone())
            .agg([col("user_id")
                .n_unique()
                .cast(DataType::Int64)
                .alias("users_deleted")]);
        let projects_agg = scoped_projects.clone().group_by(keys.clone()).agg([
            count(within("created"), "projects_added"),
            count(
                within("deleted_date").or(col("deleted_date").is_null().and(within("removed_at"))),
                "projects_deleted",
            ),
            count(
                live.clone().and(col("last_accessed").lt(lit(stale_before))),
                "stale_projects",
            ),
        ]);
        let storage_agg = members
            .clone()
            .join(
                storage.clone().lazy().filter(within("day")),
                [col("user_id")],
                [col("user_id")],
                JoinArgs::new(JoinType::Inner),
            )
            .group_by(keys.clone())
            .agg([col("storage_delta").sum().alias("storage_growth_bytes")]);
        let mut lf = scopes
            .clone()
            .lazy()
            .with_column(lit(w).alias("window_days"));
        for agg in [people_agg, departed_agg, projects_agg, storage_agg] {
            lf = lf.join(
                agg,
                on.clone(),
                on_agg.clone(),
                JoinArgs::new(JoinType::Left),
            );
        }
        windows.push(lf);
    }
    let fill: Vec<Expr> = COUNTS
        .iter()
        .map(|c| col(*c).fill_null(lit(0i64)))
        .collect();
    let df = concat(windows, UnionArgs::default())
        .map_err(err("stacking windows"))?
        .with_columns(fill)
        .sort(
            ["scope", "id", "window_days"],
            SortMultipleOptions::default(),
        )
        .collect()
        .map_err(err("counting per scope"))?;
    project(report, &df, COLUMNS)
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use rusqlite::types::Value;

    fn member(
        user: i64,
        added: &str,
        seen: &str,
        pending: i64,
        mfa: i64,
    ) -> Vec<(&'static str, Value)> {
        vec![
            ("organization_id", i(1)),
            ("user_id", i(user)),
            ("added", t(added)),
            ("last_seen", t(seen)),
            ("pending", i(pending)),
            ("mfa_configured", i(mfa)),
        ]
    }

    fn user(
        id: i64,
        created: &str,
        seen: &str,
        pending: i64,
        mfa: i64,
        suspended: i64,
    ) -> Vec<(&'static str, Value)> {
        vec![
            ("id", i(id)),
            ("created", t(created)),
            ("last_seen", t(seen)),
            ("pending", i(pending)),
            ("mfa_configured", i(mfa)),
            ("suspended", i(suspended)),
            ("whitelabel_organization_id", i(1)),
        ]
    }

    fn project(
        id: i64,
        created: &str,
        accessed: &str,
        deleted: Option<&str>,
    ) -> Vec<(&'static str, Value)> {
        vec![
            ("id", i(id)),
            ("owner_organization_id", i(1)),
            ("whitelabel_id", i(9)),
            ("created", t(created)),
            ("last_accessed", t(accessed)),
            ("deleted_date", deleted.map_or(Value::Null, t)),
        ]
    }

    #[test]
    fn counts_per_scope_and_window() {
        let mut m = TestMirror::new();
        let members = [
            member(
                1,
                "2025-03-28T10:00:00.000Z",
                "2025-03-30T10:00:00.000Z",
                0,
                1,
            ),
            member(
                2,
                "2025-03-10T10:00:00.000Z",
                "2025-03-20T10:00:00.000Z",
                1,
                0,
            ),
            member(
                3,
                "2024-12-01T10:00:00.000Z",
                "2024-12-31T10:00:00.000Z",
                0,
                0,
            ),
            member(
                4,
                "2024-01-01T10:00:00.000Z",
                "2025-03-01T10:00:00.000Z",
                0,
                1,
            ),
        ];
        let users = [
            user(
                1,
                "2025-03-29T08:00:00.000Z",
                "2025-03-30T10:00:00.000Z",
                0,
                1,
                0,
            ),
            user(
                2,
                "2025-02-01T08:00:00.000Z",
                "2025-03-20T10:00:00.000Z",
                1,
                0,
                1,
            ),
            user(
                3,
                "2025-03-05T08:00:00.000Z",
                "2024-12-31T10:00:00.000Z",
                0,
                0,
                0,
            ),
            user(
                4,
                "2024-01-01T08:00:00.000Z",
                "2025-03-01T10:00:00.000Z",
                0,
                1,
                0,
            ),
        ];
        let projects = [
            project(
                1,
                "2025-03-29T00:00:00.000Z",
                "2025-03-30T00:00:00.000Z",
                None,
            ),
            project(
                2,
                "2025-03-15T00:00:00.000Z",
                "2024-01-01T00:00:00.000Z",
                Some("2025-03-30T00:00:00.000Z"),
            ),
            project(
                3,
                "2024-06-01T00:00:00.000Z",
                "2024-12-01T00:00:00.000Z",
                None,
            ),
            project(
                4,
                "2024-06-01T00:00:00.000Z",
                "2024-12-31T00:00:00.000Z",
                None,
            ),
            project(
                5,
                "2024-06-01T00:00:00.000Z",
                "2025-03-01T00:00:00.000Z",
                None,
            ),
        ];
        let write = |w: &Run<'_>, keep_members: usize, keep_users: usize, keep_projects: usize| {
            w.put(
                &ORGANIZATIONS,
                &[
                    ("id", i(1)),
                    ("name", t("One")),
                    ("whitelabel_id", i(9)),
                    ("whitelabel_name", t("Nine")),
                ],
            );
            let rows: Vec<&[(&str, Value)]> = members[..keep_members]
                .iter()
                .map(|v| v.as_slice())
                .collect();
            w.scope(&ORGANIZATION_MEMBERS, &[i(1)], &rows);
            for u in &users[..keep_users] {
                w.put(&USERS, u);
            }
            let kept: Vec<Vec<Value>> = (1..=keep_users as i64).map(|id| vec![i(id)]).collect();
            let kept: Vec<&[Value]> = kept.iter().map(|v| v.as_slice()).collect();
            w.remove_unseen(&USERS, &kept);
            for p in &projects[..keep_projects] {
                w.put(&PROJECTS, p);
            }
            let kept: Vec<Vec<Value>> = (1..=keep_projects as i64).map(|id| vec![i(id)]).collect();
            let kept: Vec<&[Value]> = kept.iter().map(|v| v.as_slice()).collect();
            w.remove_unseen(&PROJECTS, &kept);
        };
        // Run 1 knows user 4 and project 5; run 2 (2025-03-27) no longer sees them.
        m.run("2025-03-20T06:00:00.000Z", |w| write(w, 4, 4, 5));
        m.run("2025-03-27T06:00:00.000Z", |w| {
            write(w, 3, 3, 4);
            let storage = |user: i64, day: &str, added: i64, deleted: i64| {
                vec![
                    ("user_id", i(user)),
                    ("day", t(day)),
                    ("storage_bytes_added", i(added)),
                    ("storage_bytes_deleted", i(deleted)),
                ]
            };
            let u1 = [
                storage(1, "2025-03-30", 1000, 100),
                storage(1, "2025-03-20", 500, 0),
                storage(1, "2025-02-20", 7000, 0),
            ];
            let u1: Vec<&[(&str, Value)]> = u1.iter().map(|v| v.as_slice()).collect();
            w.scope(&DAILY_METRICS, &[i(1)], &u1);
            w.scope(
                &DAILY_METRICS,
                &[i(2)],
                &[&storage(2, "2025-03-31", 0, 300)],
            );
        });
        let out = m.report("2025-03-31", &["usage_summary"]);
        let df = &out.frames["usage_summary"];
        assert_eq!(
            df.height(),
            4,
            "organization 1 and white label 9, two windows each"
        );
        let expect = |scope: &str, id: &str, window: &str, values: [(&str, f64); 10]| {
            let r = find(df, &[("scope", scope), ("id", id), ("window_days", window)]);
            for (column, want) in values {
                assert_num(df, r, column, Some(want));
            }
            r
        };
        // Last 7 days = 2025-03-25 ..= 2025-03-31; 30 days = 2025-03-02 ..= 2025-03-31.
        let r = expect(
            "organization",
            "1",
            "7",
            [
                ("users_added", 1.0),            // user 1 (added 03-28)
                ("users_deleted", 1.0),          // user 4, removed 03-27
                ("projects_added", 1.0),         // project 1 (03-29)
                ("projects_deleted", 2.0), // project 2 (deleted 03-30), project 5 (removed 03-27)
                ("storage_growth_bytes", 600.0), // user 1: 1000 − 100; user 2: −300
                ("active_users", 1.0),     // user 1 (seen 03-30)
                ("stale_projects", 1.0), // project 3 (12-01 < 2024-12-31 = T − 90); project 4 is exactly 90 days
                ("pending_users", 1.0),  // user 2
                ("users_without_mfa", 2.0), // users 2 and 3
                ("suspended_users", 1.0), // user 2
            ],
        );
        assert_eq!(txt(df, r, "name").as_deref(), Some("One"));
        expect(
            "organization",
            "1",
            "30",
            [
                ("users_added", 2.0), // users 1 and 2 (03-10)
                ("users_deleted", 1.0),
                ("projects_added", 2.0), // projects 1 and 2 (03-15)
                ("projects_deleted", 2.0),
                ("storage_growth_bytes", 1100.0), // 900 + 500 − 300 (02-20 is outside)
                ("active_users", 2.0),            // users 1 and 2 (seen 03-20)
                ("stale_projects", 1.0),
                ("pending_users", 1.0),
                ("users_without_mfa", 2.0),
                ("suspended_users", 1.0),
            ],
        );
        let r = expect(
            "whitelabel",
            "9",
            "7",
            [
                ("users_added", 1.0), // user 1 created 03-29
                ("users_deleted", 1.0),
                ("projects_added", 1.0),
                ("projects_deleted", 2.0),
                ("storage_growth_bytes", 600.0),
                ("active_users", 1.0),
                ("stale_projects", 1.0),
                ("pending_users", 1.0),
                ("users_without_mfa", 2.0),
                ("suspended_users", 1.0),
            ],
        );
        assert_eq!(txt(df, r, "name").as_deref(), Some("Nine"));
        expect(
            "whitelabel",
            "9",
            "30",
            [
                ("users_added", 2.0), // users 1 and 3 (created 03-05); user 2 was created in February
                ("users_deleted", 1.0),
                ("projects_added", 2.0),
                ("projects_deleted", 2.0),
                ("storage_growth_bytes", 1100.0),
                ("active_users", 2.0),
                ("stale_projects", 1.0),
                ("pending_users", 1.0),
                ("users_without_mfa", 2.0),
                ("suspended_users", 1.0),
            ],
        );
    }
}
