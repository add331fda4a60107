//! Hand-computed expectations for compute_trends.

use crate::mirror::spec::*;
use crate::report::testkit::*;
use rusqlite::types::Value;

/// Day `d` of March 2025 for user 7: cpu = d, gpu = 1 on even days, so compute =
/// d + 3 on even days and d on odd days; 2025-03-25 has no record.
fn march_day(user: i64, d: i64) -> Vec<(&'static str, Value)> {
    let gpu = i64::from(d % 2 == 0);
    vec![
        ("user_id", i(user)),
        ("day", t(&format!("2025-03-{d:02}"))),
        ("cpu_compute_time_seconds", i(d)),
        ("gpu_compute_time_seconds", i(gpu)),
        ("compute_time_seconds", i(d + 3 * gpu)),
    ]
}

#[test]
fn rolling_sums_periods_and_changes() {
    let mut m = TestMirror::new();
    let first = |w: &Run<'_>, used_ms: i64| {
        w.put(
            &ORGANIZATIONS,
            &[
                ("id", i(100)),
                ("name", t("WL admin")),
                ("whitelabel_id", i(1)),
                ("whitelabel_name", t("WL One")),
            ],
        );
        w.put(
            &PROJECTS,
            &[("id", i(50)), ("owner_organization_id", i(100))],
        );
        w.put(
            &PROJECT_INFO,
            &[("project_id", i(50)), ("compute_time_used_ms", i(used_ms))],
        );
    };
    m.run("2025-03-29T06:00:00.000Z", |w| first(w, 10_000));
    m.run("2025-03-31T06:00:00.000Z", |w| {
        first(w, 25_000);
        w.put(
            &USERS,
            &[
                ("id", i(7)),
                ("name", t("Grace")),
                ("whitelabel_organization_id", i(100)),
            ],
        );
        w.put(
            &USERS,
            &[
                ("id", i(8)),
                ("name", t("Linus")),
                ("whitelabel_organization_id", i(100)),
            ],
        );
        let days: Vec<Vec<(&str, Value)>> = (20..=31)
            .filter(|d| *d != 25)
            .map(|d| march_day(7, d))
            .collect();
        let days: Vec<&[(&str, Value)]> = days.iter().map(|v| v.as_slice()).collect();
        w.scope(&DAILY_METRICS, &[i(7)], &days);
        w.scope(
            &DAILY_METRICS,
            &[i(8)],
            &[&[
                ("user_id", i(8)),
                ("day", t("2025-03-31")),
                ("cpu_compute_time_seconds", i(10)),
                ("gpu_compute_time_seconds", i(0)),
                ("compute_time_seconds", i(10)),
            ]],
        );
    });
    let out = m.report("2025-03-31", &["compute_trends"]);
    let df = &out.frames["compute_trends"];
    let row = |kind: &str, id: &str, period: &str, start: &str| {
        find(
            df,
            &[
                ("entity_type", kind),
                ("entity_id", id),
                ("period", period),
                ("period_start", start),
            ],
        )
    };

    // User 7, days: 20→23, 21→21, 22→25, 23→23, 24→27, 25→0 (no record), 26→29,
    // 27→27, 28→31, 29→29, 30→33, 31→31.
    let user_days = (0..df.height())
        .filter(|&r| text_of(df, r, "entity_id") == "7" && text_of(df, r, "period") == "day")
        .count();
    assert_eq!(user_days, 12, "2025-03-20 ..= 2025-03-31, the gap filled");
    let r = row("user", "7", "day", "2025-03-31");
    assert_eq!(txt(df, r, "entity_name").as_deref(), Some("Grace"));
    assert_num(df, r, "cpu_seconds", Some(31.0));
    assert_num(df, r, "gpu_seconds", Some(0.0));
    assert_num(df, r, "compute_seconds", Some(31.0));
    assert_num(df, r, "compute_growth_seconds", None);
    // 7 days 25..=31: 0 + 29 + 27 + 31 + 29 + 33 + 31 = 180.
    assert_num(df, r, "rolling_7d", Some(180.0));
    // Everything: 23+21+25+23+27+0+29+27+31+29+33+31 = 299.
    assert_num(df, r, "rolling_30d", Some(299.0));
    // (31 − 33) / 33 = −6.0606… % → −6.06.
    assert_num(df, r, "change_pct", Some(-6.06));
    // Nothing 30 days earlier.
    assert_num(df, r, "rolling_30d_prev", None);
    // 2025-03-24: the series started on the 20th: 23 + 21 + 25 + 23 + 27 = 119.
    assert_num(
        df,
        row("user", "7", "day", "2025-03-24"),
        "rolling_7d",
        Some(119.0),
    );
    // The gap day is a zero, and a change from zero is unknown.
    let r = row("user", "7", "day", "2025-03-25");
    assert_num(df, r, "compute_seconds", Some(0.0));
    assert_num(
        df,
        row("user", "7", "day", "2025-03-26"),
        "change_pct",
        None,
    );

    // ISO weeks start on Monday: 2025-03-17 (days 20..=23), 2025-03-24 (24..=30), 2025-03-31.
    let r = row("user", "7", "week", "2025-03-17");
    assert_num(df, r, "compute_seconds", Some(92.0)); // 23 + 21 + 25 + 23
    assert_num(df, r, "cpu_seconds", Some(86.0)); // 20 + 21 + 22 + 23
    assert_num(df, r, "gpu_seconds", Some(2.0)); // the 20th and 22nd
    assert_num(df, r, "change_pct", None);
    let r = row("user", "7", "week", "2025-03-24");
    assert_num(df, r, "compute_seconds", Some(176.0)); // 27 + 0 + 29 + 27 + 31 + 29 + 33
    assert_num(df, r, "cpu_seconds", Some(164.0)); // 24 + 0 + 26 + 27 + 28 + 29 + 30
    assert_num(df, r, "gpu_seconds", Some(4.0));
    // (176 − 92) / 92 = 91.304… %.
    assert_num(df, r, "change_pct", Some(91.3));
    // Rolling sums at the week's last day (the 30th): 176, and 299 − 31 = 268.
    assert_num(df, r, "rolling_7d", Some(176.0));
    assert_num(df, r, "rolling_30d", Some(268.0));
    let r = row("user", "7", "week", "2025-03-31");
    assert_num(df, r, "compute_seconds", Some(31.0));
    // (31 − 176) / 176 = −82.386… %.
    assert_num(df, r, "change_pct", Some(-82.39));
    let r = row("user", "7", "month", "2025-03-01");
    assert_num(df, r, "compute_seconds", Some(299.0));
    assert_num(
        df,
        r,
        "cpu_seconds",
        Some(20.0 + 21.0 + 22.0 + 23.0 + 24.0 + 26.0 + 27.0 + 28.0 + 29.0 + 30.0 + 31.0),
    );
    assert_num(df, r, "change_pct", None);

    // The white label sums users 7 and 8 (user 8: 10 s on the 31st only).
    let r = row("whitelabel", "1", "day", "2025-03-31");
    assert_eq!(txt(df, r, "entity_name").as_deref(), Some("WL One"));
    assert_num(df, r, "compute_seconds", Some(41.0));
    assert_num(df, r, "rolling_7d", Some(190.0));
    assert_num(
        df,
        row("whitelabel", "1", "month", "2025-03-01"),
        "compute_seconds",
        Some(309.0),
    );

    // Organization 100: project 50 used 10 s (run of the 29th), then 25 s (the 31st).
    // Growth: 29th unknown (first observation), 30th 0, 31st 15.
    assert_num(
        df,
        row("organization", "100", "day", "2025-03-29"),
        "compute_growth_seconds",
        None,
    );
    assert_num(
        df,
        row("organization", "100", "day", "2025-03-30"),
        "compute_growth_seconds",
        Some(0.0),
    );
    let r = row("organization", "100", "day", "2025-03-31");
    assert_eq!(txt(df, r, "entity_name").as_deref(), Some("WL admin"));
    assert_num(df, r, "compute_growth_seconds", Some(15.0));
    assert_num(df, r, "cpu_seconds", None);
    // Growth is not compute time spent: the organization's compute_seconds is empty.
    assert_num(df, r, "compute_seconds", None);
    assert_num(df, r, "rolling_7d", Some(15.0));
    assert_num(df, r, "change_pct", None);
    assert_num(
        df,
        row("organization", "100", "week", "2025-03-24"),
        "compute_growth_seconds",
        Some(0.0),
    );
    assert_num(
        df,
        row("organization", "100", "week", "2025-03-31"),
        "compute_growth_seconds",
        Some(15.0),
    );
    assert_num(
        df,
        row("organization", "100", "month", "2025-03-01"),
        "gpu_seconds",
        None,
    );
}
