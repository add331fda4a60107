//! Generated daily metrics: a pure function of (seed, user id, date) for usage, plus the
//! world's own history for the counts (projects owned, members of the user's primary
//! organization), computed while the response is serialized so that nothing is stored.
//!
//! Semantics follow the real platform: compute = CPU + 3 x GPU; the
//! `totalCurrentContract*` counters run from `computeTimeCalculatedSince`;
//! `totalUsers` is 0 for developer profiles.

use serde::ser::{Serialize, SerializeSeq, Serializer};

use super::render::Iso;
use super::rng::SplitMix64;
use super::world::{DailyMetric, Metrics, Time, User, WorldState, day_of, day_start};

/// How many days of metrics are served, up to and including the clock's day.
pub const WINDOW_DAYS: i64 = 365;

#[derive(Debug, Clone, Copy)]
struct Params {
    p_active: f64,
    base_cpu: f64,
    gpu_share: f64,
    base_storage: f64,
    phase: i64,
}

fn params(seed: u64, user_id: i64) -> Params {
    let mut r = SplitMix64::for_parts(&[seed, user_id as u64, 0xac71]);
    let inactive = r.chance(0.1);
    Params {
        p_active: if inactive { 0.0 } else { r.uniform(0.15, 0.9) },
        base_cpu: 60.0 * 10f64.powf(r.uniform(0.0, 2.0)),
        gpu_share: if r.chance(0.55) {
            0.0
        } else {
            r.uniform(0.05, 0.6)
        },
        base_storage: 10f64.powf(r.uniform(5.0, 8.0)),
        phase: r.range(0, 119),
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Day {
    cpu: i64,
    gpu: i64,
    storage_added: i64,
    /// Fraction of the current storage deleted that day.
    storage_deleted_frac: f64,
}

fn day_values(seed: u64, user_id: i64, p: &Params, day: i64) -> Day {
    let mut r = SplitMix64::for_parts(&[seed, user_id as u64, day as u64, 0xd1]);
    // Day 0 (1970-01-01) was a Thursday: weekday 0 is Sunday.
    let weekday = (day + 4).rem_euclid(7);
    let weekend = weekday == 0 || weekday == 6;
    let p_active = p.p_active * if weekend { 0.35 } else { 1.0 };
    if !r.chance(p_active) {
        return Day::default();
    }
    // A slow triangle-wave season so trends have something to show.
    let pos = ((day + p.phase).rem_euclid(120)) as f64 / 120.0;
    let season = 1.0 + 0.35 * (1.0 - 4.0 * (pos - 0.5).abs());
    let cpu = p.base_cpu * r.uniform(0.2, 1.8) * season;
    let gpu = if p.gpu_share > 0.0 && r.chance(0.5) {
        cpu * p.gpu_share * r.uniform(0.5, 1.5)
    } else {
        0.0
    };
    Day {
        cpu: cpu as i64,
        gpu: gpu as i64,
        storage_added: (p.base_storage * r.uniform(0.0, 2.0)) as i64,
        storage_deleted_frac: if r.chance(0.04) {
            r.uniform(0.02, 0.2)
        } else {
            0.0
        },
    }
}

/// Running counters of a user's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Totals {
    pub cpu: i64,
    pub gpu: i64,
    pub compute: i64,
    pub storage: i64,
}

/// Contract totals and storage at the end of `day` (used by the generator to set
/// developer-profile limits relative to real usage).
pub(crate) fn totals_through(
    seed: u64,
    user_id: i64,
    created: Time,
    since: Time,
    day: i64,
) -> Totals {
    let p = params(seed, user_id);
    let mut t = Totals::default();
    let since_day = day_of(since);
    for d in day_of(created)..=day {
        step(&mut t, &day_values(seed, user_id, &p, d), d >= since_day);
    }
    t
}

/// Applies one day; returns (storage added, storage deleted).
fn step(t: &mut Totals, v: &Day, in_contract: bool) -> (i64, i64) {
    if in_contract {
        t.cpu += v.cpu;
        t.gpu += v.gpu;
        t.compute += v.cpu + 3 * v.gpu;
    }
    let deleted = (t.storage as f64 * v.storage_deleted_frac) as i64;
    t.storage += v.storage_added - deleted;
    (v.storage_added, deleted)
}

/// Counts entities over days from sorted add and delete days.
#[derive(Debug, Default)]
struct Sweep {
    adds: Vec<i64>,
    dels: Vec<i64>,
    ai: usize,
    di: usize,
    total: i64,
}

impl Sweep {
    fn new(mut adds: Vec<i64>, mut dels: Vec<i64>) -> Self {
        adds.sort_unstable();
        dels.sort_unstable();
        Self {
            adds,
            dels,
            ..Self::default()
        }
    }

    fn reset(&mut self) {
        (self.ai, self.di, self.total) = (0, 0, 0);
    }

    /// Total at the end of `day`, and how many were added and deleted that day. Days
    /// must be asked in increasing order.
    fn at(&mut self, day: i64) -> (i64, i64, i64) {
        let (mut added, mut deleted) = (0, 0);
        while let Some(&d) = self.adds.get(self.ai).filter(|&&d| d <= day) {
            self.total += 1;
            added += i64::from(d == day);
            self.ai += 1;
        }
        while let Some(&d) = self.dels.get(self.di).filter(|&&d| d <= day) {
            self.total -= 1;
            deleted += i64::from(d == day);
            self.di += 1;
        }
        (self.total, added, deleted)
    }
}

/// A user's daily metrics, serialized lazily as a JSON array.
pub(crate) enum Series<'a> {
    Generated(Box<Generated>),
    Explicit(Vec<&'a DailyMetric>),
}

pub(crate) struct Generated {
    seed: u64,
    user_id: i64,
    params: Params,
    created_day: i64,
    since: Time,
    first_day: i64,
    last_day: i64,
    developer_profile: bool,
    projects: std::cell::RefCell<(Sweep, Sweep, Sweep)>,
}

/// The metrics of `user` as the world stands (window: the 365 days up to the clock).
pub(crate) fn series<'a>(ws: &'a WorldState, user: &'a User) -> Series<'a> {
    let now = ws.world.now;
    let first_day = day_of(now) - WINDOW_DAYS + 1;
    // A user whose records stop before the clock (a hard case) is served up to then.
    let end = user.quirks.metrics_end.map_or(now, |end| end.min(now));
    let last_day = day_of(end);
    match &user.metrics {
        Metrics::Explicit(records) => Series::Explicit(
            records
                .iter()
                .filter(|m| m.date <= end && day_of(m.date) >= first_day)
                .collect(),
        ),
        Metrics::Generated { since } => {
            let created_day = day_of(user.created);
            let owned: Vec<usize> = ws.idx.user_owned.get(&user.id).cloned().unwrap_or_default();
            let projects = Sweep::new(
                owned
                    .iter()
                    .map(|&i| day_of(ws.world.projects[i].created))
                    .collect(),
                owned
                    .iter()
                    .filter_map(|&i| ws.world.projects[i].deleted_date.map(day_of))
                    .collect(),
            );
            let memberships = ws.memberships(user.id);
            let primary = memberships
                .iter()
                .map(|&(oi, _)| &ws.world.organizations[oi])
                .find(|o| !o.is_developer_profile);
            let developer_profile = primary.is_none()
                && memberships
                    .iter()
                    .any(|&(oi, _)| ws.world.organizations[oi].is_developer_profile);
            let (users, staff) = match primary {
                Some(org) => {
                    let mut adds = Vec::new();
                    let mut dels = Vec::new();
                    let mut staff_adds = Vec::new();
                    let mut staff_dels = Vec::new();
                    for m in &org.members {
                        let Some(&ui) = ws.idx.user.get(&m.user_id) else {
                            continue;
                        };
                        let u = &ws.world.users[ui];
                        let add = day_of(m.added);
                        let del = u.deleted.map(day_of);
                        adds.push(add);
                        dels.extend(del);
                        if u.is_staff {
                            staff_adds.push(add);
                            staff_dels.extend(del);
                        }
                    }
                    (Sweep::new(adds, dels), Sweep::new(staff_adds, staff_dels))
                }
                None => (Sweep::default(), Sweep::default()),
            };
            Series::Generated(Box::new(Generated {
                seed: ws.world.seed,
                user_id: user.id,
                params: params(ws.world.seed, user.id),
                created_day,
                since: *since,
                first_day: first_day.max(created_day),
                last_day,
                developer_profile,
                projects: std::cell::RefCell::new((projects, users, staff)),
            }))
        }
    }
}

impl Series<'_> {
    /// Number of records.
    pub(crate) fn len(&self) -> usize {
        match self {
            Series::Explicit(records) => records.len(),
            Series::Generated(g) => (g.last_day - g.first_day + 1).max(0) as usize,
        }
    }

    /// Calls `f` with each record in date order, stopping at the first error.
    pub(crate) fn for_each<E>(
        &self,
        mut f: impl FnMut(&DailyMetric) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Series::Explicit(records) => records.iter().try_for_each(|m| f(m)),
            Series::Generated(g) => g.for_each(f),
        }
    }

    /// Appends the series as a JSON array. Same bytes as `serde_json` would write
    /// (see the tests), several times faster: this is most of get-whitelabel-user's body.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        out.reserve(self.len() * 560 + 2);
        out.push(b'[');
        let mut first = true;
        let _ = self.for_each(|m| {
            if !first {
                out.push(b',');
            }
            first = false;
            write_metric(out, m);
            Ok::<(), ()>(())
        });
        out.push(b']');
    }
}

