//! A synthetic mirror of a given size, for benchmarks of the reports.
//!
//! [`bench_fixture`] fills a new mirror in one transaction with prepared statements,
//! writing rows straight into the current tables (with their content hash and
//! bookkeeping, as a sync would) plus some history: project information of an older
//! run (so organization trends and daily rates have a past) and removed memberships.
//! The world is deterministic: the same sizes give the same file.

use crate::mirror::spec::{self, TableSpec};
use crate::mirror::table::content_hash;
use crate::report::dates::{date_of, day_text};
use crate::report::error::ReportError;
use chrono::NaiveDate;
use rusqlite::types::Value;
use rusqlite::{Transaction, params_from_iter};
use std::collections::HashMap;
use std::path::Path;

/// The as-of date the fixture is built for (its last day of daily metrics).
pub fn fixture_as_of() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 6, 30).unwrap_or_default()
}

/// Fills a new mirror at `path` with `orgs` organizations (every third a developer
/// profile), `users` white label users (members of the organizations), `projects`
/// projects with project information, and `days` days of daily metrics per user
/// (a tenth of the users are younger and have half as many). Returns the as-of date
/// to report at.
pub fn bench_fixture(
    path: &Path,
    orgs: usize,
    users: usize,
    projects: usize,
    days: usize,
) -> Result<NaiveDate, ReportError> {
    let mut conn = crate::mirror::open_rw(path)?;
    let fail = |source| ReportError::Fixture {
        path: path.to_path_buf(),
        cause: source,
    };
    let tx = conn.transaction().map_err(fail)?;
    fill(&tx, orgs.max(1), users.max(1), projects, days).map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(fixture_as_of())
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n.max(1)) as i64
    }
}

/// Insert statements for one table, with its column positions.
struct Writer {
    spec: &'static TableSpec,
    current: String,
    history: String,
    index: HashMap<&'static str, usize>,
}

impl Writer {
    fn new(spec: &'static TableSpec) -> Self {
        let cols: Vec<String> = spec
            .all_columns()
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let n = spec.width();
        let marks: Vec<String> = (1..=n + 4).map(|i| format!("?{i}")).collect();
        Writer {
            spec,
            current: format!(
                "INSERT INTO {} ({}, content_hash, valid_from, run_id, removed_at) VALUES ({})",
                spec.name,
                cols.join(", "),
                marks.join(", ")
            ),
            history: format!(
                "INSERT INTO {}_history ({}, content_hash, valid_from, run_id, removed_at, valid_to) VALUES ({}, ?{})",
                spec.name,
                cols.join(", "),
                marks.join(", "),
                n + 5
            ),
            index: spec
                .all_columns()
                .enumerate()
                .map(|(i, c)| (c.name, i))
                .collect(),
        }
    }

    fn row(&self, values: &[(&str, Value)]) -> Vec<Value> {
        let mut row = vec![Value::Null; self.spec.width()];
        for (name, value) in values {
            if let Some(&i) = self.index.get(name) {
                row[i] = value.clone();
            }
        }
        row
    }

    fn put(
        &self,
        tx: &Transaction,
        run: &Run,
        row: Vec<Value>,
        removed_at: Option<&str>,
    ) -> rusqlite::Result<()> {
        let mut stmt = tx.prepare_cached(&self.current)?;
        let hash = content_hash(&row);
        let mut params = row;
        params.push(Value::Blob(hash.to_vec()));
        params.push(Value::Text(run.at.clone()));
        params.push(Value::Integer(run.id));
        params.push(removed_at.map_or(Value::Null, |s| Value::Text(s.to_string())));
        stmt.execute(params_from_iter(params.iter()))?;
        Ok(())
    }

    fn put_history(
        &self,
        tx: &Transaction,
        run: &Run,
        row: Vec<Value>,
        valid_to: &str,
    ) -> rusqlite::Result<()> {
        let mut stmt = tx.prepare_cached(&self.history)?;
        let hash = content_hash(&row);
        let mut params = row;
        params.push(Value::Blob(hash.to_vec()));
        params.push(Value::Text(run.at.clone()));
        params.push(Value::Integer(run.id));
        params.push(Value::Null);
        params.push(Value::Text(valid_to.to_string()));
        stmt.execute(params_from_iter(params.iter()))?;
        Ok(())
    }
}

/// A sync run the rows belong to.
struct Run {
    id: i64,
    at: String,
}

