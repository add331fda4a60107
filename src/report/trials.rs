//! `trials`: one row per trial with its status at the as-of date, the days left
//! before it expires, and the date its organization is due for deletion once expired.

use crate::report::Ctx;
use crate::report::batches::Emit;
use crate::report::cols::{add_day_numbers, add_day_texts, null_of};
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
use polars::prelude::*;

/// Days between a trial's expiry and its organization's deletion (the platform's grace period).
pub const GRACE_DAYS: i64 = 30;

/// The report's name.
pub const NAME: ReportName = ReportName::new("trials");

/// The report: read back by the attention list, the pages and the alerts.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "white label users' trials: days left and status",
    include_str!("../../queries/trials.sql"),
    COLUMNS,
    build,
)
.kept()
.cost(3);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "trial_id",
    "user_id",
    "user_name",
    "user_email",
    "organization_id",
    "organization_name",
    "created",
    "expiration_date",
    "expired_date",
    "upgraded_date",
    "deleted_date",
    "status",
    "days_left",
    "deletion_due",
    "notes",
];

fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let report = ctx.report();
    let mut df = ctx.read(
        "main",
        &[
            ("trial_id", Kind::Int),
            ("user_id", Kind::Int),
            ("user_name", Kind::Text),
            ("user_email", Kind::Text),
            ("organization_id", Kind::Int),
            ("organization_name", Kind::Text),
            ("created", Kind::Text),
            ("expiration_date", Kind::Text),
            ("expired_date", Kind::Text),
            ("upgraded_date", Kind::Text),
            ("deleted_date", Kind::Text),
            ("notes", Kind::Text),
        ],
    )?;
    for (text, day) in [
        ("expiration_date", "d_expiration"),
        ("expired_date", "d_expired"),
        ("upgraded_date", "d_upgraded"),
        ("deleted_date", "d_deleted"),
    ] {
        add_day_numbers(report, &mut df, text, day)?;
    }
    let t = lit(ctx.today);
    let on_or_before = |c: &str| col(c).lt_eq(t.clone());
    let status = col("status");
    let open = status
        .clone()
        .eq(lit("active"))
        .or(status.clone().eq(lit("expiring")));
    let mut df = df
        .lazy()
        .with_column(
            when(on_or_before("d_upgraded"))
                .then(lit("upgraded"))
                .when(on_or_before("d_deleted"))
                .then(lit("deleted"))
                .when(on_or_before("d_expired").or(on_or_before("d_expiration")))
                .then(lit("expired"))
                .when((col("d_expiration") - t.clone()).lt_eq(lit(ctx.thresholds.expiring_days)))
                .then(lit("expiring"))
                .otherwise(lit("active"))
                .alias("status"),
        )
        .with_columns([
            when(open)
                .then(col("d_expiration") - t)
                .otherwise(null_of(DataType::Int64))
                .alias("days_left"),
            when(status.eq(lit("expired")))
                .then(col("d_expired").fill_null(col("d_expiration")) + lit(GRACE_DAYS))
                .otherwise(null_of(DataType::Int64))
                .alias("d_deletion_due"),
        ])
        .collect()
        .map_err(pl(report, "deriving trial status"))?;
    add_day_texts(report, &mut df, "d_deletion_due", "deletion_due")?;
    emit(df)
}

