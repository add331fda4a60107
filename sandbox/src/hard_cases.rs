//! The hard cases: small named entities added to a generated world so that tests meet,
//! over HTTP, what the real platform serves and a naive client gets wrong (a project
//! whose information fails, developer-profile projects without an owner organization,
//! limits a hair below a status threshold, dates at `+02:00`, ...).
//!
//! Their ids sit just below the generated ranges (organizations from 901, users from
//! 19_901, projects from 299_901, trial 401), so every profile and seed has them at the
//! same ids, and the names start with "Hard case". They are built from their own
//! random stream after the world is generated: the generated entities are the same
//! with or without them. Time travel leaves them out of its random arrivals and
//! departures (an organization without projects keeps none), while their clock-driven
//! parts (trial expiry, compute growth) move as anywhere else. `sandbox/README.md` lists each case and how to find it.

use chrono::Duration;

use super::generate::{api_key, new_project, new_user};
use super::rng::SplitMix64;
use super::world::{
    Dataset, EntitlementLimits, Member, Metrics, Organization, Project, Time, Trial, User, World,
    day_of, day_start,
};

/// Which hard cases a generated world carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum HardCases {
    /// None: the generated world only.
    None,
    /// The cases of the default worlds: every case but a project whose information
    /// fails (that project then answers normally).
    #[default]
    Default,
    /// Every case, also a project whose information fails (orgledger's sync reports it
    /// as an error, so its run ends `partial`).
    All,
}

/// Organization ids.
pub mod org {
    /// A regular organization without any project.
    pub const NO_PROJECTS: i64 = 901;
    /// Owns the projects with odd answers (see [`super::project`]).
    pub const ODD_PROJECTS: i64 = 902;
    /// Storage used 79,996 of a 100,000-byte limit (79.996 %).
    pub const STORAGE_79_996: i64 = 903;
    /// Storage used 99,996 of a 100,000-byte limit (99.996 %).
    pub const STORAGE_99_996: i64 = 904;
    /// Storage used exactly at its 100,000-byte limit.
    pub const STORAGE_AT_LIMIT: i64 = 905;
    /// Limits of 2^60 (compute time per year and storage).
    pub const HUGE_LIMITS: i64 = 906;
    /// A developer profile whose second member is pending.
    pub const DEV_PENDING_MEMBER: i64 = 907;
    /// The first of one user's two developer profiles.
    pub const DEV_TWIN_A: i64 = 908;
    /// The second of one user's two developer profiles.
    pub const DEV_TWIN_B: i64 = 909;
    /// In a white label no credential of the world administers: not listed by
    /// list-organizations and refused by get-organization, seen only in its member's
    /// summaries (get-whitelabel-user), which carry its limits.
    pub const OUTSIDE_WHITE_LABEL: i64 = 910;
    /// A trial organization of the user who departs (see [`super::user::DEPARTING`]).
    pub const DEPARTING_TRIAL: i64 = 911;
}

/// User ids.
pub mod user {
    /// Member of [`super::org::NO_PROJECTS`], the storage organizations and
    /// [`super::org::OUTSIDE_WHITE_LABEL`].
    pub const MEMBER: i64 = 19_901;
    /// Admin of [`super::org::ODD_PROJECTS`], owner of its projects.
    pub const ODD_OWNER: i64 = 19_902;
    /// Daily-metrics dates at local midnight `+02:00`.
    pub const PLUS_TWO: i64 = 19_903;
    /// Daily metrics stop 10 days before the clock's start.
    pub const METRICS_STOP: i64 = 19_904;
    /// The developer profile [`super::org::DEV_PENDING_MEMBER`]'s own user.
    pub const DEV_OWNER: i64 = 19_905;
    /// The pending second member of that profile.
    pub const DEV_PENDING: i64 = 19_906;
    /// The user with two developer profiles.
    pub const DEV_TWINS: i64 = 19_907;
    /// Has trial [`super::TRIAL`]; departs through `POST /sandbox/remove-user?id=19908`.
    pub const DEPARTING: i64 = 19_908;
}

/// Project ids.
pub mod project {
    /// get-project-info answers `{"success": false, ...}`.
    pub const INFO_FAILS: i64 = 299_901;
    /// Soft-deleted 5 days before the start, with compute used; get-project-info serves it.
    pub const DELETED_SERVED: i64 = 299_902;
    /// Soft-deleted 5 days before the start; get-project-info answers 404.
    pub const DELETED_GONE: i64 = 299_903;
    /// `id` written as `299904.0`; get-project-info carries `anomalyLabelsConfig`.
    pub const ODD_FIELDS: i64 = 299_904;
    /// Of developer profile [`super::org::DEV_PENDING_MEMBER`], `ownerOrganizationId` null.
    pub const DEV_PENDING: i64 = 299_905;
    /// Of developer profile [`super::org::DEV_TWIN_A`], `ownerOrganizationId` null.
    pub const DEV_TWIN_A: i64 = 299_906;
    /// Of developer profile [`super::org::DEV_TWIN_B`], `ownerOrganizationId` null.
    pub const DEV_TWIN_B: i64 = 299_907;
}

