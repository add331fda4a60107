//! The sandbox world: plain data (pub fields, so tests can build a small world by hand),
//! the lookup indices the server needs, and the mutations (time travel, project
//! creation, removal).
//!
//! Conventions:
//! - All timestamps are UTC; the world clock is `World::now`.
//! - Organizations whose `whitelabel_id` is `None` belong to the scope of the FIRST
//!   white label of `World::white_labels` (the "default" white label).
//! - A user with `deleted` set, a project with `removed` set, and a project fully
//!   deleted more than [`FULL_DELETION_LINGER_DAYS`] ago are invisible everywhere.
//! - A project with `deleted_date` set is listed by get-organization,
//!   list-organizations and list-user-organizations (with its deletion dates) and
//!   still answered by get-project-info, but not listed as active
//!   (get-whitelabel-user, list-projects and list-user-projects).

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use super::generate::{FIRST_ORG_ID, FIRST_PROJECT_ID, FIRST_USER_ID};
use super::rng::{SplitMix64, hash};

pub use super::generate::generate;

pub type Time = DateTime<Utc>;

pub(crate) const DAY_SECS: i64 = 86_400;

/// Days since 1970-01-01 of a timestamp.
pub fn day_of(t: Time) -> i64 {
    t.timestamp().div_euclid(DAY_SECS)
}

/// Midnight UTC of a day number.
pub fn day_start(day: i64) -> Time {
    DateTime::from_timestamp(day * DAY_SECS, 0).unwrap_or_default()
}

#[derive(Debug, Clone, Default)]
pub struct World {
    /// Seed of everything generated on the fly (daily metrics, time travel events, keys).
    pub seed: u64,
    /// The world clock.
    pub now: Time,
    pub white_labels: Vec<WhiteLabel>,
    pub organizations: Vec<Organization>,
    pub users: Vec<User>,
    pub projects: Vec<Project>,
    pub trials: Vec<Trial>,
}

#[derive(Debug, Clone, Default)]
pub struct WhiteLabel {
    pub id: i64,
    pub name: String,
    pub admin_organization_id: i64,
    /// The administrator the JWT belongs to.
    pub admin_user_id: i64,
    /// JWT accepted in `x-jwt-token`; its scope is this white label.
    pub jwt: String,
}

#[derive(Debug, Clone, Default)]
pub struct Organization {
    pub id: i64,
    pub name: String,
    pub whitelabel_id: Option<i64>,
    pub is_developer_profile: bool,
    pub created: Time,
    pub logo: Option<String>,
    pub header_img: Option<String>,
    pub show_header_img_mask: bool,
    pub contract_start_date: Option<Time>,
    pub deleted_date: Option<Time>,
    /// The organization's trial; its expired/upgraded dates are read from the trial.
    pub trial_id: Option<i64>,
    pub members: Vec<Member>,
    pub datasets: Vec<Dataset>,
    /// `None`: no limits (the field is absent from get-organization, null in
    /// get-whitelabel-user).
    pub entitlement_limits: Option<EntitlementLimits>,
    pub readme: Option<Readme>,
    /// Organization API key (`x-api-key`).
    pub api_key: String,
    pub job_limit_m: i64,
}

#[derive(Debug, Clone, Default)]
pub struct Member {
    pub user_id: i64,
    pub role: String,
    pub added: Time,
    pub datasets: Vec<String>,
    pub last_access: Option<Time>,
    pub last_project_accessed: Option<i64>,
}

/// A missing field means no limit for that metric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntitlementLimits {
    /// Bytes.
    pub total_storage: Option<i64>,
    /// Seconds.
    pub compute_time_per_year: Option<i64>,
    /// Seconds.
    pub gpu_compute_time_per_year: Option<i64>,
    pub number_of_projects: Option<i64>,
    pub number_of_users: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Readme {
    pub markdown: String,
    pub html: String,
}

#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub name: String,
    pub last_file_created: Option<Time>,
    pub total_file_size: i64,
    pub total_file_count: i64,
    pub total_item_count: i64,
    pub checklist_ok: i64,
    pub checklist_failed: i64,
    pub tags: Vec<String>,
    pub kind: String,
    pub category: String,
    pub bucket_id: i64,
    pub bucket_name: String,
    pub bucket_path: String,
    pub levels_deep: i64,
    /// Growth per simulated day (time travel), in bytes.
    pub daily_bytes: i64,
}