crate::report::tables::report_table! {
    /// `trials`: one row per trial.
    Trials = NAME {
        trial_id: int,
        user_id: int,
        user_name: text,
        user_email: text,
        organization_id: int,
        organization_name: text,
        status: text,
        expiration_date: text,
        expired_date: text,
        deletion_due: text,
        days_left: int,
    }
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use polars::prelude::DataFrame;
    use rusqlite::types::Value;

    /// A trial of user 1 in organization `org`, created 2025-02-01, with its
    /// expiration date and (where set) its expired, upgraded and deleted dates.
    fn trial(
        id: i64,
        org: i64,
        expiration: &str,
        [expired, upgraded, deleted]: [Option<&str>; 3],
    ) -> Vec<(&'static str, Value)> {
        let at = |d: Option<&str>| d.map_or(Value::Null, t);
        vec![
            ("id", i(id)),
            ("user_id", i(1)),
            ("organization_id", i(org)),
            ("created", t("2025-02-01T00:00:00.000Z")),
            ("expiration_date", t(expiration)),
            ("expired_date", at(expired)),
            ("upgraded_date", at(upgraded)),
            ("deleted_date", at(deleted)),
        ]
    }

    /// The trials report on 2025-03-31 over Ada's eight trials: organization 10 is in
    /// the mirror, organization 11 only in her organization summaries.
    fn trials_report() -> DataFrame {
        let mut m = TestMirror::new();
        m.run("2025-03-31T06:00:00.000Z", |w| {
            w.put(
                &USERS,
                &[
                    ("id", i(1)),
                    ("name", t("Ada Lovelace")),
                    ("email", t("ada@example.com")),
                ],
            );
            w.put(&ORGANIZATIONS, &[("id", i(10)), ("name", t("Org Ten"))]);
            w.scope(
                &USER_ORGANIZATIONS,
                &[i(1)],
                &[&[
                    ("user_id", i(1)),
                    ("organization_id", i(11)),
                    ("name", t("Org Eleven")),
                ]],
            );
            let open = [None, None, None];
            let rows = [
                trial(1, 10, "2025-05-15T00:00:00.000Z", open),
                trial(2, 10, "2025-04-10T12:00:00.000Z", open),
                trial(3, 10, "2025-04-14T00:00:00.000Z", open),
                trial(
                    4,
                    11,
                    "2025-03-19T00:00:00.000Z",
                    [Some("2025-03-20T03:00:00.000Z"), None, None],
                ),
                trial(5, 10, "2025-03-31T08:00:00.000Z", open),
                trial(
                    6,
                    10,
                    "2025-03-01T00:00:00.000Z",
                    [None, Some("2025-03-05T00:00:00.000Z"), None],
                ),
                trial(
                    7,
                    10,
                    "2025-02-20T00:00:00.000Z",
                    [
                        Some("2025-02-20T00:00:00.000Z"),
                        None,
                        Some("2025-03-25T00:00:00.000Z"),
                    ],
                ),
                trial(
                    8,
                    10,
                    "2025-05-01T00:00:00.000Z",
                    [None, Some("2025-04-05T00:00:00.000Z"), None],
                ),
            ];
            w.scope_rows(&TRIALS, &[i(1)], &rows);
        });
        let mut out = m.report("2025-03-31", &["trials"]);
        out.frames.remove("trials").expect("the trials frame")
    }

    /// Checks one trial's status, days left and deletion due date.
    fn check(df: &DataFrame, id: &str, status: &str, days_left: Option<f64>, due: Option<&str>) {
        let r = find(df, &[("trial_id", id)]);
        assert_eq!(txt(df, r, "status").as_deref(), Some(status), "trial {id}");
        assert_num(df, r, "days_left", days_left);
        assert_eq!(txt(df, r, "deletion_due").as_deref(), due, "trial {id}");
    }

    #[test]
    fn every_trial_of_the_mirror_is_listed() {
        assert_eq!(trials_report().height(), 8);
    }

    #[test]
    fn an_open_trial_is_active_or_expiring_with_its_days_left() {
        let df = trials_report();
        // 2025-03-31 → 2025-05-15: 30 (April) + 15 = 45 days: active.
        check(&df, "1", "active", Some(45.0), None);
        // → 2025-04-10: 10 days: expiring.
        check(&df, "2", "expiring", Some(10.0), None);
        // → 2025-04-14: 14 days, the last expiring day.
        check(&df, "3", "expiring", Some(14.0), None);
        // An upgrade after T does not count yet: active, 2025-05-01 is 31 days away.
        check(&df, "8", "active", Some(31.0), None);
    }

    #[test]
    fn an_expired_trial_is_due_for_deletion_thirty_days_after_expiry() {
        let df = trials_report();
        // Expired 2025-03-20: due for deletion 30 days later, 2025-04-19.
        check(&df, "4", "expired", None, Some("2025-04-19"));
        // Expires on T itself (no expired date yet): expired; due 2025-03-31 + 30 = 2025-04-30.
        check(&df, "5", "expired", None, Some("2025-04-30"));
    }

    #[test]
    fn upgraded_and_deleted_win_over_expiry() {
        let df = trials_report();
        // Upgraded wins over an earlier expiry.
        check(&df, "6", "upgraded", None, None);
        // Deleted wins over expired.
        check(&df, "7", "deleted", None, None);
    }

    #[test]
    fn names_come_from_the_mirror_or_the_user_s_organization_summaries() {
        let df = trials_report();
        let r = find(&df, &[("trial_id", "4")]);
        assert_eq!(
            txt(&df, r, "organization_name").as_deref(),
            Some("Org Eleven")
        );
        assert_eq!(txt(&df, r, "user_name").as_deref(), Some("Ada Lovelace"));
        let r = find(&df, &[("trial_id", "1")]);
        assert_eq!(txt(&df, r, "organization_name").as_deref(), Some("Org Ten"));
    }
}