/// The departing user's trial (organization [`org::DEPARTING_TRIAL`]).
pub const TRIAL: i64 = 401;

/// The white label id of [`org::OUTSIDE_WHITE_LABEL`] (no such white label exists).
pub const FOREIGN_WHITE_LABEL: i64 = 77;

/// 2^60, the huge limit.
pub const HUGE: i64 = 1 << 60;

/// Adds the hard cases of `which` to a generated world (white label 1 must exist).
pub fn add(world: &mut World, which: HardCases) {
    if which == HardCases::None || !world.white_labels.iter().any(|w| w.id == 1) {
        return;
    }
    let all = which == HardCases::All;
    let mut b = Builder {
        rng: SplitMix64::for_parts(&[world.seed, 0x4a7d_ca5e]),
        now: world.now,
        world,
    };
    b.users();
    b.organizations();
    b.projects(all);
    b.trial();
}

struct Builder<'a> {
    rng: SplitMix64,
    now: Time,
    world: &'a mut World,
}

impl Builder<'_> {
    fn days(&self, n: i64) -> Time {
        self.now - Duration::days(n)
    }

    fn user(&mut self, id: i64, name: &str, slug: &str) -> User {
        let created = self.days(400);
        let mut u = new_user(&mut self.rng, id, created);
        u.name = format!("Hard Case {name}");
        u.username = format!("hard.{slug}");
        u.email = format!("hard.{slug}@example.com");
        u.pending = false;
        u.activated = true;
        u.suspended = false;
        u.last_seen = Some(self.days(1));
        u.metrics = Metrics::Generated {
            since: day_start(day_of(created)),
        };
        u
    }

    fn users(&mut self) {
        let mut list = vec![
            self.user(user::MEMBER, "Member", "member"),
            self.user(user::ODD_OWNER, "Project Owner", "owner"),
            self.user(user::PLUS_TWO, "Plus Two", "plus-two"),
            self.user(user::METRICS_STOP, "Metrics Stop", "metrics-stop"),
            self.user(user::DEV_OWNER, "Developer", "developer"),
            self.user(user::DEV_PENDING, "Pending", "pending"),
            self.user(user::DEV_TWINS, "Twin Profiles", "twins"),
            self.user(user::DEPARTING, "Departing", "departing"),
        ];
        for u in &mut list {
            match u.id {
                user::PLUS_TWO => u.quirks.metrics_at_plus_two = true,
                user::METRICS_STOP => u.quirks.metrics_end = Some(self.now - Duration::days(10)),
                user::DEV_PENDING => {
                    u.pending = true;
                    u.activated = false;
                    u.last_seen = None;
                }
                _ => {}
            }
        }
        self.world.users.extend(list);
    }

    fn member(&self, user_id: i64, role: &str) -> Member {
        Member {
            user_id,
            role: role.to_string(),
            added: self.days(300),
            datasets: Vec::new(),
            last_access: (user_id != user::DEV_PENDING).then(|| self.days(2)),
            last_project_accessed: None,
        }
    }

    fn org(&self, id: i64, name: &str, members: &[(i64, &str)]) -> Organization {
        Organization {
            id,
            name: format!("Hard case: {name}"),
            whitelabel_id: Some(1),
            created: self.days(500),
            contract_start_date: Some(self.days(200)),
            members: members.iter().map(|&(u, r)| self.member(u, r)).collect(),
            api_key: api_key(self.world.seed, "org", id),
            job_limit_m: 60,
            ..Organization::default()
        }
    }

    fn storage_org(&self, id: i64, name: &str, used: i64) -> Organization {
        let mut o = self.org(id, name, &[(user::MEMBER, "member")]);
        o.datasets.push(Dataset {
            name: "threshold".to_string(),
            last_file_created: Some(self.days(3)),
            total_file_size: used,
            total_file_count: 1,
            ..Dataset::default()
        });
        o.entitlement_limits = Some(EntitlementLimits {
            total_storage: Some(100_000),
            ..EntitlementLimits::default()
        });
        o
    }

    fn dev_org(&self, id: i64, name: &str, members: &[(i64, &str)]) -> Organization {
        let mut o = self.org(id, name, members);
        o.is_developer_profile = true;
        o.contract_start_date = None;
        o
    }

    fn organizations(&mut self) {
        let mut orgs = vec![
            self.org(org::NO_PROJECTS, "no projects", &[(user::MEMBER, "admin")]),
            self.org(
                org::ODD_PROJECTS,
                "odd projects",
                &[
                    (user::ODD_OWNER, "admin"),
                    (user::PLUS_TWO, "member"),
                    (user::METRICS_STOP, "member"),
                ],
            ),
            self.storage_org(org::STORAGE_79_996, "storage at 79.996 %", 79_996),
            self.storage_org(org::STORAGE_99_996, "storage at 99.996 %", 99_996),
            self.storage_org(org::STORAGE_AT_LIMIT, "storage at the limit", 100_000),
            self.org(org::HUGE_LIMITS, "huge limits", &[(user::MEMBER, "member")]),
            self.dev_org(
                org::DEV_PENDING_MEMBER,
                "developer profile with a pending member",
                &[(user::DEV_OWNER, "admin"), (user::DEV_PENDING, "member")],
            ),
            self.dev_org(
                org::DEV_TWIN_A,
                "first developer profile",
                &[(user::DEV_TWINS, "admin")],
            ),
            self.dev_org(
                org::DEV_TWIN_B,
                "second developer profile",
                &[(user::DEV_TWINS, "admin")],
            ),
            self.org(
                org::OUTSIDE_WHITE_LABEL,
                "outside the white label",
                &[(user::MEMBER, "member")],
            ),
            self.org(
                org::DEPARTING_TRIAL,
                "trial of a departing user",
                &[(user::DEPARTING, "admin")],
            ),
        ];
        for o in &mut orgs {
            match o.id {
                org::HUGE_LIMITS => {
                    o.entitlement_limits = Some(EntitlementLimits {
                        total_storage: Some(HUGE),
                        compute_time_per_year: Some(HUGE),
                        ..EntitlementLimits::default()
                    });
                }
                org::OUTSIDE_WHITE_LABEL => {
                    o.whitelabel_id = Some(FOREIGN_WHITE_LABEL);
                    o.entitlement_limits = Some(EntitlementLimits {
                        number_of_users: Some(5),
                        number_of_projects: Some(10),
                        ..EntitlementLimits::default()
                    });
                }
                org::DEPARTING_TRIAL => {
                    o.contract_start_date = None;
                    o.trial_id = Some(TRIAL);
                }
                _ => {}
            }
        }
        self.world.organizations.extend(orgs);
    }

    fn project(&mut self, id: i64, org_id: i64, owner: i64, name: &str) -> Option<Project> {
        let org = self.world.organization(org_id)?.clone();
        let created = self.days(120);
        let mut p = new_project(self.world.seed, &mut self.rng, id, &org, owner, created);
        p.name = format!("Hard case: {name}");
        p.compute.used_ms = p.compute.used_ms.max(5 * 3_600_000).min(p.compute.total_ms);
        Some(p)
    }

    fn projects(&mut self, all: bool) {
        let specs = [
            (
                project::INFO_FAILS,
                org::ODD_PROJECTS,
                user::ODD_OWNER,
                "information fails",
            ),
            (
                project::DELETED_SERVED,
                org::ODD_PROJECTS,
                user::ODD_OWNER,
                "deleted, still served",
            ),
            (
                project::DELETED_GONE,
                org::ODD_PROJECTS,
                user::ODD_OWNER,
                "deleted, answered 404",
            ),
            (
                project::ODD_FIELDS,
                org::ODD_PROJECTS,
                user::ODD_OWNER,
                "id as a float, unnamed fields",
            ),
            (
                project::DEV_PENDING,
                org::DEV_PENDING_MEMBER,
                user::DEV_OWNER,
                "developer project",
            ),
            (
                project::DEV_TWIN_A,
                org::DEV_TWIN_A,
                user::DEV_TWINS,
                "first twin's project",
            ),
            (
                project::DEV_TWIN_B,
                org::DEV_TWIN_B,
                user::DEV_TWINS,
                "second twin's project",
            ),
        ];
        let deleted = self.days(5);
        for (id, org_id, owner, name) in specs {
            let Some(mut p) = self.project(id, org_id, owner, name) else {
                continue;
            };
            let q = &mut p.quirks;
            match id {
                project::INFO_FAILS => q.info_fails = all,
                project::DELETED_SERVED | project::DELETED_GONE => {
                    p.deleted_date = Some(deleted);
                    p.scheduled_full_deletion_date = Some(deleted + Duration::days(30));
                    p.compute.daily_ms = 0;
                    p.quirks.info_gone = id == project::DELETED_GONE;
                }
                project::ODD_FIELDS => {
                    q.id_as_float = true;
                    q.unnamed_fields = true;
                }
                _ => q.owner_organization_null = true,
            }
            self.world.projects.push(p);
        }
    }

    fn trial(&mut self) {
        self.world.trials.push(Trial {
            id: TRIAL,
            user_id: user::DEPARTING,
            organization_id: org::DEPARTING_TRIAL,
            created: self.days(20),
            expiration_date: self.now + Duration::days(10),
            expired_date: None,
            deleted_date: None,
            upgraded_date: None,
            notes: Some("Hard case: the user departs during the trial".to_string()),
        });
    }
}
