//! `entitlements`: one row per (organization, metric) with usage against the
//! organization's entitlement limit, a status, the daily rate of change and the
//! projected date the limit will be reached.

use crate::calendar::{date_of, day_of, parse_day};
use crate::report::attention::entity;
use crate::report::batches::Emit;
use crate::report::cols::{add_day_texts, null_of, project, round_columns};
use crate::report::completeness::{Completeness, Source, Sources};
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl, query_err};
use crate::report::frame::Kind;
use crate::report::status::judge;
use crate::report::tables::{Table, TableError};
use crate::report::units::human_pair;
use crate::report::{Ctx, Thresholds};
use chrono::NaiveDate;
use polars::prelude::*;

/// The report's name.
pub const NAME: ReportName = ReportName::new("entitlements");

/// The report: read back by the attention list, the pages and the alerts.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "each organization's limits: used, limit, share and status, with projections",
    include_str!("../../queries/entitlements.sql"),
    COLUMNS,
    build,
)
.complete(row_sources, describe)
.kept()
.cost(2);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "organization_id",
    "organization_name",
    "metric",
    "unit",
    "used",
    "limit",
    "pct_used",
    "remaining",
    "status",
    "used_human",
    "limit_human",
    "source",
    "limit_source",
    "daily_rate",
    "projected_exhaustion",
];

/// How one metric is read from the extract.
struct Metric {
    name: &'static str,
    unit: &'static str,
    /// The limit column.
    limit: &'static str,
    /// The regular source column (None: no source); the extract names the table(s) it
    /// comes from in `source_<column>` and the limit's origin in `limit_source_<name>`.
    regular: Option<&'static str>,
    /// The developer-profile daily-metrics column (now; the `dm_prev_` twin is 30 days back).
    daily: &'static str,
}

const METRICS: &[Metric] = &[
    Metric {
        name: "storage_bytes",
        unit: "bytes",
        limit: "limit_storage_bytes",
        regular: Some("storage_bytes"),
        daily: "storage_bytes",
    },
    Metric {
        name: "compute_seconds",
        unit: "seconds",
        limit: "limit_compute_seconds",
        regular: Some("compute_seconds"),
        daily: "compute_seconds",
    },
    Metric {
        name: "gpu_compute_seconds",
        unit: "seconds",
        limit: "limit_gpu_compute_seconds",
        regular: None,
        daily: "gpu_compute_seconds",
    },
    Metric {
        name: "projects",
        unit: "count",
        limit: "limit_projects",
        regular: Some("projects"),
        daily: "projects",
    },
    Metric {
        name: "users",
        unit: "count",
        limit: "limit_users",
        regular: Some("users"),
        daily: "users",
    },
];

/// The metrics' names, in the report's order, each with whether an organization
/// that is not a developer profile has a figure for it.
pub(crate) fn metric_names() -> impl Iterator<Item = (&'static str, bool)> {
    METRICS.iter().map(|m| (m.name, m.regular.is_some()))
}

/// How many metrics each organization has.
pub(crate) const METRIC_COUNT: usize = METRICS.len();

/// Decimals `used` and `limit` are rounded to before the status is decided.
pub(crate) const FIGURE_DECIMALS: i32 = 3;

fn needs() -> Vec<(String, Kind)> {
    let mut out = vec![
        ("organization_id".to_string(), Kind::Int),
        ("organization_name".to_string(), Kind::Text),
        ("dm_day".to_string(), Kind::Day),
        ("dm_prev_day".to_string(), Kind::Day),
    ];
    for m in METRICS {
        out.push((m.limit.to_string(), Kind::Number));
        out.push((format!("limit_source_{}", m.name), Kind::Text));
        if let Some(col) = m.regular {
            out.push((col.to_string(), Kind::Real));
            out.push((format!("source_{col}"), Kind::Text));
        }
        out.push((format!("dm_{}", m.daily), Kind::Real));
        out.push((format!("dm_prev_{}", m.daily), Kind::Real));
    }
    out
}

fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    emit(table(ctx)?)
}

fn table(ctx: &Ctx<'_>) -> Result<DataFrame, ReportError> {
    let report = ctx.report();
    let needs = needs();
    let needs: Vec<(&str, Kind)> = needs.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    let now = ctx.read("organizations", &needs)?;
    let limit_dtype = limit_dtype(&now);
    let (lf, base_days) = with_baseline_usage(ctx, now, &needs)?;
    let parts: Vec<LazyFrame> = METRICS
        .iter()
        .enumerate()
        .map(|(order, m)| metric_rows(&lf, order, m, &limit_dtype, base_days))
        .collect();
    let mut df = with_rates(report, parts, ctx.today)?;
    add_day_texts(report, &mut df, "exhaustion_day", "projected_exhaustion")?;
    // Rounded first, so the status is decided on the numbers the files print.
    round_columns(
        report,
        &mut df,
        &[
            ("used", FIGURE_DECIMALS),
            ("limit", FIGURE_DECIMALS),
            ("remaining", 3),
            ("daily_rate", 3),
        ],
    )?;
    add_status(report, &mut df, ctx.thresholds)?;
    project(report, &df, COLUMNS)
}

