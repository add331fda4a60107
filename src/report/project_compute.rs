//! `project_compute`: one row per project with project information, soft-deleted
//! ones included: its compute budget period, time used and left, the share of the
//! budget used, a flag at the threshold (80 % by default) and its deletion date.

use crate::report::Ctx;
use crate::report::cols::{null_of, project, round_columns};
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
use polars::prelude::*;

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
    "pct_used",
    "flagged",
    "last_accessed",
    "deleted_date",
];

pub fn build(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let df = ctx.read(
        "main",
        &[
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
        ],
    )?;
    let used = col("time_used_ms").cast(DataType::Float64);
    let budget = used.clone() + col("time_left_ms").cast(DataType::Float64);
    let mut df = df
        .lazy()
        .with_column(
            when(budget.clone().gt(lit(0.0)))
                .then(lit(100.0) * used / budget)
                .otherwise(null_of(DataType::Float64))
                .alias("pct_used"),
        )
        .with_column(
            col("pct_used")
                .gt_eq(lit(ctx.thresholds.flag_pct))
                .alias("flagged"),
        )
        .collect()
        .map_err(pl(report, "deriving pct_used"))?;
    round_columns(report, &mut df, &[("pct_used", 2)])?;
    project(report, &df, COLUMNS)
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;

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
        assert_eq!(df.height(), 4);
        let row = |id: &str| find(df, &[("project_id", id)]);
        // 8000 / (8000 + 2000) = 80 % → flagged (the threshold is inclusive).
        assert_num(df, row("1"), "pct_used", Some(80.0));
        assert_eq!(text_of(df, row("1"), "flagged"), "true");
        // 7999 / 10000 = 79.99 % → not flagged.
        assert_num(df, row("2"), "pct_used", Some(79.99));
        assert_eq!(text_of(df, row("2"), "flagged"), "false");
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
}