#[derive(Debug, Clone, Default)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub name: String,
    pub email: String,
    pub created: Time,
    pub is_staff: bool,
    pub has_sudo_rights: bool,
    pub staff_company_name: String,
    pub pending: bool,
    pub activated: bool,
    pub mfa_configured: bool,
    pub photo: Option<String>,
    pub last_seen: Option<Time>,
    pub job_title: Option<String>,
    pub permissions: Vec<String>,
    pub company_name: Option<String>,
    pub payment_customer_id: Option<String>,
    pub has_pending_payments: bool,
    pub tier: String,
    pub idps: Vec<String>,
    pub suspended: bool,
    pub evaluation: bool,
    pub ambassador: bool,
    /// Set when the user was deleted (time travel); the user then disappears.
    pub deleted: Option<Time>,
    pub metrics: Metrics,
    /// How this user's answers depart from the usual (the hard cases).
    pub quirks: UserQuirks,
}

/// Ways a user's answers depart from the usual, for the hard cases (sandbox README).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserQuirks {
    /// Daily-metrics dates are written at local midnight with a `+02:00` offset
    /// (`2025-04-09T00:00:00.000+02:00`, the instant 22:00 UTC the day before).
    pub metrics_at_plus_two: bool,
    /// No daily-metrics records after this instant (a user who stopped being active).
    pub metrics_end: Option<Time>,
}

/// Daily metrics of a user.
#[derive(Debug, Clone)]
pub enum Metrics {
    /// Computed when rendered, from (seed, user id, date) and the world (projects and
    /// members over time), so a large world does not store millions of records.
    /// `since` is `computeTimeCalculatedSince` (contract start, or creation date).
    Generated { since: Time },
    /// Records given as they are (hand-made worlds); those within the last 365 days up
    /// to the clock are served.
    Explicit(Vec<DailyMetric>),
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::Explicit(Vec::new())
    }
}

/// One daily metrics record, serialized exactly as the API sends it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyMetric {
    #[serde(serialize_with = "super::render::ser_time")]
    pub date: Time,
    pub total_users: i64,
    pub total_staff_users: i64,
    pub total_projects: i64,
    pub total_current_contract_cpu_compute_time_seconds: i64,
    pub total_current_contract_gpu_compute_time_seconds: i64,
    pub total_current_contract_compute_time_seconds: i64,
    pub total_storage_size_bytes: i64,
    pub users_added: i64,
    pub users_deleted: i64,
    pub projects_added: i64,
    pub projects_deleted: i64,
    pub cpu_compute_time_seconds: i64,
    pub gpu_compute_time_seconds: i64,
    pub compute_time_seconds: i64,
    pub storage_bytes_added: i64,
    pub storage_bytes_deleted: i64,
    pub staff_users_added: i64,
    pub staff_users_deleted: i64,
    #[serde(serialize_with = "super::render::ser_time")]
    pub compute_time_calculated_since: Time,
}

#[derive(Debug, Clone, Default)]
pub struct Trial {
    pub id: i64,
    pub user_id: i64,
    pub organization_id: i64,
    pub created: Time,
    pub expiration_date: Time,
    pub expired_date: Option<Time>,
    pub deleted_date: Option<Time>,
    pub upgraded_date: Option<Time>,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Project {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub created: Time,
    pub owner_organization_id: i64,
    /// The collaborator flagged `isOwner`.
    pub owner_user_id: Option<i64>,
    /// User ids, the owner included.
    pub collaborators: Vec<i64>,
    pub labeling_method: String,
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub is_enterprise: bool,
    pub tier: String,
    pub has_public_version: bool,
    pub is_public: bool,
    pub allows_live_public_access: bool,
    pub ind_pause_processing_samples: bool,
    pub public_project_listed: bool,
    pub last_accessed: Option<Time>,
    pub last_modified: Option<Time>,
    pub last_modification_details: Option<String>,
    pub logo: Option<String>,
    pub data_explorer_screenshot: Option<String>,
    pub tags: Vec<String>,
    pub category: String,
    pub license: Option<String>,
    pub deleted_date: Option<Time>,
    pub full_deletion_date: Option<Time>,
    pub scheduled_full_deletion_date: Option<Time>,
    /// Removed through `/sandbox/remove-project`: gone from every read.
    pub removed: bool,
    /// Project API key (`x-api-key`, and `developmentKeys.apiKey`).
    pub api_key: String,
    pub hmac_key: String,
    pub devices: Vec<Device>,
    pub data_training: DataSummary,
    pub data_testing: DataSummary,
    pub data_post_processing: DataSummary,
    pub compute: ComputeBudget,
    /// Impulses are numbered `1..=impulses`; 0 means none yet.
    pub impulses: i64,
    pub readme: Option<Readme>,
    pub train_job_notification_uids: Vec<i64>,
    pub dsp_job_notification_uids: Vec<i64>,
    pub model_testing_job_notification_uids: Vec<i64>,
    pub export_job_notification_uids: Vec<i64>,
    /// How this project's answers depart from the usual (the hard cases).
    pub quirks: ProjectQuirks,
}

/// Ways a project's answers depart from the usual, for the hard cases (sandbox README).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectQuirks {
    /// get-project-info answers HTTP 200 with `{"success": false, "error": ...}`.
    pub info_fails: bool,
    /// get-project-info answers 404 (a soft-deleted project the platform no longer serves).
    pub info_gone: bool,
    /// `ownerOrganizationId` is null, as the platform shows developer-profile projects
    /// (`developerProfileUserId` names the profile's user).
    pub owner_organization_null: bool,
    /// `id` is written as a whole float (`299904.0`) in every project record.
    pub id_as_float: bool,
    /// get-project-info carries fields the API's description does not name
    /// (`anomalyLabelsConfig`; docs/api.md).
    pub unnamed_fields: bool,
}