/// Adds `base_<column>` for each regular source: its usage at the start of the rate
/// window, from the mirror as it stood then (30 days back, or the first sync when
/// history is shorter). Returns the frame and the window's length in days (None,
/// and null baselines, when the mirror has no history).
fn with_baseline_usage(
    ctx: &Ctx<'_>,
    now: DataFrame,
    needs: &[(&str, Kind)],
) -> Result<(LazyFrame, Option<i64>), ReportError> {
    let Some(date) = baseline_date(ctx)? else {
        return Ok(without_baseline(now));
    };
    let then = ctx.read_as_of(date, "organizations", needs)?;
    let mut keep = vec![col("organization_id")];
    for c in METRICS.iter().filter_map(|m| m.regular) {
        keep.push(col(c).alias(format!("base_{c}")));
    }
    let lf = now.lazy().join(
        then.lazy().select(keep),
        [col("organization_id")],
        [col("organization_id")],
        JoinArgs::new(JoinType::Left),
    );
    Ok((lf, Some(ctx.today - day_of(date))))
}

/// The frame with null baselines: no rate window.
fn without_baseline(now: DataFrame) -> (LazyFrame, Option<i64>) {
    let mut lf = now.lazy();
    for c in METRICS.iter().filter_map(|m| m.regular) {
        lf = lf.with_column(null_of(DataType::Float64).alias(format!("base_{c}")));
    }
    (lf, None)
}

/// Limits stay integers (exact above 2^53) unless one of them has a fraction.
fn limit_dtype(now: &DataFrame) -> DataType {
    let integer = |name: &str| {
        now.columns()
            .iter()
            .any(|c| c.name().as_str() == name && *c.dtype() == DataType::Int64)
    };
    if METRICS.iter().all(|m| integer(m.limit)) {
        DataType::Int64
    } else {
        DataType::Float64
    }
}

/// One row per organization for metric `m`: usage, limit, their sources and the
/// usage at the start of the rate window. A developer profile (one with daily
/// metrics) takes all of them from its daily metrics.
fn metric_rows(
    lf: &LazyFrame,
    order: usize,
    m: &Metric,
    limit_dtype: &DataType,
    base_days: Option<i64>,
) -> LazyFrame {
    let dev = col("dm_day").is_not_null();
    let (regular, regular_base, source) = match m.regular {
        Some(c) => (col(c), col(format!("base_{c}")), col(format!("source_{c}"))),
        None => (
            null_of(DataType::Float64),
            null_of(DataType::Float64),
            null_of(DataType::String),
        ),
    };
    let regular_days = base_days.map_or_else(|| null_of(DataType::Float64), |d| lit(d as f64));
    lf.clone().select([
        col("organization_id"),
        col("organization_name"),
        lit(order as i64).alias("metric_order"),
        lit(m.name).alias("metric"),
        lit(m.unit).alias("unit"),
        when(dev.clone())
            .then(col(format!("dm_{}", m.daily)))
            .otherwise(regular)
            .cast(DataType::Float64)
            .alias("used"),
        col(m.limit).cast(limit_dtype.clone()).alias("limit"),
        when(dev.clone())
            .then(lit("daily_metrics"))
            .otherwise(source)
            .alias("source"),
        col(format!("limit_source_{}", m.name)).alias("limit_source"),
        when(dev.clone())
            .then(col(format!("dm_prev_{}", m.daily)))
            .otherwise(regular_base)
            .cast(DataType::Float64)
            .alias("used_base"),
        when(dev)
            .then((col("dm_day") - col("dm_prev_day")).cast(DataType::Float64))
            .otherwise(regular_days)
            .alias("rate_days"),
    ])
}

/// Stacks the metrics' rows and derives what remains, the daily rate and the day
/// the limit would be reached at that rate.
fn with_rates(report: &str, parts: Vec<LazyFrame>, today: i64) -> Result<DataFrame, ReportError> {
    let used = col("used");
    let limit = col("limit");
    let rate = col("daily_rate");
    concat(parts, UnionArgs::default())
        .map_err(pl(report, "stacking the metrics"))?
        .with_columns([
            (limit - used.clone()).alias("remaining"),
            when(col("rate_days").gt(lit(0.0)))
                .then((used - col("used_base")) / col("rate_days"))
                .otherwise(null_of(DataType::Float64))
                .alias("daily_rate"),
        ])
        .with_column(
            when(rate.clone().gt(lit(0.0)).and(col("remaining").gt(lit(0.0))))
                .then(lit(today as f64) + col("remaining") / rate)
                .otherwise(null_of(DataType::Float64))
                .alias("exhaustion_day"),
        )
        .sort(
            ["organization_id", "metric_order"],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .collect()
        .map_err(pl(report, "deriving rates"))
}

/// Adds `pct_used` and `status` (see [`crate::report::status`]) and the
/// `used_human` / `limit_human` texts.
fn add_status(report: &str, df: &mut DataFrame, t: &Thresholds) -> Result<(), ReportError> {
    let table = Table::new(report, df);
    let (used, limit, unit) = (
        table.float("used")?,
        table.float("limit")?,
        table.text("unit")?,
    );
    let n = df.height();
    let (mut pct, mut status) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut used_text, mut limit_text) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for r in 0..n {
        let judged = judge(used[r], limit[r], t);
        pct.push(judged.pct);
        status.push(judged.status.as_str());
        let (u, l) = human_pair(used[r], limit[r], unit[r].unwrap_or(""));
        used_text.push(u);
        limit_text.push(l);
    }
    let columns = [
        Column::new("pct_used".into(), pct),
        Column::new("status".into(), status),
        Column::new("used_human".into(), used_text),
        Column::new("limit_human".into(), limit_text),
    ];
    for c in columns {
        df.with_column(c)
            .map_err(pl(report, "deriving the status"))?;
    }
    Ok(())
}