impl Serialize for Series<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        self.for_each(|m| seq.serialize_element(m))?;
        seq.end()
    }
}

impl Generated {
    fn for_each<E>(&self, mut f: impl FnMut(&DailyMetric) -> Result<(), E>) -> Result<(), E> {
        let mut sweeps = self.projects.borrow_mut();
        let (projects, users, staff) = &mut *sweeps;
        for s in [&mut *projects, &mut *users, &mut *staff] {
            s.reset();
        }
        let since_day = day_of(self.since);
        let mut totals = Totals::default();
        for day in self.created_day.min(since_day)..=self.last_day {
            let v = if day >= self.created_day {
                day_values(self.seed, self.user_id, &self.params, day)
            } else {
                Day::default()
            };
            let (added, deleted) = step(&mut totals, &v, day >= since_day);
            if day < self.first_day {
                continue;
            }
            let (total_projects, projects_added, projects_deleted) = projects.at(day);
            let (mut total_users, mut users_added, mut users_deleted) = users.at(day);
            let (mut total_staff, mut staff_added, mut staff_deleted) = staff.at(day);
            if self.developer_profile {
                (total_users, users_added, users_deleted) = (0, 0, 0);
                (total_staff, staff_added, staff_deleted) = (0, 0, 0);
            }
            f(&DailyMetric {
                date: day_start(day),
                total_users,
                total_staff_users: total_staff,
                total_projects,
                total_current_contract_cpu_compute_time_seconds: totals.cpu,
                total_current_contract_gpu_compute_time_seconds: totals.gpu,
                total_current_contract_compute_time_seconds: totals.compute,
                total_storage_size_bytes: totals.storage,
                users_added,
                users_deleted,
                projects_added,
                projects_deleted,
                cpu_compute_time_seconds: v.cpu,
                gpu_compute_time_seconds: v.gpu,
                compute_time_seconds: v.cpu + 3 * v.gpu,
                storage_bytes_added: added,
                storage_bytes_deleted: deleted,
                staff_users_added: staff_added,
                staff_users_deleted: staff_deleted,
                compute_time_calculated_since: self.since,
            })?;
        }
        Ok(())
    }
}

fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// One record as compact JSON, in the field order of `DailyMetric`'s derived Serialize.
fn write_metric(out: &mut Vec<u8>, m: &DailyMetric) {
    out.extend_from_slice(b"{\"date\":\"");
    out.extend_from_slice(Iso::of(&m.date).text().as_bytes());
    let ints: [(&[u8], i64); 18] = [
        (b"\",\"totalUsers\":", m.total_users),
        (b",\"totalStaffUsers\":", m.total_staff_users),
        (b",\"totalProjects\":", m.total_projects),
        (
            b",\"totalCurrentContractCpuComputeTimeSeconds\":",
            m.total_current_contract_cpu_compute_time_seconds,
        ),
        (
            b",\"totalCurrentContractGpuComputeTimeSeconds\":",
            m.total_current_contract_gpu_compute_time_seconds,
        ),
        (
            b",\"totalCurrentContractComputeTimeSeconds\":",
            m.total_current_contract_compute_time_seconds,
        ),
        (b",\"totalStorageSizeBytes\":", m.total_storage_size_bytes),
        (b",\"usersAdded\":", m.users_added),
        (b",\"usersDeleted\":", m.users_deleted),
        (b",\"projectsAdded\":", m.projects_added),
        (b",\"projectsDeleted\":", m.projects_deleted),
        (b",\"cpuComputeTimeSeconds\":", m.cpu_compute_time_seconds),
        (b",\"gpuComputeTimeSeconds\":", m.gpu_compute_time_seconds),
        (b",\"computeTimeSeconds\":", m.compute_time_seconds),
        (b",\"storageBytesAdded\":", m.storage_bytes_added),
        (b",\"storageBytesDeleted\":", m.storage_bytes_deleted),
        (b",\"staffUsersAdded\":", m.staff_users_added),
        (b",\"staffUsersDeleted\":", m.staff_users_deleted),
    ];
    for (key, value) in ints {
        out.extend_from_slice(key);
        push_int(out, value);
    }
    out.extend_from_slice(b",\"computeTimeCalculatedSince\":\"");
    out.extend_from_slice(Iso::of(&m.compute_time_calculated_since).text().as_bytes());
    out.extend_from_slice(b"\"}");
}