/// The platform's `inferenceInfo.modelType` values.
pub const MODEL_TYPES: [&str; 3] = [
    "classification",
    "objectDetection",
    "constrainedObjectDetection",
];

#[derive(Debug, Clone, Default)]
pub struct Device {
    pub id: i64,
    pub device_id: String,
    pub created: Time,
    /// Never absent on the platform: a device never heard from since it was
    /// registered was last seen when it was created.
    pub last_seen: Time,
    pub name: String,
    pub device_type: String,
    pub sensors: Vec<Sensor>,
    pub remote_mgmt_connected: bool,
    pub supports_snapshot_streaming: bool,
    pub remote_mgmt_mode: String,
    pub remote_mgmt_host: Option<String>,
    /// `None`: nothing deployed (no `inferenceInfo`).
    pub deployed_version: Option<i64>,
    /// One of [`MODEL_TYPES`].
    pub model_type: String,
}

#[derive(Debug, Clone, Default)]
pub struct Sensor {
    pub name: String,
    /// Whole seconds (an integer in the platform's schema).
    pub max_sample_length_s: i64,
    pub frequencies: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct DataSummary {
    pub total_length_ms: f64,
    pub labels: Vec<String>,
    pub data_count: i64,
}

/// A project's compute budget over its current period.
#[derive(Debug, Clone, Default)]
pub struct ComputeBudget {
    pub period_start: Time,
    pub period_end: Time,
    pub used_ms: i64,
    pub total_ms: i64,
    /// Growth per simulated day (time travel).
    pub daily_ms: i64,
}

impl ComputeBudget {
    pub fn time_used_ms(&self) -> i64 {
        self.used_ms.clamp(0, self.total_ms.max(0))
    }
    pub fn time_left_ms(&self) -> i64 {
        (self.total_ms - self.used_ms).max(0)
    }
}

/// Who owns a project created by create-project.
#[derive(Debug, Clone)]
pub enum OwnerRef {
    Id(i64),
    Email(String),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CreateError {
    #[error("organization {0} not found")]
    UnknownOrganization(i64),
    #[error("owner not found: {0}")]
    UnknownOwner(String),
}

impl World {
    pub fn organization(&self, id: i64) -> Option<&Organization> {
        self.organizations.iter().find(|o| o.id == id)
    }

    pub fn user(&self, id: i64) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }

    pub fn project(&self, id: i64) -> Option<&Project> {
        self.projects.iter().find(|p| p.id == id)
    }