/// Start of the daily-rate window for the mirror-history sources: 30 days before
/// T, or the day of the first finished sync when the mirror is younger. None when
/// the mirror has no history before T.
fn baseline_date(ctx: &Ctx<'_>) -> Result<Option<NaiveDate>, ReportError> {
    let cutoff = crate::mirror::asof::cutoff(ctx.as_of);
    let first: Option<String> = ctx
        .conn
        .query_row(
            "SELECT MIN(observed_at) FROM sync_runs WHERE status IN ('succeeded','partial') AND observed_at < ?1",
            [&cutoff],
            |row| row.get(0),
        )
        .map_err(query_err(ctx.report(), "sync_runs", "first run"))?;
    let Some(first) = first.as_deref().and_then(parse_day) else {
        return Ok(None);
    };
    let start = (ctx.today - 30).max(first);
    Ok((start < ctx.today).then(|| date_of(start)).flatten())
}

crate::report::tables::report_table! {
    /// `entitlements`: one row per (organization, metric).
    Entitlements = NAME {
        organization_id: int,
        organization_name: text,
        metric: text,
        unit: text,
        used: float,
        limit: float,
        pct_used: float,
        remaining: float,
        status: text,
        used_human: text,
        limit_human: text,
        projected_exhaustion: text,
        complete: flag,
        missing: text,
        data_as_of: text,
    }
}

/// An incomplete row in the attention list: its organization and metric.
fn describe<'a>(df: &'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError> {
    let t = Entitlements::read(df)?;
    let (id, name, metric) = (t.organization_id, t.organization_name, t.metric);
    Ok(Box::new(move |r| {
        let org = entity("organization", id[r], name[r]);
        format!("{org} {}", metric[r].unwrap_or("?"))
    }))
}