/// A cheap per-user fingerprint used in tests.
#[cfg(test)]
fn fingerprint(seed: u64, user_id: i64, day: i64) -> u64 {
    use super::rng::hash;
    let p = params(seed, user_id);
    let v = day_values(seed, user_id, &p, day);
    hash(&[v.cpu as u64, v.gpu as u64, v.storage_added as u64])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;
    use crate::world::{WorldState, generate};
    use chrono::NaiveDate;

    #[test]
    fn values_are_pure() {
        assert_eq!(
            fingerprint(1, 20_001, 20_000),
            fingerprint(1, 20_001, 20_000)
        );
        let distinct = (0..50)
            .flat_map(|d| (0..10).map(move |u| fingerprint(1, 20_001 + u, 20_000 + d)))
            .collect::<std::collections::HashSet<_>>();
        assert!(distinct.len() > 5);
    }

    #[test]
    fn series_covers_window_and_totals_are_consistent() {
        let date = NaiveDate::from_ymd_opt(2025, 1, 31).unwrap_or_default();
        let ws = WorldState::new(generate(Profile::Small, 4, date));
        let mut checked = 0;
        for user in ws.world.users.iter().take(40) {
            let json = serde_json::to_value(series(&ws, user)).expect("serializes");
            let records = json.as_array().expect("array");
            let age = day_of(ws.world.now) - day_of(user.created) + 1;
            assert_eq!(
                records.len() as i64,
                age.min(WINDOW_DAYS),
                "user {}",
                user.id
            );
            let mut prev: Option<&serde_json::Value> = None;
            for r in records {
                let cpu = r["cpuComputeTimeSeconds"].as_i64().unwrap_or(-1);
                let gpu = r["gpuComputeTimeSeconds"].as_i64().unwrap_or(-1);
                assert_eq!(r["computeTimeSeconds"].as_i64(), Some(cpu + 3 * gpu));
                assert!(r["totalStorageSizeBytes"].as_i64().unwrap_or(-1) >= 0);
                if let Some(p) = prev {
                    let key = "totalCurrentContractComputeTimeSeconds";
                    let grew = r[key].as_i64().unwrap_or(0) - p[key].as_i64().unwrap_or(0);
                    if r["date"].as_str() > r["computeTimeCalculatedSince"].as_str() {
                        assert_eq!(grew, cpu + 3 * gpu);
                    }
                }
                prev = Some(r);
            }
            if let Some(last) = records.last() {
                assert_eq!(
                    last["date"].as_str(),
                    Some(&*format!("{}T00:00:00.000Z", date))
                );
                checked += 1;
            }
        }
        assert!(checked > 10);
    }

    #[test]
    fn developer_profiles_have_zero_users() {
        let date = NaiveDate::from_ymd_opt(2025, 1, 31).unwrap_or_default();
        let ws = WorldState::new(generate(Profile::Small, 4, date));
        let dev = ws
            .world
            .organizations
            .iter()
            .find(|o| o.is_developer_profile)
            .and_then(|o| o.members.first())
            .and_then(|m| ws.user(m.user_id))
            .expect("a developer profile");
        let json = serde_json::to_value(series(&ws, dev)).expect("serializes");
        let records = json.as_array().expect("array");
        assert!(records.iter().all(|r| r["totalUsers"] == 0));
    }

    #[test]
    fn fast_writer_matches_serde() {
        let date = NaiveDate::from_ymd_opt(2025, 1, 31).unwrap_or_default();
        let ws = WorldState::new(generate(Profile::Small, 8, date));
        for user in ws.world.users.iter().take(30) {
            let s = series(&ws, user);
            let mut fast = Vec::new();
            s.write_json(&mut fast);
            let slow = serde_json::to_vec(&s).expect("serializes");
            assert_eq!(
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&slow)
            );
        }
        let mut out = Vec::new();
        let odd = DailyMetric {
            total_users: -5,
            total_storage_size_bytes: i64::MAX,
            users_added: i64::MIN,
            ..DailyMetric::default()
        };
        write_metric(&mut out, &odd);
        assert_eq!(out, serde_json::to_vec(&odd).expect("serializes"));
    }

    #[test]
    fn sweep_counts() {
        let mut s = Sweep::new(vec![3, 1, 3], vec![4]);
        assert_eq!(s.at(0), (0, 0, 0));
        assert_eq!(s.at(3), (3, 2, 0));
        assert_eq!(s.at(4), (2, 0, 1));
        assert_eq!(s.at(9), (2, 0, 0));
    }
}