    /// A fingerprint of the whole world (for determinism tests).
    pub fn digest(&self) -> String {
        let text = format!("{self:?}");
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// Moves the clock forward by `days` whole days. Each simulated day is seeded by
    /// (seed, day), so `advance(2)` equals `advance(1)` twice and the sequence repeats.
    pub fn advance(&mut self, days: u32) {
        for _ in 0..days {
            self.now += Duration::days(1);
            self.simulate_day(day_of(self.now));
        }
    }

    fn simulate_day(&mut self, day: i64) {
        let now = self.now;
        let mut rng = SplitMix64::for_parts(&[self.seed, 0x7133_da11, day as u64]);
        self.step_trials(day);
        self.step_projects(day);
        self.step_datasets(day);
        self.delete_some_projects(&mut rng, now);
        let live: HashMap<i64, usize> = self
            .users
            .iter()
            .enumerate()
            .filter(|(_, u)| u.deleted.is_none())
            .map(|(i, u)| (u.id, i))
            .collect();
        self.add_some_projects(&mut rng, now, &live);
        self.delete_some_users(&mut rng, now, &live);
        self.add_some_users(&mut rng, now);
        self.touch_some(&mut rng, now);
    }

    fn step_trials(&mut self, day: i64) {
        let now = self.now;
        let seed = self.seed;
        let mut org_updates: Vec<(i64, Option<Time>, Option<Time>)> = Vec::new();
        for t in &mut self.trials {
            if t.upgraded_date.is_some() || t.deleted_date.is_some() {
                continue;
            }
            let expired_at = t.expired_date.unwrap_or(t.expiration_date);
            if expired_at <= now {
                // The platform marks expiry lazily: about half the expired trials get
                // `expiredDate`, the others only have a past `expirationDate`.
                if t.expired_date.is_none() && hash(&[seed, t.id as u64, 0xe7]).is_multiple_of(2) {
                    t.expired_date = Some(t.expiration_date);
                }
                let deletion = expired_at + Duration::days(30);
                if deletion <= now {
                    t.deleted_date = Some(deletion);
                    org_updates.push((t.organization_id, Some(deletion), None));
                }
            } else if hash(&[seed, t.id as u64, day as u64, 0x0b]) % 100 < 2 {
                t.upgraded_date = Some(now);
                org_updates.push((t.organization_id, None, Some(now)));
            }
        }
        for (org_id, deleted, contract) in org_updates {
            if let Some(o) = self.organizations.iter_mut().find(|o| o.id == org_id) {
                if deleted.is_some() && o.deleted_date.is_none() {
                    o.deleted_date = deleted;
                }
                if contract.is_some() {
                    o.contract_start_date = contract;
                }
            }
            if let Some(when) = deleted {
                self.delete_org_projects(org_id, when);
            }
        }
    }

    /// Deleting an organization deletes its projects (full deletion 30 days later).
    pub(crate) fn delete_org_projects(&mut self, org_id: i64, when: Time) {
        let now = self.now;
        for p in &mut self.projects {
            if p.owner_organization_id != org_id || p.deleted_date.is_some() {
                continue;
            }
            let deleted = when.max(p.created);
            let full = deleted + Duration::days(30);
            p.deleted_date = Some(deleted);
            p.scheduled_full_deletion_date = Some(full);
            p.full_deletion_date = Some(full).filter(|d| *d <= now);
            p.compute.daily_ms = 0;
        }
    }

    fn step_projects(&mut self, day: i64) {
        let now = self.now;
        let seed = self.seed;
        for p in &mut self.projects {
            match p.scheduled_full_deletion_date {
                Some(s) if p.full_deletion_date.is_none() && s <= now => {
                    p.full_deletion_date = Some(s);
                }
                _ => {}
            }
            if p.deleted_date.is_some() || p.removed {
                continue;
            }
            let c = &mut p.compute;
            if now >= c.period_end && c.period_end > c.period_start {
                let len = c.period_end - c.period_start;
                while now >= c.period_end {
                    c.period_start = c.period_end;
                    c.period_end += len;
                }
                c.used_ms = 0;
            }
            let noise = (hash(&[seed, p.id as u64, day as u64, 0xc0]) % 200) as i64;
            c.used_ms += c.daily_ms * noise / 100;
        }
    }

    fn step_datasets(&mut self, day: i64) {
        let now = self.now;
        let seed = self.seed;
        for o in &mut self.organizations {
            if o.deleted_date.is_some() {
                continue;
            }
            for (i, d) in o.datasets.iter_mut().enumerate() {
                if d.daily_bytes <= 0 {
                    continue;
                }
                let h = hash(&[seed, o.id as u64, i as u64, day as u64, 0xda]);
                if h.is_multiple_of(3) {
                    continue;
                }
                let files = 1 + (h >> 8) as i64 % 40;
                d.total_file_size += d.daily_bytes * (50 + (h >> 20) as i64 % 100) / 100;
                d.total_file_count += files;
                d.total_item_count += files;
                d.checklist_ok += files;
                d.last_file_created = Some(now);
            }
        }
    }

    /// Events scale with the world: about `rate` per entity per day, at least a chance.
    fn event_count(rng: &mut SplitMix64, population: usize, rate: f64) -> usize {
        let expected = population as f64 * rate;
        let base = expected.floor();
        (base
            + if rng.chance(expected - base) {
                1.0
            } else {
                0.0
            }) as usize
    }

    fn delete_some_projects(&mut self, rng: &mut SplitMix64, now: Time) {
        let active: Vec<usize> = (0..self.projects.len())
            .filter(|&i| {
                let p = &self.projects[i];
                !p.removed && p.deleted_date.is_none() && !is_hard_case(p.id, FIRST_PROJECT_ID)
            })
            .collect();
        let n = Self::event_count(rng, active.len(), 0.0008).min(active.len());
        for _ in 0..n {
            let i = active[rng.index(active.len())];
            let p = &mut self.projects[i];
            if p.deleted_date.is_none() {
                p.deleted_date = Some(now);
                p.scheduled_full_deletion_date = Some(now + Duration::days(30));
            }
        }
    }

    fn add_some_projects(&mut self, rng: &mut SplitMix64, now: Time, live: &HashMap<i64, usize>) {
        let existing = self.projects.iter().filter(|p| !p.removed).count();
        let n = Self::event_count(rng, existing.max(20), 0.0015);
        for _ in 0..n {
            let orgs: Vec<usize> = (0..self.organizations.len())
                .filter(|&i| {
                    let o = &self.organizations[i];
                    o.deleted_date.is_none()
                        && !o.members.is_empty()
                        && !is_hard_case(o.id, FIRST_ORG_ID)
                })
                .collect();
            if orgs.is_empty() {
                return;
            }
            let oi = orgs[rng.index(orgs.len())];
            let members: Vec<i64> = self.organizations[oi]
                .members
                .iter()
                .map(|m| m.user_id)
                .filter(|id| live.contains_key(id))
                .collect();
            if members.is_empty() {
                continue;
            }
            let owner = members[rng.index(members.len())];
            let id = self.next_project_id();
            let org = &self.organizations[oi];
            let mut p = super::generate::new_project(self.seed, rng, id, org, owner, now);
            if members.len() > 1 && rng.chance(0.5) {
                let other = members[rng.index(members.len())];
                if other != owner {
                    p.collaborators.push(other);
                }
            }
            self.projects.push(p);
        }
    }

    fn delete_some_users(&mut self, rng: &mut SplitMix64, now: Time, live: &HashMap<i64, usize>) {
        // Only plain members of regular organizations leave; admins, developer
        // profiles and white label administrators stay so the world keeps its shape.
        let mut candidates: Vec<i64> = Vec::new();
        for o in &self.organizations {
            if o.is_developer_profile || o.deleted_date.is_some() {
                continue;
            }
            for m in &o.members {
                if m.role != "admin" {
                    candidates.push(m.user_id);
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let admins: Vec<i64> = self.white_labels.iter().map(|w| w.admin_user_id).collect();
        candidates.retain(|&id| {
            !admins.contains(&id) && live.contains_key(&id) && !is_hard_case(id, FIRST_USER_ID)
        });
        let n = Self::event_count(rng, candidates.len(), 0.0004).min(candidates.len());
        for _ in 0..n {
            let id = candidates[rng.index(candidates.len())];
            if let Some(u) = live.get(&id).and_then(|&i| self.users.get_mut(i)) {
                u.deleted = Some(now);
            }
        }
    }

    fn add_some_users(&mut self, rng: &mut SplitMix64, now: Time) {
        let live = self.users.iter().filter(|u| u.deleted.is_none()).count();
        let n = Self::event_count(rng, live.max(40), 0.0007);
        for _ in 0..n {
            let orgs: Vec<usize> = (0..self.organizations.len())
                .filter(|&i| {
                    let o = &self.organizations[i];
                    !o.is_developer_profile
                        && o.deleted_date.is_none()
                        && o.trial_id.is_none()
                        && !is_hard_case(o.id, FIRST_ORG_ID)
                })
                .collect();
            if orgs.is_empty() {
                return;
            }
            let oi = orgs[rng.index(orgs.len())];
            let id = self.next_user_id();
            let user = super::generate::new_user(rng, id, now);
            let pending = user.pending;
            self.users.push(user);
            self.organizations[oi].members.push(Member {
                user_id: id,
                role: "member".to_string(),
                added: now,
                datasets: Vec::new(),
                last_access: if pending { None } else { Some(now) },
                last_project_accessed: None,
            });
        }
    }

    fn touch_some(&mut self, rng: &mut SplitMix64, now: Time) {
        let n_users = self.users.len();
        for _ in 0..Self::event_count(rng, n_users, 0.05) {
            let i = rng.index(n_users);
            if let Some(u) = self
                .users
                .get_mut(i)
                .filter(|u| u.deleted.is_none() && !u.pending)
            {
                u.last_seen = Some(now);
            }
        }
        let n_projects = self.projects.len();
        for _ in 0..Self::event_count(rng, n_projects, 0.03) {
            let i = rng.index(n_projects);
            if let Some(p) = self
                .projects
                .get_mut(i)
                .filter(|p| p.deleted_date.is_none())
            {
                p.last_accessed = Some(now);
            }
        }
    }

    pub fn next_project_id(&self) -> i64 {
        self.projects.iter().map(|p| p.id).max().unwrap_or(300_000) + 1
    }

    pub fn next_user_id(&self) -> i64 {
        self.users.iter().map(|u| u.id).max().unwrap_or(20_000) + 1
    }

    /// create-project (docs/api.md, op 8): a new project inside organization `org_id`,
    /// owned by `owner` (`ownerId` wins over `ownerEmail` at the route). Returns its id
    /// and API key.
    pub fn create_project(
        &mut self,
        org_id: i64,
        owner: &OwnerRef,
        name: &str,
        is_public: bool,
    ) -> Result<(i64, String), CreateError> {
        let org = self
            .organization(org_id)
            .ok_or(CreateError::UnknownOrganization(org_id))?;
        let owner_id = match owner {
            OwnerRef::Id(id) => self
                .user(*id)
                .filter(|u| u.deleted.is_none())
                .map(|u| u.id)
                .ok_or_else(|| CreateError::UnknownOwner(format!("user {id}")))?,
            OwnerRef::Email(email) => self
                .users
                .iter()
                .find(|u| u.deleted.is_none() && u.email.eq_ignore_ascii_case(email.trim()))
                .map(|u| u.id)
                .ok_or_else(|| CreateError::UnknownOwner(email.clone()))?,
        };
        let id = self.next_project_id();
        let mut rng = SplitMix64::for_parts(&[self.seed, 0x0c8e, id as u64]);
        let mut p = super::generate::new_project(self.seed, &mut rng, id, org, owner_id, self.now);
        p.name = name.to_string();
        p.is_public = is_public;
        p.public_project_listed = is_public;
        p.description = String::new();
        let key = p.api_key.clone();
        self.projects.push(p);
        Ok((id, key))
    }

    /// `/sandbox/remove-project`: returns false when no such (visible) project exists.
    /// The user leaves now (as a deleted user does in time travel): gone from every
    /// read, with their memberships, trials and summaries.
    pub fn remove_user(&mut self, id: i64) -> bool {
        let now = self.now;
        match self
            .users
            .iter_mut()
            .find(|u| u.id == id && u.deleted.is_none())
        {
            Some(u) => {
                u.deleted = Some(now);
                true
            }
            None => false,
        }
    }

    pub fn remove_project(&mut self, id: i64) -> bool {
        match self.projects.iter_mut().find(|p| p.id == id && !p.removed) {
            Some(p) => {
                p.removed = true;
                true
            }
            None => false,
        }
    }
}

/// Whether an id of a generated world's kind (first generated id `first`) belongs to
/// the hard cases, which sit just below the generated range: time travel leaves them
/// out of its random arrivals and departures so each case stays what it is.
fn is_hard_case(id: i64, first: i64) -> bool {
    (first - 100..first).contains(&id)
}

/// The world plus the lookup indices the server needs; rebuilt after each mutation.
#[derive(Debug)]
pub struct WorldState {
    pub world: World,
    /// Bumped on every mutation; keys the response cache.
    pub version: u64,
    pub(crate) idx: Index,
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    pub org: HashMap<i64, usize>,
    pub user: HashMap<i64, usize>,
    pub project: HashMap<i64, usize>,
    pub trial: HashMap<i64, usize>,
    pub org_key: HashMap<String, i64>,
    pub project_key: HashMap<String, i64>,
    pub jwt: HashMap<String, usize>,
    /// White label index of each organization (by organization index).
    pub org_wl: Vec<Option<usize>>,
    /// Visible projects of each organization, deleted ones included.
    pub org_projects: HashMap<i64, Vec<usize>>,
    /// (organization index, member index) of each visible user.
    pub user_memberships: HashMap<i64, Vec<(usize, usize)>>,
    /// Visible projects each user collaborates on.
    pub user_collabs: HashMap<i64, Vec<usize>>,
    /// Non-removed projects each user owns (daily metrics history).
    pub user_owned: HashMap<i64, Vec<usize>>,
    pub user_trials: HashMap<i64, Vec<usize>>,
    /// (organization id, user id) -> number of the organization's visible projects the
    /// member collaborates on.
    pub member_projects: HashMap<(i64, i64), i64>,
}

impl WorldState {
    pub fn new(world: World) -> Self {
        let mut s = Self {
            world,
            version: 0,
            idx: Index::default(),
        };
        s.reindex();
        s
    }

    /// Rebuilds the indices; call after every mutation of `world`.
    pub fn reindex(&mut self) {
        self.version += 1;
        let w = &self.world;
        let mut idx = Index::default();
        for (i, o) in w.organizations.iter().enumerate() {
            idx.org.insert(o.id, i);
            if !o.api_key.is_empty() {
                idx.org_key.insert(o.api_key.clone(), o.id);
            }
        }
        for (i, u) in w.users.iter().enumerate() {
            idx.user.insert(u.id, i);
        }
        for (i, t) in w.trials.iter().enumerate() {
            idx.trial.insert(t.id, i);
            idx.user_trials.entry(t.user_id).or_default().push(i);
        }
        for (i, wl) in w.white_labels.iter().enumerate() {
            if !wl.jwt.is_empty() {
                idx.jwt.insert(wl.jwt.clone(), i);
            }
        }
        idx.org_wl = w
            .organizations
            .iter()
            .map(|o| match o.whitelabel_id {
                Some(id) => w.white_labels.iter().position(|wl| wl.id == id),
                None if w.white_labels.is_empty() => None,
                None => Some(0),
            })
            .collect();
        let user_visible = |id: i64| {
            idx.user
                .get(&id)
                .is_some_and(|&i| w.users[i].deleted.is_none())
        };
        for (oi, o) in w.organizations.iter().enumerate() {
            for (mi, m) in o.members.iter().enumerate() {
                if user_visible(m.user_id) {
                    idx.user_memberships
                        .entry(m.user_id)
                        .or_default()
                        .push((oi, mi));
                }
            }
        }
        for (pi, p) in w.projects.iter().enumerate() {
            idx.project.insert(p.id, pi);
            if p.removed {
                continue;
            }
            if let Some(owner) = p.owner_user_id {
                idx.user_owned.entry(owner).or_default().push(pi);
            }
            if !project_visible(p, w.now) {
                continue;
            }
            if !p.api_key.is_empty() {
                idx.project_key.insert(p.api_key.clone(), p.id);
            }
            idx.org_projects
                .entry(p.owner_organization_id)
                .or_default()
                .push(pi);
            for &c in &p.collaborators {
                if user_visible(c) {
                    idx.user_collabs.entry(c).or_default().push(pi);
                    *idx.member_projects
                        .entry((p.owner_organization_id, c))
                        .or_default() += 1;
                }
            }
        }
        self.idx = idx;
    }

    pub fn org(&self, id: i64) -> Option<&Organization> {
        self.idx.org.get(&id).map(|&i| &self.world.organizations[i])
    }

    pub fn org_index(&self, id: i64) -> Option<usize> {
        self.idx.org.get(&id).copied()
    }

    /// A visible (not deleted) user.
    pub fn user(&self, id: i64) -> Option<&User> {
        self.idx
            .user
            .get(&id)
            .map(|&i| &self.world.users[i])
            .filter(|u| u.deleted.is_none())
    }

    /// A visible project (deleted ones included until their full deletion).
    pub fn project(&self, id: i64) -> Option<&Project> {
        self.idx
            .project
            .get(&id)
            .map(|&i| &self.world.projects[i])
            .filter(|p| !p.removed && project_visible(p, self.world.now))
    }

    pub fn trial(&self, id: i64) -> Option<&Trial> {
        self.idx.trial.get(&id).map(|&i| &self.world.trials[i])
    }

    /// White label index whose scope holds the organization.
    pub fn org_wl(&self, org_id: i64) -> Option<usize> {
        self.idx
            .org
            .get(&org_id)
            .and_then(|&i| self.idx.org_wl.get(i).copied().flatten())
    }

    /// Organization indices in a white label's scope.
    pub fn wl_orgs(&self, wl: usize) -> impl Iterator<Item = usize> + '_ {
        self.idx
            .org_wl
            .iter()
            .enumerate()
            .filter(move |(_, w)| **w == Some(wl))
            .map(|(i, _)| i)
    }

    /// Whether a visible user belongs to an organization of the white label.
    pub fn user_in_wl(&self, user_id: i64, wl: usize) -> bool {
        self.memberships(user_id)
            .iter()
            .any(|&(oi, _)| self.idx.org_wl.get(oi).copied().flatten() == Some(wl))
    }

    pub fn memberships(&self, user_id: i64) -> &[(usize, usize)] {
        self.idx
            .user_memberships
            .get(&user_id)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Visible projects of an organization (deleted ones included).
    pub fn org_projects(&self, org_id: i64) -> &[usize] {
        self.idx
            .org_projects
            .get(&org_id)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn user_collabs(&self, user_id: i64) -> &[usize] {
        self.idx
            .user_collabs
            .get(&user_id)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn member_project_count(&self, org_id: i64, user_id: i64) -> i64 {
        self.idx
            .member_projects
            .get(&(org_id, user_id))
            .copied()
            .unwrap_or(0)
    }
}

/// How long a fully deleted project is still listed (with its `fullDeletionDate`).
pub const FULL_DELETION_LINGER_DAYS: i64 = 30;

/// Not removed, and not fully deleted more than [`FULL_DELETION_LINGER_DAYS`] ago.
pub fn project_visible(p: &Project, now: Time) -> bool {
    !p.removed
        && p.full_deletion_date
            .is_none_or(|d| d + Duration::days(FULL_DELETION_LINGER_DAYS) > now)
}

/// Visible and not deleted: what "active project" listings return.
pub fn project_active(p: &Project, now: Time) -> bool {
    project_visible(p, now) && p.deleted_date.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;
    use chrono::NaiveDate;

    fn date() -> chrono::NaiveDate {
        NaiveDate::from_ymd_opt(2025, 3, 14).unwrap_or_default()
    }

    #[test]
    fn advance_is_compositional_and_repeatable() {
        let base = generate(Profile::Small, 11, date());
        let mut a = base.clone();
        a.advance(3);
        let mut b = base.clone();
        b.advance(1);
        b.advance(2);
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.now, base.now + Duration::days(3));
        assert_ne!(a.digest(), base.digest());
    }

    #[test]
    fn advance_expires_trials_and_grows_compute() {
        let base = generate(Profile::Small, 5, date());
        let mut w = base.clone();
        w.advance(60);
        let used = |w: &World| -> i64 {
            w.projects
                .iter()
                .filter(|p| p.deleted_date.is_none())
                .map(|p| p.compute.used_ms)
                .sum()
        };
        assert!(used(&w) > used(&base) / 2, "compute keeps being used");
        // Every trial that was active or expiring at the start has reached a final state
        // or been upgraded, or is still in its 30 days of grace.
        for t in &w.trials {
            if t.upgraded_date.is_none() && t.expiration_date + Duration::days(30) <= w.now {
                assert!(t.deleted_date.is_some(), "trial {} past grace", t.id);
            }
        }
        assert!(w.users.len() >= base.users.len());
        assert!(w.projects.len() >= base.projects.len());
    }

    #[test]
    fn created_project_is_indexed() {
        let w = generate(Profile::Tiny, 1, date());
        let mut s = WorldState::new(w);
        let wl = s.world.white_labels[0].clone();
        let (id, key) = s
            .world
            .create_project(
                wl.admin_organization_id,
                &OwnerRef::Id(wl.admin_user_id),
                "Zoë's project",
                true,
            )
            .expect("created");
        s.reindex();
        assert!(s.project(id).is_some());
        assert_eq!(s.idx.project_key.get(&key), Some(&id));
        assert!(
            s.org_projects(wl.admin_organization_id)
                .iter()
                .any(|&i| s.world.projects[i].id == id)
        );
        let err = s
            .world
            .create_project(
                wl.admin_organization_id,
                &OwnerRef::Email("nobody@x".into()),
                "x",
                false,
            )
            .unwrap_err();
        assert_eq!(err, CreateError::UnknownOwner("nobody@x".into()));
        assert!(s.world.remove_project(id));
        s.reindex();
        assert!(s.project(id).is_none());
        assert!(!s.world.remove_project(id));
    }
}