/// The completeness of each row (`crate::report::completeness`): a limit's figure
/// depends on its organization's document; compute summed over project information
/// also on every project's.
pub(crate) fn row_sources<'a>(
    _: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    let table = Table::new(NAME.as_str(), df);
    let org = table.int("organization_id")?;
    let metric = table.text("metric")?;
    let source = table.text("source")?;
    Ok(Box::new((0..df.height()).map(move |r| {
        // A developer profile's figure comes from its daily metrics.
        let from_projects = metric[r] == Some("compute_seconds")
            && source[r].is_some_and(|s| s.contains("project_info"));
        Some(if from_projects {
            Source::OrganizationCompute(org[r])
        } else {
            Source::Document(org[r])
        })
    })))
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use polars::prelude::DataFrame;
    use rusqlite::types::Value;

    const RUN: &str = "2025-03-31T06:00:00.000Z";

    /// Writes organization `id` with these columns besides its id and name.
    fn organization(w: &Run<'_>, id: i64, name: &str, columns: &[(&str, Value)]) {
        let mut row = vec![("id", i(id)), ("name", t(name))];
        row.extend(columns.iter().cloned());
        w.put(&ORGANIZATIONS, &row);
    }

    /// Writes the member list of organization `org`.
    fn members(w: &Run<'_>, org: i64, users: &[i64]) {
        let rows: Vec<Vec<(&str, Value)>> = users
            .iter()
            .map(|&u| vec![("organization_id", i(org)), ("user_id", i(u))])
            .collect();
        w.scope_rows(&ORGANIZATION_MEMBERS, &[i(org)], &rows);
    }

    /// Writes the datasets of organization `org`: (name, total file size).
    fn datasets(w: &Run<'_>, org: i64, list: &[(&str, i64)]) {
        let rows: Vec<Vec<(&str, Value)>> = list
            .iter()
            .map(|&(name, size)| {
                vec![
                    ("organization_id", i(org)),
                    ("dataset", t(name)),
                    ("total_file_size", i(size)),
                ]
            })
            .collect();
        w.scope_rows(&DATASETS, &[i(org)], &rows);
    }

    /// One member's daily-metrics record of `day` with these totals: storage bytes,
    /// compute and GPU seconds, projects.
    fn metrics_day(
        user: i64,
        day: &str,
        [storage, compute, gpu, projects]: [i64; 4],
    ) -> Vec<(&'static str, Value)> {
        vec![
            ("user_id", i(user)),
            ("day", t(day)),
            ("total_storage_size_bytes", i(storage)),
            ("total_current_contract_compute_time_seconds", i(compute)),
            ("total_current_contract_gpu_compute_time_seconds", i(gpu)),
            ("total_projects", i(projects)),
            ("total_users", i(0)),
        ]
    }

    /// Alpha: storage 800/1000 (warning), compute 75.5/100 (ok), gpu no source
    /// (no_data), projects 2/10 (ok), users 5/4 (exceeded).
    fn put_alpha(w: &Run<'_>) {
        organization(
            w,
            1,
            "Alpha",
            &[
                ("is_developer_profile", i(0)),
                ("limit_total_storage", r(1000.0)),
                ("limit_compute_time_per_year", r(100.0)),
                ("limit_number_of_projects", r(10.0)),
                ("limit_number_of_users", r(4.0)),
            ],
        );
        datasets(w, 1, &[("a", 500), ("b", 300)]);
        for (id, deleted) in [
            (11, None),
            (12, None),
            (13, Some("2025-03-01T00:00:00.000Z")),
        ] {
            w.put(
                &PROJECTS,
                &[
                    ("id", i(id)),
                    ("owner_organization_id", i(1)),
                    ("deleted_date", deleted.map_or(Value::Null, t)),
                ],
            );
        }
        for (project, used_ms) in [(11, 30_000), (12, 45_500)] {
            w.put(
                &PROJECT_INFO,
                &[
                    ("project_id", i(project)),
                    ("compute_time_used_ms", i(used_ms)),
                ],
            );
        }
        members(w, 1, &[101, 102, 103, 104, 105]);
    }

    /// Beta: no limits; no projects (compute 0); one member.
    fn put_beta(w: &Run<'_>) {
        organization(w, 2, "Beta", &[("is_developer_profile", i(0))]);
        members(w, 2, &[201]);
    }

    /// Dev Ω: a developer profile; its single member's daily metrics decide.
    fn put_developer_profile(w: &Run<'_>) {
        organization(
            w,
            3,
            "Dev Ω",
            &[
                ("is_developer_profile", i(1)),
                ("limit_total_storage", r(2000.0)),
                ("limit_compute_time_per_year", r(1000.0)),
                ("limit_gpu_compute_time_per_year", r(100.0)),
                ("limit_number_of_projects", r(5.0)),
            ],
        );
        members(w, 3, &[301]);
        // Ignored for a developer profile: its datasets.
        datasets(w, 3, &[("x", 7)]);
        let days = [
            metrics_day(301, "2025-02-28", [900, 600, 10, 3]),
            metrics_day(301, "2025-03-10", [1200, 900, 20, 4]),
            metrics_day(301, "2025-03-30", [1500, 1200, 40, 5]),
        ];
        w.scope_rows(&DAILY_METRICS, &[i(301)], &days);
    }

    /// Deleted before T: left out. Deleted after T: still in.
    fn put_deleted_organizations(w: &Run<'_>) {
        organization(
            w,
            4,
            "Gone",
            &[("deleted_date", t("2025-03-15T10:00:00.000Z"))],
        );
        organization(
            w,
            5,
            "Later",
            &[("deleted_date", t("2025-04-10T10:00:00.000Z"))],
        );
    }

    /// Six daily syncs that change every input of the figures: Alpha's storage goes
    /// over its limit on day 3 and the limit is raised on day 5; a member joins on
    /// day 2 and leaves on day 4; a project is added on day 3 and soft-deleted on
    /// day 5; compute grows daily and goes over on day 3; Dev Ω's daily metrics
    /// come every other day (on day 1 it has none, and its figures are the
    /// regular ones); Outside, known only from a summary from day 2 on, goes over
    /// its user limit on day 4; Alpha's GPU limit comes from a summary.
    fn six_days() -> TestMirror {
        let mut m = TestMirror::new();
        for day in 1..=6i64 {
            let at = format!("2025-03-0{day}T06:00:00.000Z");
            m.run(&at, |w| {
                let storage_limit = if day < 5 { 1000.0 } else { 5000.0 };
                organization(
                    w,
                    1,
                    "Alpha",
                    &[
                        ("is_developer_profile", i(0)),
                        ("limit_total_storage", r(storage_limit)),
                        ("limit_compute_time_per_year", r(100.0)),
                        ("limit_number_of_projects", r(1.0)),
                        ("limit_number_of_users", r(1.0)),
                    ],
                );
                let size = if day < 3 { 800 } else { 1200 + day };
                datasets(w, 1, &[("a", size)]);
                let users: &[i64] = if (2..4).contains(&day) {
                    &[101, 102]
                } else {
                    &[101]
                };
                members(w, 1, users);
                let deleted = (day >= 5).then(|| t("2025-03-05T00:00:00.000Z"));
                let projects: &[(i64, Option<Value>)] = if day < 3 {
                    &[(11, None)]
                } else {
                    &[(11, None), (12, deleted)]
                };
                for (id, deleted) in projects {
                    w.put(
                        &PROJECTS,
                        &[
                            ("id", i(*id)),
                            ("owner_organization_id", i(1)),
                            ("deleted_date", deleted.clone().unwrap_or(Value::Null)),
                        ],
                    );
                    w.put(
                        &PROJECT_INFO,
                        &[
                            ("project_id", i(*id)),
                            ("compute_time_used_ms", i(20_000 * day + id)),
                        ],
                    );
                }
                organization(
                    w,
                    3,
                    "Dev Ω",
                    &[
                        ("is_developer_profile", i(1)),
                        ("limit_total_storage", r(2000.0)),
                        ("limit_gpu_compute_time_per_year", r(100.0)),
                    ],
                );
                members(w, 3, &[301]);
                let records: Vec<_> = (1..=day)
                    .filter(|d| d % 2 == 0)
                    .map(|d| {
                        let date = format!("2025-03-0{d}");
                        metrics_day(301, &date, [1000 + 400 * d, 10 * d, 30 * d, 1])
                    })
                    .collect();
                w.scope_rows(&DAILY_METRICS, &[i(301)], &records);
                // User 101's summaries: Alpha's GPU limit, which its own answer
                // lacks, and from day 2 Outside, known from this summary alone.
                let mut summaries = vec![vec![
                    ("user_id", i(101)),
                    ("organization_id", i(1)),
                    ("limit_gpu_compute_time_per_year", r(50.0)),
                ]];
                if day >= 2 {
                    summaries.push(vec![
                        ("user_id", i(101)),
                        ("organization_id", i(8)),
                        ("name", t("Outside")),
                        ("user_count", i(day)),
                        ("limit_number_of_users", r(3.0)),
                    ]);
                }
                w.scope_rows(&USER_ORGANIZATIONS, &[i(101)], &summaries);
            });
        }
        m
    }

    #[test]
    fn the_figures_history_is_the_report_as_of_each_day_before_t() {
        use crate::report::figure_history::{self, Figures};
        use crate::report::status::Status;
        let mut m = six_days();
        let at = |d: u32| chrono::NaiveDate::from_ymd_opt(2025, 3, d).expect("date");
        let report = |m: &mut TestMirror, d: u32| -> DataFrame {
            let mut tables = m.report(&at(d).to_string(), &["entitlements"]);
            tables.frames.remove("entitlements").expect("entitlements")
        };
        let today = report(&mut m, 6);
        let opts = m.options("2025-03-06", &["entitlements"]);
        let (days, series) = figure_history::read(&opts, at(1), &today).expect("history");
        assert_eq!(
            days.len(),
            5,
            "days 1 to 5: T comes from the run's own table"
        );
        let mut compared = 0;
        let mut over = Vec::new();
        for (k, d) in (1..=5).enumerate() {
            let df = report(&mut m, d);
            for ((org, metric), figures) in &series {
                let key = [
                    ("organization_id", org.to_string()),
                    ("metric", metric.clone()),
                ];
                let listed =
                    (0..df.height()).any(|r| key.iter().all(|(c, v)| text_of(&df, r, c) == *v));
                if !listed {
                    assert_eq!(figures[k], None, "day {d}, {org} {metric}: not listed");
                    continue;
                }
                let r = find(
                    &df,
                    &[("organization_id", &org.to_string()), ("metric", metric)],
                );
                let expected = Figures {
                    used: num(&df, r, "used"),
                    limit: num(&df, r, "limit"),
                    status: Status::parse(&text_of(&df, r, "status")).expect("status"),
                };
                assert_eq!(figures[k], Some(expected), "day {d}, {org} {metric}");
                if expected.status == Status::Exceeded {
                    over.push((d, *org, metric.clone()));
                }
                compared += 1;
            }
        }
        assert_eq!(
            compared,
            5 * 10 + 4 * 5,
            "three organizations, one listed from day 2"
        );
        for seen in [
            (4, 8, "users".to_string()),
            (3, 1, "storage_bytes".to_string()),
            (2, 1, "users".to_string()),
            (3, 1, "projects".to_string()),
            (3, 1, "compute_seconds".to_string()),
        ] {
            assert!(over.contains(&seen), "{seen:?} in {over:?}");
        }
        assert!(
            !over.contains(&(5, 1, "storage_bytes".to_string())),
            "the limit was raised"
        );
        assert!(
            !over.contains(&(5, 1, "projects".to_string())),
            "the project was deleted"
        );
    }

    /// The entitlements on 2025-03-31 after one sync of Alpha, Beta, Dev Ω and two
    /// deleted organizations.
    fn one_sync_report() -> DataFrame {
        let mut m = TestMirror::new();
        m.run(RUN, |w| {
            put_alpha(w);
            put_beta(w);
            put_developer_profile(w);
            put_deleted_organizations(w);
        });
        let mut out = m.report("2025-03-31", &["entitlements"]);
        out.frames
            .remove("entitlements")
            .expect("the entitlements frame")
    }

    fn row(df: &DataFrame, org: &str, metric: &str) -> usize {
        find(df, &[("organization_id", org), ("metric", metric)])
    }

    /// One expected row: organization, metric, used, percent used, status, source.
    type Expected<'a> = (
        &'a str,
        &'a str,
        Option<f64>,
        Option<f64>,
        &'a str,
        Option<&'a str>,
    );

    fn check(df: &DataFrame, expected: &[Expected<'_>]) {
        for &(org, metric, used, pct, status, source) in expected {
            let r = row(df, org, metric);
            assert_num(df, r, "used", used);
            assert_num(df, r, "pct_used", pct);
            let status_of = txt(df, r, "status");
            assert_eq!(status_of.as_deref(), Some(status), "{org}/{metric}");
            assert_eq!(txt(df, r, "source").as_deref(), source, "{org}/{metric}");
        }
    }

    #[test]
    fn organizations_deleted_before_the_as_of_date_are_left_out() {
        let df = one_sync_report();
        assert_eq!(df.height(), 4 * 5, "orgs 1, 2, 3, 5 × five metrics");
        assert!((0..df.height()).all(|r| text_of(&df, r, "organization_id") != "4"));
        let members = Some("organization_members");
        check(&df, &[("5", "users", Some(0.0), None, "no_limit", members)]);
    }

    #[test]
    fn a_regular_organization_s_usage_comes_from_its_mirror_tables() {
        let df = one_sync_report();
        let compute = Some("project_info+projects");
        check(
            &df,
            &[
                // 500 + 300 = 800 of 1000 = 80 % → warning (80 is the first warning percent).
                (
                    "1",
                    "storage_bytes",
                    Some(800.0),
                    Some(80.0),
                    "warning",
                    Some("datasets"),
                ),
                // (30 000 + 45 500) ms = 75.5 s of 100 → 75.5 % → ok.
                (
                    "1",
                    "compute_seconds",
                    Some(75.5),
                    Some(75.5),
                    "ok",
                    compute,
                ),
                // No source for a regular organization's GPU time: no_data beats no_limit.
                ("1", "gpu_compute_seconds", None, None, "no_data", None),
                // Projects 11 and 12 (13 is deleted) = 2 of 10 → 20 % → ok.
                (
                    "1",
                    "projects",
                    Some(2.0),
                    Some(20.0),
                    "ok",
                    Some("projects"),
                ),
                // 5 members of 4 → 125 % → exceeded.
                (
                    "1",
                    "users",
                    Some(5.0),
                    Some(125.0),
                    "exceeded",
                    Some("organization_members"),
                ),
            ],
        );
        // Remaining 4 − 5 = −1; 1000 − 800 = 200.
        assert_num(&df, row(&df, "1", "users"), "remaining", Some(-1.0));
        assert_num(
            &df,
            row(&df, "1", "storage_bytes"),
            "remaining",
            Some(200.0),
        );
    }

    #[test]
    fn usage_and_limit_read_in_a_person_s_units_next_to_the_exact_numbers() {
        let df = one_sync_report();
        let human = |metric: &str| {
            let r = row(&df, "1", metric);
            (
                txt(&df, r, "used_human").unwrap_or_default(),
                txt(&df, r, "limit_human").unwrap_or_default(),
            )
        };
        assert_eq!(human("storage_bytes"), ("800 B".into(), "1.00 kB".into()));
        assert_eq!(human("compute_seconds"), ("0.02 h".into(), "0.03 h".into()));
        assert_eq!(human("users"), ("5".into(), "4".into()));
        assert_eq!(human("gpu_compute_seconds"), (String::new(), String::new()));
    }

    #[test]
    fn without_limits_usage_has_no_limit_and_no_projects_use_nothing() {
        let df = one_sync_report();
        check(
            &df,
            &[
                (
                    "2",
                    "storage_bytes",
                    Some(0.0),
                    None,
                    "no_limit",
                    Some("datasets"),
                ),
                // No projects at all: the sum over none is 0, not unknown.
                (
                    "2",
                    "compute_seconds",
                    Some(0.0),
                    None,
                    "no_limit",
                    Some("project_info+projects"),
                ),
                (
                    "2",
                    "users",
                    Some(1.0),
                    None,
                    "no_limit",
                    Some("organization_members"),
                ),
            ],
        );
    }

    #[test]
    fn a_developer_profile_s_usage_is_its_latest_daily_metrics_record() {
        let df = one_sync_report();
        // The record of 2025-03-30 (the latest on or before T).
        let dm = Some("daily_metrics");
        check(
            &df,
            &[
                ("3", "storage_bytes", Some(1500.0), Some(75.0), "ok", dm),
                (
                    "3",
                    "compute_seconds",
                    Some(1200.0),
                    Some(120.0),
                    "exceeded",
                    dm,
                ),
                ("3", "gpu_compute_seconds", Some(40.0), Some(40.0), "ok", dm),
                // 5 of 5 projects: exactly at the limit (nothing more fits), not over it.
                ("3", "projects", Some(5.0), Some(100.0), "at_limit", dm),
                ("3", "users", Some(0.0), None, "no_limit", dm),
            ],
        );
    }

    #[test]
    fn a_developer_profile_s_rate_compares_with_the_record_30_days_back() {
        let df = one_sync_report();
        // Rates against the record 30 days back (2025-02-28, 30 days before 2025-03-30).
        for (metric, rate, exhaustion) in [
            // storage (1500 − 900) / 30 = 20 B/day; 500 left → 25 days → 2025-04-25.
            ("storage_bytes", 20.0, Some("2025-04-25")),
            // gpu (40 − 10) / 30 = 1 s/day; 60 left → 2025-05-30.
            ("gpu_compute_seconds", 1.0, Some("2025-05-30")),
            // compute (1200 − 600) / 30 = 20 s/day, but nothing remains: no projection.
            ("compute_seconds", 20.0, None),
        ] {
            let r = row(&df, "3", metric);
            assert_num(&df, r, "daily_rate", Some(rate));
            let projected = txt(&df, r, "projected_exhaustion");
            assert_eq!(projected.as_deref(), exhaustion, "{metric}");
        }
    }

    #[test]
    fn one_sync_gives_the_mirror_sources_no_rate() {
        let df = one_sync_report();
        assert_num(&df, row(&df, "1", "storage_bytes"), "daily_rate", None);
    }

    #[test]
    fn daily_rate_from_mirror_history() {
        let mut m = TestMirror::new();
        for (at, used_ms) in [
            ("2025-03-10T06:00:00.000Z", 1_000),
            ("2025-03-20T06:00:00.000Z", 9_000),
        ] {
            m.run(at, |w| {
                w.put(
                    &ORGANIZATIONS,
                    &[
                        ("id", i(1)),
                        ("name", t("Alpha")),
                        ("limit_compute_time_per_year", r(100.0)),
                    ],
                );
                w.put(&PROJECTS, &[("id", i(7)), ("owner_organization_id", i(1))]);
                w.put(
                    &PROJECT_INFO,
                    &[("project_id", i(7)), ("compute_time_used_ms", i(used_ms))],
                );
            });
        }
        let out = m.report("2025-03-20", &["entitlements"]);
        let df = &out.frames["entitlements"];
        let r = find(
            df,
            &[("organization_id", "1"), ("metric", "compute_seconds")],
        );
        assert_num(df, r, "used", Some(9.0));
        // History starts 2025-03-10 (less than 30 days): (9 − 1) s / 10 days = 0.8 s/day.
        assert_num(df, r, "daily_rate", Some(0.8));
        // 91 s left / 0.8 = 113.75 → 114 days after 2025-03-20 = 2025-07-12.
        assert_eq!(
            txt(df, r, "projected_exhaustion").as_deref(),
            Some("2025-07-12")
        );
    }

    /// Writes the member list of organization `org` with roles.
    fn members_with_roles(w: &Run<'_>, org: i64, list: &[(i64, &str)]) {
        let rows: Vec<Vec<(&str, Value)>> = list
            .iter()
            .map(|&(u, role)| {
                vec![
                    ("organization_id", i(org)),
                    ("user_id", i(u)),
                    ("role", t(role)),
                ]
            })
            .collect();
        w.scope_rows(&ORGANIZATION_MEMBERS, &[i(org)], &rows);
    }

    fn developer_profile(w: &Run<'_>, id: i64, name: &str) {
        organization(w, id, name, &[("is_developer_profile", i(1))]);
    }

    /// Profiles 3 (admin 301 and a pending second member 302, both with metrics),
    /// 4 and 5 (both of user 401).
    fn put_profiles_with_metrics(w: &Run<'_>) {
        developer_profile(w, 3, "Pending second member");
        members_with_roles(w, 3, &[(301, "admin"), (302, "member")]);
        developer_profile(w, 4, "Twin A");
        developer_profile(w, 5, "Twin B");
        members_with_roles(w, 4, &[(401, "admin")]);
        members_with_roles(w, 5, &[(401, "admin")]);
        for (user, storage, compute) in [(301, 700, 70), (302, 900, 90), (401, 400, 40)] {
            let day = metrics_day(user, "2025-03-30", [storage, compute, 0, 1]);
            w.scope(&DAILY_METRICS, &[i(user)], &[day.as_slice()]);
        }
    }

    /// Profile 6: no daily metrics; its project names no owner organization, only its
    /// developer-profile user 601 (whose summary marks the profile).
    fn put_profile_without_metrics(w: &Run<'_>) {
        developer_profile(w, 6, "Without metrics");
        members_with_roles(w, 6, &[(601, "admin"), (602, "member")]);
        w.put(
            &PROJECTS,
            &[
                ("id", i(61)),
                ("owner_user_id", i(601)),
                ("developer_profile_user_id", i(601)),
            ],
        );
        w.put(
            &PROJECT_INFO,
            &[("project_id", i(61)), ("compute_time_used_ms", i(30_000))],
        );
    }

    /// User 601's summaries: profile 6, organization 7 (in the `get-organization`
    /// answer without a user limit) and organization 8 (known only from this summary).
    fn put_user_summaries(w: &Run<'_>) {
        let summary = |org: i64, name: &str, dev: i64, limits: &[(&'static str, f64)]| {
            let mut row = vec![
                ("user_id", i(601)),
                ("organization_id", i(org)),
                ("name", t(name)),
                ("is_developer_profile", i(dev)),
                ("is_admin", i(1)),
                ("user_count", i(3)),
            ];
            row.extend(limits.iter().map(|&(c, v)| (c, r(v))));
            row
        };
        let summaries = [
            summary(6, "Without metrics", 1, &[]),
            summary(7, "Regular", 0, &[("limit_number_of_users", 9.0)]),
            summary(
                8,
                "Outside",
                0,
                &[
                    ("limit_number_of_users", 5.0),
                    ("limit_number_of_projects", 10.0),
                ],
            ),
        ];
        w.scope_rows(&USER_ORGANIZATIONS, &[i(601)], &summaries);
        organization(
            w,
            7,
            "Regular",
            &[
                ("is_developer_profile", i(0)),
                ("limit_number_of_projects", r(4.0)),
            ],
        );
        members_with_roles(w, 7, &[(601, "member")]);
    }

    /// The entitlements on 2025-03-31 of profiles 3 to 6 and organizations 7 and 8.
    fn profiles_report() -> DataFrame {
        let mut m = TestMirror::new();
        m.run(RUN, |w| {
            put_profiles_with_metrics(w);
            put_profile_without_metrics(w);
            put_user_summaries(w);
        });
        let mut out = m.report("2025-03-31", &["entitlements"]);
        out.frames
            .remove("entitlements")
            .expect("the entitlements frame")
    }

    fn used_and_source(df: &DataFrame, org: &str, metric: &str) -> (Option<f64>, Option<String>) {
        let r = row(df, org, metric);
        (num(df, r, "used"), txt(df, r, "source"))
    }

    fn limit_and_source(df: &DataFrame, org: &str, metric: &str) -> (Option<f64>, Option<String>) {
        let r = row(df, org, metric);
        (num(df, r, "limit"), txt(df, r, "limit_source"))
    }

    fn from(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn every_organization_and_metric_appears_once() {
        let df = profiles_report();
        // Organizations 3 to 8, five metrics each, every (organization, metric) once.
        assert_eq!(df.height(), 6 * 5);
        let mut keys: Vec<(String, String)> = (0..df.height())
            .map(|r| {
                (
                    text_of(&df, r, "organization_id"),
                    text_of(&df, r, "metric"),
                )
            })
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), df.height(), "a key appears twice");
    }

    #[test]
    fn a_developer_profile_s_figures_are_its_admin_s_daily_metrics() {
        let df = profiles_report();
        let dm = from("daily_metrics");
        // The admin's 700 B, not the pending member's 900.
        assert_eq!(
            used_and_source(&df, "3", "storage_bytes"),
            (Some(700.0), dm.clone())
        );
        // Both of user 401's profiles show that user's figures, once each.
        assert_eq!(
            used_and_source(&df, "4", "compute_seconds"),
            (Some(40.0), dm.clone())
        );
        assert_eq!(
            used_and_source(&df, "5", "compute_seconds"),
            (Some(40.0), dm)
        );
    }

    #[test]
    fn a_profile_without_metrics_counts_the_projects_of_its_developer_profile_user() {
        let df = profiles_report();
        // Its project (owner organization null) counts for it through its
        // developer-profile user: 30,000 ms = 30 s, 1 project.
        assert_eq!(
            used_and_source(&df, "6", "compute_seconds"),
            (Some(30.0), from("project_info+projects"))
        );
        assert_eq!(used_and_source(&df, "6", "projects").0, Some(1.0));
    }

    #[test]
    fn limits_missing_from_the_organization_come_from_the_user_s_summary() {
        let df = profiles_report();
        // Organization 7: projects from `get-organization`, users only in the summary.
        assert_eq!(
            limit_and_source(&df, "7", "projects"),
            (Some(4.0), from("organization"))
        );
        assert_eq!(
            limit_and_source(&df, "7", "users"),
            (Some(9.0), from("user_summary"))
        );
        assert_eq!(limit_and_source(&df, "7", "storage_bytes"), (None, None));
        // Its users are its one listed member, not the summary's count.
        assert_eq!(
            used_and_source(&df, "7", "users"),
            (Some(1.0), from("organization_members"))
        );
    }

    #[test]
    fn an_organization_known_only_from_a_summary_takes_its_name_limits_and_user_count() {
        let df = profiles_report();
        assert_eq!(
            txt(&df, row(&df, "8", "users"), "organization_name"),
            from("Outside")
        );
        assert_eq!(
            limit_and_source(&df, "8", "users"),
            (Some(5.0), from("user_summary"))
        );
        assert_eq!(
            limit_and_source(&df, "8", "projects"),
            (Some(10.0), from("user_summary"))
        );
        assert_eq!(
            used_and_source(&df, "8", "users"),
            (Some(3.0), from("user_organizations"))
        );
        // 3 of 5 users = 60 % → ok.
        assert_eq!(txt(&df, row(&df, "8", "users"), "status"), from("ok"));
    }
}
