//! Hand-computed expectations for compute_trends.

use super::series::{Calendar, UserDays, WhitelabelDays, known};
use crate::calendar::parse_day;
use crate::mirror::spec::*;
use crate::report::testkit::*;
use polars::prelude::*;
use rusqlite::types::Value;

/// The row of one entity's period.
fn period_row(df: &DataFrame, kind: &str, id: &str, period: &str, start: &str) -> usize {
    find(
        df,
        &[
            ("entity_type", kind),
            ("entity_id", id),
            ("period", period),
            ("period_start", start),
        ],
    )
}

/// Asserts several numeric cells of one row.
#[track_caller]
fn assert_nums(df: &DataFrame, row: usize, wants: &[(&str, Option<f64>)]) {
    for (column, want) in wants {
        assert_num(df, row, column, *want);
    }
}

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
    let row =
        |kind: &str, id: &str, period: &str, start: &str| period_row(df, kind, id, period, start);

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
    // The week of T has run one day: against the Monday before (the 24th, 27),
    // (31 − 27) / 27 = 14.814… %.
    assert_num(df, r, "change_pct", Some(14.81));
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

/// A daily-metrics record as `(column, value)` pairs.
type Record = Vec<(&'static str, Value)>;

/// One daily-metrics record: `seconds` of CPU time on `day`, no GPU time.
fn cpu_day(user: i64, day: &str, seconds: i64) -> Record {
    vec![
        ("user_id", i(user)),
        ("day", t(day)),
        ("cpu_compute_time_seconds", i(seconds)),
        ("gpu_compute_time_seconds", i(0)),
        ("compute_time_seconds", i(seconds)),
    ]
}

/// Writes white labels 1 (organization 100) and 2 (organization 200), and each
/// `(user, white label organization, records)`, in one run.
fn write_users(m: &mut TestMirror, observed_at: &str, users: &[(i64, i64, Vec<Record>)]) {
    m.run(observed_at, |w| {
        for (wl, org) in [(1, 100), (2, 200)] {
            w.put(
                &ORGANIZATIONS,
                &[
                    ("id", i(org)),
                    ("name", t(&format!("WL admin {wl}"))),
                    ("whitelabel_id", i(wl)),
                    ("whitelabel_name", t(&format!("WL {wl}"))),
                ],
            );
        }
        for (user, org, days) in users {
            w.put(
                &USERS,
                &[
                    ("id", i(*user)),
                    ("name", t(&format!("User {user}"))),
                    ("whitelabel_organization_id", i(*org)),
                ],
            );
            let days: Vec<&[(&str, Value)]> = days.iter().map(|v| v.as_slice()).collect();
            w.scope(&DAILY_METRICS, &[i(*user)], &days);
        }
    });
}

/// Records of `user` on the given days of `month` (`YYYY-MM`), `seconds(day)` each.
fn days_of(
    user: i64,
    month: &str,
    days: std::ops::RangeInclusive<i64>,
    seconds: impl Fn(i64) -> i64,
) -> Vec<Record> {
    days.map(|d| cpu_day(user, &format!("{month}-{d:02}"), seconds(d)))
        .collect()
}

#[test]
fn a_user_whose_metrics_stop_ten_days_before_t_counts_zeros_up_to_t() {
    // T = 2025-04-16, a Wednesday (its ISO week starts on Monday the 14th).
    // User 7 (white label 1): 10 s every day from 2025-03-01 to 2025-04-06 (T − 10).
    // User 8 (white label 1): d s on April d, from the 1st to T.
    // User 9 (white label 2, alone): 2 s a day from 2025-04-01 to 2025-04-06.
    let mut m = TestMirror::new();
    let mut seven = days_of(7, "2025-03", 1..=31, |_| 10);
    seven.extend(days_of(7, "2025-04", 1..=6, |_| 10));
    write_users(
        &mut m,
        "2025-04-16T06:00:00.000Z",
        &[
            (7, 100, seven),
            (8, 100, days_of(8, "2025-04", 1..=16, |d| d)),
            (9, 200, days_of(9, "2025-04", 1..=6, |_| 2)),
        ],
    );
    let out = m.report("2025-04-16", &["compute_trends"]);
    let df = &out.frames["compute_trends"];
    let row =
        |kind: &str, id: &str, period: &str, start: &str| period_row(df, kind, id, period, start);
    let complete = |r: usize| text_of(df, r, "period_complete");

    // User 7 has a row for each of the last 30 days (2025-03-18 ..= T), the last ten 0.
    let days_of_7: Vec<usize> = (0..df.height())
        .filter(|&r| {
            text_of(df, r, "entity_id") == "7"
                && text_of(df, r, "entity_type") == "user"
                && text_of(df, r, "period") == "day"
        })
        .collect();
    assert_eq!(days_of_7.len(), 30);
    for d in 7..=16 {
        let r = row("user", "7", "day", &format!("2025-04-{d:02}"));
        assert_num(df, r, "compute_seconds", Some(0.0));
        assert_num(df, r, "cpu_seconds", Some(0.0));
    }
    // At T: nothing in the 7 days to T; 2025-03-18 ..= 2025-04-06 in the 30 days
    // (20 days of 10 s); 2025-03-01 ..= 2025-03-17 in the 30 days before those (17
    // days of 10 s); no change after a zero day.
    assert_nums(
        df,
        row("user", "7", "day", "2025-04-16"),
        &[
            ("rolling_7d", Some(0.0)),
            ("rolling_30d", Some(200.0)),
            ("rolling_30d_prev", Some(170.0)),
            ("change_pct", None),
        ],
    );
    // The last 0 follows the record of T − 10: (0 − 10) / 10 = −100 %.
    assert_num(
        df,
        row("user", "7", "day", "2025-04-07"),
        "change_pct",
        Some(-100.0),
    );
    // Week of 2025-04-07, all zeros, against 2025-03-31 ..= 2025-04-06 (70 s): −100 %.
    let r = row("user", "7", "week", "2025-04-07");
    assert_num(df, r, "compute_seconds", Some(0.0));
    assert_num(df, r, "change_pct", Some(-100.0));
    assert_eq!(complete(r), "true");
    // The week of T: 0 against the first 3 days of the week before (0): no change.
    let r = row("user", "7", "week", "2025-04-14");
    assert_num(df, r, "compute_seconds", Some(0.0));
    assert_num(df, r, "change_pct", None);
    assert_eq!(complete(r), "false");
    // April so far: 6 days of 10 s = 60, against 2025-03-01 ..= 2025-03-16 (160):
    // (60 − 160) / 160 = −62.5 %.
    let r = row("user", "7", "month", "2025-04-01");
    assert_num(df, r, "compute_seconds", Some(60.0));
    assert_num(df, r, "change_pct", Some(-62.5));
    assert_eq!(complete(r), "false");
    let r = row("user", "7", "month", "2025-03-01");
    assert_num(df, r, "compute_seconds", Some(310.0));
    assert_eq!(complete(r), "true");

    // User 8, the week of T: 14 + 15 + 16 = 45 against 2025-04-07 ..= 2025-04-09
    // (7 + 8 + 9 = 24), not the whole week before (70): (45 − 24) / 24 = 87.5 %.
    let r = row("user", "8", "week", "2025-04-14");
    assert_num(df, r, "compute_seconds", Some(45.0));
    assert_num(df, r, "change_pct", Some(87.5));
    // The finished week before compares whole weeks: 70 against 2025-03-31 ..=
    // 2025-04-06 (1 + … + 6 = 21): (70 − 21) / 21 = 233.33 %.
    assert_num(
        df,
        row("user", "8", "week", "2025-04-07"),
        "change_pct",
        Some(233.33),
    );
    // April so far: 1 + … + 16 = 136; nothing in March 1 ..= 16: no change.
    let r = row("user", "8", "month", "2025-04-01");
    assert_num(df, r, "compute_seconds", Some(136.0));
    assert_num(df, r, "change_pct", None);

    // White label 1 at T: user 7's 0 + user 8's 16; 7 days: 10 + … + 16 = 91;
    // 30 days: user 7's 200 + user 8's 136 = 336.
    assert_nums(
        df,
        row("whitelabel", "1", "day", "2025-04-16"),
        &[
            ("compute_seconds", Some(16.0)),
            ("rolling_7d", Some(91.0)),
            ("rolling_30d", Some(336.0)),
        ],
    );
    // White label 2's only user stopped at T − 10: its series still reaches T.
    let r = row("whitelabel", "2", "day", "2025-04-16");
    assert_nums(
        df,
        r,
        &[
            ("compute_seconds", Some(0.0)),
            ("rolling_7d", Some(0.0)),
            ("rolling_30d", Some(12.0)),
        ],
    );
    assert_eq!(complete(r), "false");
    assert_eq!(
        complete(row("whitelabel", "2", "day", "2025-04-15")),
        "true"
    );

    // Only the rows of the day, week and month that contain T are unfinished.
    for r in 0..df.height() {
        let start = text_of(df, r, "period_start");
        let current = match text_of(df, r, "period").as_str() {
            "day" => "2025-04-16",
            "week" => "2025-04-14",
            _ => "2025-04-01",
        };
        assert_eq!(complete(r), (start != current).to_string(), "row {r}");
    }
}

#[test]
fn the_month_of_t_compares_the_same_days_of_the_month_before_capped_at_its_length() {
    // T = 2025-03-30, a Sunday: March has run 30 days, February has 28.
    // User 7: 1 s a day in February, 2 s a day in March up to T.
    let mut m = TestMirror::new();
    let mut days = days_of(7, "2025-02", 1..=28, |_| 1);
    days.extend(days_of(7, "2025-03", 1..=30, |_| 2));
    write_users(&mut m, "2025-03-30T06:00:00.000Z", &[(7, 100, days)]);
    let out = m.report("2025-03-30", &["compute_trends"]);
    let df = &out.frames["compute_trends"];
    let row = |period: &str, start: &str| period_row(df, "user", "7", period, start);
    // March so far: 60, against the whole of February (28 days, 28 s), not 30 days
    // reaching into March: (60 − 28) / 28 = 114.2857… %.
    let r = row("month", "2025-03-01");
    assert_num(df, r, "compute_seconds", Some(60.0));
    assert_num(df, r, "change_pct", Some(114.29));
    assert_eq!(text_of(df, r, "period_complete"), "false");
    let r = row("month", "2025-02-01");
    assert_eq!(text_of(df, r, "period_complete"), "true");
    assert_num(df, r, "change_pct", None);
    // The week of T has all 7 days but T's own may still grow: unfinished, and
    // compared with the whole week before (14 against 14).
    let r = row("week", "2025-03-24");
    assert_eq!(text_of(df, r, "period_complete"), "false");
    assert_num(df, r, "change_pct", Some(0.0));
    assert_eq!(
        text_of(df, row("week", "2025-03-17"), "period_complete"),
        "true"
    );
}

#[test]
fn zero_filled_series_run_from_the_last_record_to_t_only() {
    // Calendar 2025-03-01 ..= 2025-03-10 (T). User 7: records on the 2nd and 4th (two
    // on the 4th, added up); user 8: on the 9th, read before user 7's. Both are filled
    // with zeros to the 10th, from their first record on: 9 days for user 7, 2 for 8.
    let day = |s: &str| parse_day(s).expect("day");
    let calendar = Calendar {
        first: day("2025-03-01"),
        today: day("2025-03-10"),
    };
    let cpu = |s: f64| [Some(s), Some(0.0), Some(s)];
    let mut users = UserDays::new(calendar);
    users.add(8, day("2025-03-09"), cpu(4.0));
    users.add(7, day("2025-03-04"), cpu(1.5));
    users.add(7, day("2025-03-02"), cpu(1.0));
    users.add(7, day("2025-03-04"), [Some(0.5), None, Some(0.5)]);
    // Outside the calendar: ignored.
    users.add(7, day("2025-03-11"), cpu(100.0));
    let mut whitelabels = WhitelabelDays::new(calendar, vec![1]);
    let mut seen = Vec::new();
    users.drain(|user, first, days| {
        let compute: Vec<f64> = days.iter().map(|d| d[2].unwrap_or(f64::NAN)).collect();
        seen.push((user, first, compute));
        whitelabels.add(1, first, &known(days));
    });
    assert_eq!(
        seen,
        [
            (
                7,
                day("2025-03-02"),
                vec![1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            ),
            (8, day("2025-03-09"), vec![4.0, 0.0]),
        ]
    );

    // Their white label (both users) runs from the 2nd to T: 9 days, 4 s on the 9th.
    let mut sums = Vec::new();
    whitelabels.each(|label, first, days| {
        sums.push((label, first, days.iter().map(|d| d[2]).collect::<Vec<_>>()));
    });
    let some = |v: &[f64]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
    assert_eq!(
        sums,
        [(
            1,
            day("2025-03-02"),
            some(&[1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0])
        )]
    );
}