fn add_run(tx: &Transaction, day: i64) -> rusqlite::Result<Run> {
    let at = format!("{}T06:00:00.000Z", day_text(day).unwrap_or_default());
    tx.execute(
        "INSERT INTO sync_runs (started_at, observed_at, finished_at, status, base_url) \
         VALUES (?1, ?1, ?1, 'succeeded', 'fixture')",
        [&at],
    )?;
    Ok(Run {
        id: tx.last_insert_rowid(),
        at,
    })
}

fn ts(day: i64, hour: i64) -> Value {
    Value::Text(format!(
        "{}T{:02}:00:00.000Z",
        day_text(day).unwrap_or_default(),
        hour.rem_euclid(24)
    ))
}

fn int(n: i64) -> Value {
    Value::Integer(n)
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn fill(
    tx: &Transaction,
    orgs: usize,
    users: usize,
    projects: usize,
    days: usize,
) -> rusqlite::Result<()> {
    let today = crate::report::dates::day_of(fixture_as_of());
    let old = add_run(tx, today - 40)?;
    let mid = add_run(tx, today - 10)?;
    let now = add_run(tx, today)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let orgs_i = orgs as i64;
    let whitelabel_of = |org: i64| 1 + (org % 2);
    let is_dev = |org: i64| org % 3 == 0;

    let w_org = Writer::new(&spec::ORGANIZATIONS);
    for org in 1..=orgs_i {
        let limited = org % 5 != 0;
        let limit = |v: f64| if limited { Value::Real(v) } else { Value::Null };
        w_org.put(
            tx,
            &now,
            w_org.row(&[
                ("id", int(org)),
                ("name", text(format!("Organisation {org} Ærø"))),
                ("is_developer_profile", int(i64::from(is_dev(org)))),
                ("whitelabel_id", int(whitelabel_of(org))),
                (
                    "whitelabel_name",
                    text(format!("White label {}", whitelabel_of(org))),
                ),
                ("created", ts(today - 400 - org % 300, 9)),
                ("limit_total_storage", limit(2.0e9)),
                ("limit_compute_time_per_year", limit(3.6e6)),
                ("limit_gpu_compute_time_per_year", limit(3.6e5)),
                ("limit_number_of_projects", limit(30.0)),
                ("limit_number_of_users", limit(12.0)),
            ]),
            None,
        )?;
    }

    let w_ds = Writer::new(&spec::DATASETS);
    for org in 1..=orgs_i {
        for k in 0..2 {
            w_ds.put(
                tx,
                &now,
                w_ds.row(&[
                    ("organization_id", int(org)),
                    ("dataset", text(format!("set-{k}"))),
                    ("total_file_size", int(rng.below(1_000_000_000))),
                    ("total_file_count", int(rng.below(10_000))),
                ]),
                None,
            )?;
        }
    }

    let w_user = Writer::new(&spec::USERS);
    let w_member = Writer::new(&spec::ORGANIZATION_MEMBERS);
    let w_uo = Writer::new(&spec::USER_ORGANIZATIONS);
    let w_trial = Writer::new(&spec::TRIALS);
    for user in 1..=users as i64 {
        let mut org = (user - 1) % orgs_i + 1;
        if is_dev(org) && user > orgs_i {
            org -= 1;
        }
        let email = text(format!("user{user}@example.com"));
        let name = text(format!("Jöns Användare {user}"));
        let seen = ts(today - rng.below(60), 12);
        let flags = [
            ("pending", int(i64::from(user % 17 == 0))),
            ("mfa_configured", int(i64::from(user % 4 != 0))),
        ];
        let mut row = vec![
            ("id", int(user)),
            ("name", name.clone()),
            ("email", email.clone()),
            ("created", ts(today - rng.below(400), 8)),
            ("last_seen", seen.clone()),
            ("suspended", int(i64::from(user % 53 == 0))),
            ("whitelabel_organization_id", int(1 + user % 2)),
        ];
        row.extend(flags.iter().cloned());
        w_user.put(tx, &now, w_user.row(&row), None)?;
        let mut member = vec![
            ("organization_id", int(org)),
            ("user_id", int(user)),
            ("name", name),
            ("email", email),
            ("added", ts(today - rng.below(200), 10)),
            ("last_seen", seen),
            ("role", text("member")),
        ];
        member.extend(flags.iter().cloned());
        w_member.put(tx, &now, w_member.row(&member), None)?;
        w_uo.put(
            tx,
            &now,
            w_uo.row(&[
                ("user_id", int(user)),
                ("organization_id", int(org)),
                ("whitelabel_id", int(whitelabel_of(org))),
                ("is_developer_profile", int(i64::from(is_dev(org)))),
            ]),
            None,
        )?;
        if user % 10 == 0 {
            let created = today - rng.below(60);
            let expiration = created + 30;
            let upgraded = (user % 30 == 0).then(|| ts(created + 10, 11));
            w_trial.put(
                tx,
                &now,
                w_trial.row(&[
                    ("id", int(user)),
                    ("user_id", int(user)),
                    ("organization_id", int(org)),
                    ("created", ts(created, 9)),
                    ("expiration_date", ts(expiration, 9)),
                    (
                        "expired_date",
                        if expiration <= today {
                            ts(expiration, 9)
                        } else {
                            Value::Null
                        },
                    ),
                    ("upgraded_date", upgraded.unwrap_or(Value::Null)),
                ]),
                None,
            )?;
        }
        // A former member of another organization, removed 5 days ago.
        let other = user % orgs_i + 1;
        if user % 25 == 0 && other != org {
            let removed = format!("{}T06:00:00.000Z", day_text(today - 5).unwrap_or_default());
            w_member.put(
                tx,
                &old,
                w_member.row(&[
                    ("organization_id", int(other)),
                    ("user_id", int(user)),
                    ("added", ts(today - 300, 10)),
                ]),
                Some(&removed),
            )?;
        }
    }

    let w_project = Writer::new(&spec::PROJECTS);
    let w_info = Writer::new(&spec::PROJECT_INFO);
    for project in 1..=projects as i64 {
        let org = (project - 1) % orgs_i + 1;
        let deleted = project % 20 == 0;
        w_project.put(
            tx,
            &now,
            w_project.row(&[
                ("id", int(project)),
                ("name", text(format!("Projekt {project} – Δ"))),
                ("owner_organization_id", int(org)),
                ("whitelabel_id", int(whitelabel_of(org))),
                ("created", ts(today - rng.below(500), 7)),
                ("last_accessed", ts(today - rng.below(200), 7)),
                (
                    "deleted_date",
                    if deleted {
                        ts(today - rng.below(40), 7)
                    } else {
                        Value::Null
                    },
                ),
            ]),
            None,
        )?;
        if deleted {
            continue;
        }
        let start = today - 20;
        let used = rng.below(3_600_000_000);
        let left = rng.below(3_600_000_000);
        let info = |used: i64| {
            w_info.row(&[
                ("project_id", int(project)),
                ("compute_period_start", ts(start, 0)),
                ("compute_period_end", ts(start + 365, 0)),
                ("compute_time_used_ms", int(used)),
                ("compute_time_left_ms", int(left)),
            ])
        };
        w_info.put_history(tx, &old, info(used / 2), &mid.at)?;
        w_info.put(tx, &mid, info(used), None)?;
    }

    let w_daily = Writer::new(&spec::DAILY_METRICS);
    let days_i = days as i64;
    for user in 1..=users as i64 {
        let span = if user % 10 == 0 { days_i / 2 } else { days_i };
        let mut total_compute = 0i64;
        let mut total_gpu = 0i64;
        let mut storage = rng.below(1_000_000_000);
        for back in (0..span).rev() {
            let day = today - back;
            let cpu = rng.below(3_000);
            let gpu = if user % 7 == 0 { rng.below(500) } else { 0 };
            let added = rng.below(5_000_000);
            let removed = rng.below(2_000_000);
            total_compute += cpu + 3 * gpu;
            total_gpu += gpu;
            storage += added - removed;
            let day_text = date_of(day)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default();
            w_daily.put(
                tx,
                &now,
                w_daily.row(&[
                    ("user_id", int(user)),
                    ("day", text(day_text)),
                    ("date", ts(day, 0)),
                    ("total_users", int(0)),
                    ("total_projects", int(1 + user % 5)),
                    (
                        "total_current_contract_cpu_compute_time_seconds",
                        int(total_compute - 3 * total_gpu),
                    ),
                    (
                        "total_current_contract_gpu_compute_time_seconds",
                        int(total_gpu),
                    ),
                    (
                        "total_current_contract_compute_time_seconds",
                        int(total_compute),
                    ),
                    ("total_storage_size_bytes", int(storage)),
                    ("cpu_compute_time_seconds", int(cpu)),
                    ("gpu_compute_time_seconds", int(gpu)),
                    ("compute_time_seconds", int(cpu + 3 * gpu)),
                    ("storage_bytes_added", int(added)),
                    ("storage_bytes_deleted", int(removed)),
                ]),
                None,
            )?;
        }
    }
    Ok(())
}
