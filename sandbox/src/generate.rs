//! The world generator: a deterministic function of (profile, seed, start date).
//!
//! Every date is relative to the clock start so the world always looks current. The
//! generator draws from one SplitMix64 stream in a fixed order; anything computed on the
//! fly later (daily metrics, time travel) hashes (seed, id, day) instead.

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use sha2::{Digest, Sha256};

use super::Profile;
use super::metrics;
use super::rng::{SplitMix64, hash};
use super::world::*;

pub(crate) const FIRST_ORG_ID: i64 = 1001;
pub(crate) const FIRST_USER_ID: i64 = 20_001;
pub(crate) const FIRST_PROJECT_ID: i64 = 300_001;
pub(crate) const FIRST_TRIAL_ID: i64 = 501;

#[rustfmt::skip]
const FIRST_NAMES: &[&str] = &[
    "Zoë", "Łukasz", "José", "Søren", "Chloé", "Björn", "Ana", "Mateo", "Aiko", "François",
    "Jürgen", "Maya", "Olivia", "Liam", "Amara", "Siobhán", "Hannah", "Ravi", "Priya", "Wei",
    "Yūki", "Élodie", "Kofi", "Inês", "Tomás", "Małgorzata", "Ólafur", "Ayşe", "Emre", "Sven",
    "Katarzyna", "Fatima", "Lucía", "Renée", "Noah", "Mette", "Dmitri", "Ngozi", "Hiroshi",
];
#[rustfmt::skip]
const LAST_NAMES: &[&str] = &[
    "Müller", "García", "Nowak", "Øster", "Kowalski", "Smith", "O'Brien", "van der Berg",
    "Dvořák", "Śliwińska", "Tanaka", "Sato", "Johnson", "Rossi", "Dubois", "Fernández", "Kim",
    "Chen", "Okafor", "Mensah", "Yılmaz", "Lindqvist", "Jensen", "Novák", "Horváth",
    "Papadopoulos", "Ivanova", "Brown", "Schröder", "Żak", "Nguyễn", "Þórsdóttir",
];
#[rustfmt::skip]
const ORG_PREFIXES: &[&str] = &[
    "Acme", "東京", "Zürich", "Nørd", "Édition", "Kraków", "São Paulo", "Smith, Jones &",
    "Helios", "Blue Fjord", "Café \"Capteur\"", "Oulu", "München", "Ålesund", "Reykjavík",
    "Nova", "Quantum", "Tiny", "Edge", "Delta", "R&D <Lab>", "Łódź",
];
#[rustfmt::skip]
const ORG_SUFFIXES: &[&str] = &[
    "Robotics", "Sensing AG", "Labs", "Devices", "Analytics", "Instruments GmbH", "Systems",
    "Technologies", "IoT", "Wearables", "Audio", "Vision", "Agritech", "Medical",
];
const WHITE_LABEL_NAMES: &[&str] = &["Acme Édition Studio", "東京 Partner Studio"];
#[rustfmt::skip]
const PROJECT_NAMES: &[&str] = &[
    "Keyword spotting", "Gesture recognition", "Anomaly detection", "Predictive maintenance",
    "Bird sounds", "Coffee machine", "Fall detection", "Heart rate", "Smart agriculture",
    "Glass break", "People counting", "Vibration monitor", "Wake word «Hej»",
    "Détection de chutes", "騒音モニター", "Łódź air quality", "Fruit sorter", "Cough detection",
    "Parking spaces", "Tool wear",
];
#[rustfmt::skip]
const DESCRIPTIONS: &[&str] = &[
    "", "Prototype for the Q3 pilot.",
    "Classifies motion from a 3-axis accelerometer at 62.5 Hz.",
    "Détecte les anomalies de vibration sur la ligne 3.", "Customer demo, do not delete!",
    "Audio events: \"glass\", \"alarm\", noise.",
];
#[rustfmt::skip]
const DOMAINS: &[&str] = &[
    "example.com", "example.org", "acme.example", "mail.example.net",
];
#[rustfmt::skip]
const JOB_TITLES: &[&str] = &[
    "Firmware engineer", "ML engineer", "Data scientist", "CTO", "Product manager",
    "Ingénieure R&D", "研究員", "Student",
];
const COMPANIES: &[&str] = &["Acme Corp", "Nørd Labs", "東京 Robotics", "Self-employed"];
#[rustfmt::skip]
const CATEGORIES: &[&str] = &[
    "Accelerometer", "Audio", "Images", "Keyword spotting", "Object detection", "Other",
];
const LABEL_SETS: &[&[&str]] = &[
    &["idle", "wave", "snake", "updown"],
    &["noise", "unknown", "hej", "stop"],
    &["normal", "anomaly"],
    &["apple", "banana", "citron"],
    &["fall", "walk", "sit"],
];
#[rustfmt::skip]
const DATASET_NAMES: &[&str] = &[
    "sensor-logs", "clinical-trial-α", "field recordings", "Zürich pilot", "factory-line-3",
    "東京 fleet",
];

#[derive(Debug, Clone, Copy)]
struct Sizes {
    white_labels: usize,
    regular_orgs: usize,
    trial_orgs: usize,
    dev_orgs: usize,
    users: usize,
    projects: usize,
}

fn sizes(profile: Profile) -> Sizes {
    let (white_labels, regular_orgs, trial_orgs, dev_orgs, users, projects) = match profile {
        Profile::Tiny => (1, 2, 1, 1, 8, 10),
        Profile::Small => (1, 14, 6, 5, 100, 150),
        Profile::Medium => (2, 150, 30, 48, 2_000, 3_000),
        Profile::Large => (2, 380, 60, 118, 5_000, 10_000),
        Profile::Xlarge => (2, 3_800, 600, 1_198, 50_000, 100_000),
        Profile::Xxlarge => (2, 7_600, 1_200, 2_396, 100_000, 200_000),
    };
    Sizes {
        white_labels,
        regular_orgs,
        trial_orgs,
        dev_orgs,
        users,
        projects,
    }
}

/// Trial states the generator places at the clock start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrialState {
    Active,
    Expiring,
    ExpiredMarked,
    ExpiredByDate,
    Deleted,
    Upgraded,
}

const TRIAL_STATES: [TrialState; 6] = [
    TrialState::Expiring,
    TrialState::ExpiredMarked,
    TrialState::ExpiredByDate,
    TrialState::Deleted,
    TrialState::Upgraded,
    TrialState::Active,
];

/// `ei_` followed by 64 hex digits, like the platform's keys; derived from the seed.
pub(crate) fn api_key(seed: u64, kind: &str, id: i64) -> String {
    format!("ei_{}", sha_hex(&format!("{seed}:{kind}:{id}")))
}

fn sha_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A JWT-shaped token (header.payload.signature); the sandbox only compares it whole.
pub(crate) fn jwt(seed: u64, wl_id: i64, user_id: i64, issued: i64) -> String {
    let header = base64url(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = base64url(
        format!(r#"{{"sub":"{user_id}","whitelabelId":{wl_id},"iat":{issued}}}"#).as_bytes(),
    );
    let sig = base64url(&Sha256::digest(
        format!("{seed}:{header}.{payload}").as_bytes(),
    ));
    format!("{header}.{payload}.{sig}")
}

/// ASCII fold for usernames and slugs ("Zoë" -> "zoe", "Łukasz" -> "lukasz").
pub(crate) fn ascii_fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().flat_map(char::to_lowercase) {
        let folded = match c {
            'a'..='z' | '0'..='9' => {
                out.push(c);
                continue;
            }
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ą' => "a",
            'æ' => "ae",
            'ç' | 'č' | 'ć' => "c",
            'è' | 'é' | 'ê' | 'ë' | 'ě' | 'ę' | 'ễ' => "e",
            'ì' | 'í' | 'î' | 'ï' | 'ı' => "i",
            'ł' => "l",
            'ñ' | 'ń' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ő' => "o",
            'ś' | 'š' | 'ş' => "s",
            'ù' | 'ú' | 'û' | 'ü' | 'ů' | 'ū' => "u",
            'ý' => "y",
            'ź' | 'ż' | 'ž' => "z",
            'ř' => "r",
            'đ' | 'ð' => "d",
            'ğ' => "g",
            'ß' => "ss",
            'þ' => "th",
            _ => "",
        };
        out.push_str(folded);
    }
    out
}

fn days(n: i64) -> Duration {
    Duration::days(n)
}

/// Round to three significant digits, like limits a person would set.
fn round3(x: f64) -> i64 {
    if x < 1000.0 {
        return x.ceil().max(1.0) as i64;
    }
    let mag = 10f64.powf(x.log10().floor() - 2.0);
    ((x / mag).round() * mag) as i64
}

pub fn generate(profile: Profile, seed: u64, start_date: NaiveDate) -> World {
    let now =
        Utc.from_utc_datetime(&start_date.and_time(chrono::NaiveTime::MIN)) + Duration::hours(12);
    let mut g = Gen {
        rng: SplitMix64::for_parts(&[seed, profile as u64, 0x9e4e]),
        seed,
        now,
        world: World {
            seed,
            now,
            ..World::default()
        },
        used_org_names: std::collections::HashSet::new(),
        next_device_id: 1_000_001,
        next_bucket_id: 1,
    };
    g.build(sizes(profile));
    g.world
}

struct Gen {
    rng: SplitMix64,
    seed: u64,
    now: Time,
    world: World,
    used_org_names: std::collections::HashSet<String>,
    next_device_id: i64,
    next_bucket_id: i64,
}

/// Which kind of organization each index of `world.organizations` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OrgKind {
    Admin,
    Regular,
    Trial,
    Dev,
}

impl Gen {
    fn build(&mut self, s: Sizes) {
        let now = self.now;
        // White labels and their admin users.
        let n_regular_users = s
            .users
            .saturating_sub(s.white_labels + s.dev_orgs)
            .max(s.regular_orgs);
        let mut kinds: Vec<OrgKind> = Vec::new();
        for w in 0..s.white_labels {
            let wl_id = w as i64 + 1;
            let org_id = FIRST_ORG_ID + self.world.organizations.len() as i64;
            let user_id = FIRST_USER_ID + self.world.users.len() as i64;
            let mut admin = self.make_user(user_id, now - days(1500 + w as i64 * 100));
            admin.permissions = [
                "whitelabel:organizations:all:read",
                "whitelabel:projects:all:write",
                "whitelabel:users:all:read",
                "whitelabel:metrics:all:read",
            ]
            .map(String::from)
            .to_vec();
            admin.tier = "enterprise".to_string();
            admin.pending = false;
            admin.activated = true;
            admin.last_seen = Some(now - Duration::hours(3));
            self.world.users.push(admin);
            let name = WHITE_LABEL_NAMES.get(w).copied().unwrap_or("Studio");
            self.world.white_labels.push(WhiteLabel {
                id: wl_id,
                name: name.to_string(),
                admin_organization_id: org_id,
                admin_user_id: user_id,
                // Like the keys, the token depends on the seed only, not on the start date.
                jwt: jwt(
                    self.seed,
                    wl_id,
                    user_id,
                    1_700_000_000 + (self.seed % 1_000_000) as i64,
                ),
            });
            let mut org = self.make_org(
                org_id,
                format!("{name} Admin"),
                Some(wl_id),
                now - days(1800),
            );
            org.contract_start_date = Some(org.created + days(10));
            org.members
                .push(self.member(user_id, "admin", org.created, now - days(1500)));
            self.world.organizations.push(org);
            kinds.push(OrgKind::Admin);
        }
        // Regular organizations; the first ones are trial organizations.
        for i in 0..s.regular_orgs {
            let id = FIRST_ORG_ID + self.world.organizations.len() as i64;
            let trial = i < s.trial_orgs;
            let wl = if trial && i < TRIAL_STATES.len() {
                Some(1)
            } else {
                self.pick_wl(s.white_labels, false)
            };
            let name = self.org_name();
            let created = now - days(self.rng.range(20, 2000));
            let mut org = self.make_org(id, name, wl, created);
            if !trial {
                org.contract_start_date = Some(created + days(self.rng.range(0, 60)));
            }
            self.world.organizations.push(org);
            kinds.push(if trial {
                OrgKind::Trial
            } else {
                OrgKind::Regular
            });
        }
        // Developer profiles: one organization and one user each.
        for _ in 0..s.dev_orgs {
            let id = FIRST_ORG_ID + self.world.organizations.len() as i64;
            let user_id = FIRST_USER_ID + self.world.users.len() as i64;
            let created = self.user_created();
            let user = self.make_user(user_id, created);
            let wl = self.pick_wl(s.white_labels, true);
            let mut org = self.make_org(id, user.name.clone(), wl, user.created);
            org.is_developer_profile = true;
            org.header_img = None;
            org.members
                .push(self.member(user_id, "admin", user.created, user.created));
            self.world.users.push(user);
            self.world.organizations.push(org);
            kinds.push(OrgKind::Dev);
        }
        self.trials(&kinds);
        self.regular_members(&kinds, n_regular_users);
        self.admin_org_staff(&kinds);
        self.datasets(&kinds);
        self.projects(&kinds, s.projects);
        let deleted: Vec<(i64, Time)> = self
            .world
            .organizations
            .iter()
            .filter_map(|o| o.deleted_date.map(|d| (o.id, d)))
            .collect();
        for (org_id, when) in deleted {
            self.world.delete_org_projects(org_id, when);
        }
        self.ensure_variety();
        self.member_details();
        self.metrics_since();
        self.limits(&kinds);
    }

    fn pick_wl(&mut self, n_wl: usize, dev: bool) -> Option<i64> {
        if dev && self.rng.chance(0.3) {
            return None; // default white label scope
        }
        if n_wl > 1 && self.rng.chance(0.2) {
            Some(2)
        } else {
            Some(1)
        }
    }

    fn org_name(&mut self) -> String {
        let base = format!(
            "{} {}",
            self.rng.pick(ORG_PREFIXES),
            self.rng.pick(ORG_SUFFIXES)
        );
        let mut name = base.clone();
        let mut n = 2;
        while !self.used_org_names.insert(name.clone()) {
            name = format!("{base} {n}");
            n += 1;
        }
        name
    }

    fn user_created(&mut self) -> Time {
        let d = if self.rng.chance(0.25) {
            self.rng.range(2, 364)
        } else {
            self.rng.range(365, 1600)
        };
        self.now - days(d) - Duration::minutes(self.rng.range(0, 1439))
    }

    fn make_user(&mut self, id: i64, created: Time) -> User {
        let mut u = new_user(&mut self.rng, id, self.now);
        u.created = created;
        u.metrics = Metrics::Generated { since: created };
        if let Some(seen) = u.last_seen {
            // Enough recent activity for "active users" reports, and a long tail.
            let back = match self.rng.index(10) {
                0..=3 => self.rng.range(0, 6),
                4..=6 => self.rng.range(7, 29),
                _ => self.rng.range(30, 300),
            };
            u.last_seen = Some(
                (seen - days(back) - Duration::minutes(self.rng.range(0, 600)))
                    .max(created + Duration::hours(1)),
            );
        }
        u
    }

    fn make_org(&mut self, id: i64, name: String, wl: Option<i64>, created: Time) -> Organization {
        let r = &mut self.rng;
        Organization {
            id,
            name,
            whitelabel_id: wl,
            is_developer_profile: false,
            created,
            logo: r
                .chance(0.5)
                .then(|| format!("https://cdn.example.com/org-logos/{id}.png")),
            header_img: r
                .chance(0.3)
                .then(|| format!("https://cdn.example.com/org-headers/{id}.jpg")),
            show_header_img_mask: r.chance(0.5),
            contract_start_date: None,
            deleted_date: None,
            trial_id: None,
            members: Vec::new(),
            datasets: Vec::new(),
            entitlement_limits: None,
            readme: r.chance(0.4).then(|| Readme {
                markdown: "# Welcome\nSee the *handbook* before uploading data.".to_string(),
                html: "<h1>Welcome</h1>\n<p>See the <em>handbook</em> before uploading data.</p>"
                    .to_string(),
            }),
            api_key: api_key(self.seed, "org", id),
            job_limit_m: [30, 60, 120, 240][r.index(4)],
        }
    }

    fn member(&mut self, user_id: i64, role: &str, not_before: Time, user_created: Time) -> Member {
        let earliest = not_before.max(user_created);
        let latest = (self.now - Duration::hours(1)).max(earliest);
        let span = (latest - earliest).num_days().min(60);
        Member {
            user_id,
            role: role.to_string(),
            added: earliest + days(self.rng.range(0, span)),
            datasets: Vec::new(),
            last_access: None,
            last_project_accessed: None,
        }
    }

    fn trials(&mut self, kinds: &[OrgKind]) {
        let now = self.now;
        let mut nth = 0usize;
        for (oi, kind) in kinds.iter().enumerate() {
            if *kind != OrgKind::Trial {
                continue;
            }
            let state = if nth < TRIAL_STATES.len() {
                TRIAL_STATES[nth]
            } else {
                TRIAL_STATES[self.rng.weighted(&[15.0, 12.0, 8.0, 15.0, 25.0, 25.0])]
            };
            nth += 1;
            let r = &mut self.rng;
            let (created, expiration) = match state {
                TrialState::Active => {
                    let c = now - days(r.range(0, 13)) - Duration::hours(r.range(1, 11));
                    (c, c + days(30))
                }
                TrialState::Expiring => {
                    let e = now + days(r.range(1, 13)) + Duration::hours(r.range(0, 10));
                    (e - days(30), e)
                }
                TrialState::ExpiredMarked | TrialState::ExpiredByDate => {
                    let e = now - days(r.range(1, 25)) - Duration::hours(r.range(0, 10));
                    (e - days(30), e)
                }
                TrialState::Deleted => {
                    let e = now - days(r.range(35, 120));
                    (e - days(30), e)
                }
                TrialState::Upgraded => {
                    let c = now - days(r.range(60, 300));
                    (c, c + days(30))
                }
            };
            let id = FIRST_TRIAL_ID + self.world.trials.len() as i64;
            let mut trial = Trial {
                id,
                user_id: 0,
                organization_id: self.world.organizations[oi].id,
                created,
                expiration_date: expiration,
                expired_date: None,
                deleted_date: None,
                upgraded_date: None,
                notes: match r.index(4) {
                    0 => None,
                    1 => Some("Signed up after the webinar".to_string()),
                    2 => Some("Extended once; follow up with Zoë".to_string()),
                    _ => Some(String::new()),
                },
            };
            match state {
                TrialState::ExpiredMarked => trial.expired_date = Some(expiration),
                TrialState::Deleted => {
                    trial.expired_date = Some(expiration);
                    trial.deleted_date = Some(expiration + days(30));
                }
                TrialState::Upgraded => {
                    trial.upgraded_date = Some(created + days(r.range(5, 29)));
                }
                _ => {}
            }
            let org = &mut self.world.organizations[oi];
            org.created = created;
            org.trial_id = Some(id);
            org.deleted_date = trial.deleted_date;
            org.contract_start_date = trial.upgraded_date;
            self.world.trials.push(trial);
        }
    }

    fn regular_members(&mut self, kinds: &[OrgKind], n_users: usize) {
        let regular: Vec<usize> = kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| matches!(k, OrgKind::Regular | OrgKind::Trial))
            .map(|(i, _)| i)
            .collect();
        if regular.is_empty() {
            return;
        }
        // Skewed organization sizes: a few big customers, many small ones.
        let mut weights: Vec<f64> = regular
            .iter()
            .enumerate()
            .map(|(rank, &oi)| {
                if kinds[oi] == OrgKind::Trial {
                    0.02
                } else {
                    1.0 / ((rank as f64 + 1.0).powf(0.8))
                }
            })
            .collect();
        for n in 0..n_users {
            let id = FIRST_USER_ID + self.world.users.len() as i64;
            let created = self.user_created();
            let user = self.make_user(id, created);
            // Each organization first gets its admin, then users go by weight.
            let slot = if n < regular.len() {
                n
            } else {
                self.rng.weighted(&weights)
            };
            let oi = regular[slot];
            let org_created = self.world.organizations[oi].created;
            let role = if self.world.organizations[oi].members.is_empty() {
                "admin"
            } else {
                [
                    "admin", "member", "member", "member", "member", "member", "member", "guest",
                ][self.rng.index(8)]
            };
            let created_for_member = if n < regular.len() {
                // The founding admin is at least as old as the organization.
                let c = org_created - days(self.rng.range(0, 30));
                c.min(created)
            } else {
                created
            };
            let mut user = user;
            user.created = created_for_member;
            user.metrics = Metrics::Generated {
                since: created_for_member,
            };
            if user.last_seen.is_some_and(|s| s < created_for_member) {
                user.last_seen = Some(created_for_member + Duration::hours(2));
            }
            if kinds[oi] == OrgKind::Regular {
                user.tier = "enterprise".to_string();
            }
            let m = self.member(id, role, org_created, created_for_member);
            self.world.organizations[oi].members.push(m);
            if kinds[oi] == OrgKind::Trial && self.world.organizations[oi].members.len() >= 3 {
                weights[slot] = 0.0;
            }
            // Some people belong to a second organization.
            if self.rng.chance(0.08) {
                let other = regular[self.rng.index(regular.len())];
                if other != oi && kinds[other] == OrgKind::Regular {
                    let oc = self.world.organizations[other].created;
                    let role = if self.rng.chance(0.3) {
                        "guest"
                    } else {
                        "member"
                    };
                    let m = self.member(id, role, oc, created_for_member);
                    self.world.organizations[other].members.push(m);
                }
            }
            self.world.users.push(user);
        }
        // Trial users: the trial belongs to the organization's founding admin.
        for t in &mut self.world.trials {
            if let Some(o) = self
                .world
                .organizations
                .iter()
                .find(|o| o.id == t.organization_id)
            {
                t.user_id = o.members.first().map(|m| m.user_id).unwrap_or(0);
            }
        }
    }

    fn admin_org_staff(&mut self, kinds: &[OrgKind]) {
        let regular_user_ids: Vec<i64> = self
            .world
            .organizations
            .iter()
            .zip(kinds)
            .filter(|(_, k)| **k == OrgKind::Regular)
            .flat_map(|(o, _)| o.members.iter().map(|m| m.user_id))
            .collect();
        if regular_user_ids.is_empty() {
            return;
        }
        for (oi, kind) in kinds.iter().enumerate() {
            if *kind != OrgKind::Admin {
                continue;
            }
            for _ in 0..self.rng.range(1, 2) {
                let uid = regular_user_ids[self.rng.index(regular_user_ids.len())];
                if self.world.organizations[oi]
                    .members
                    .iter()
                    .any(|m| m.user_id == uid)
                {
                    continue;
                }
                let uc = self.world.user(uid).map(|u| u.created).unwrap_or(self.now);
                let oc = self.world.organizations[oi].created;
                let m = self.member(uid, "admin", oc, uc);
                self.world.organizations[oi].members.push(m);
            }
        }
    }

    fn datasets(&mut self, kinds: &[OrgKind]) {
        for (oi, kind) in kinds.iter().enumerate() {
            let n = match kind {
                OrgKind::Admin => 1,
                OrgKind::Dev => self.rng.range(0, 1),
                OrgKind::Trial => self.rng.range(0, 2),
                OrgKind::Regular => self.rng.range(0, 4),
            };
            let org_id = self.world.organizations[oi].id;
            let created = self.world.organizations[oi].created;
            for i in 0..n {
                let d = self.make_dataset(org_id, i, created);
                self.world.organizations[oi].datasets.push(d);
            }
        }
    }

    fn make_dataset(&mut self, org_id: i64, i: i64, org_created: Time) -> Dataset {
        let r = &mut self.rng;
        let base = r.pick(DATASET_NAMES);
        let name = if i == 0 {
            base.to_string()
        } else {
            format!("{base}-{i}")
        };
        let size = 10f64.powf(r.uniform(6.0, 11.3)) as i64;
        let avg_file = r.range(50_000, 5_000_000);
        let files = (size / avg_file).max(1);
        let items = (files / r.range(1, 5)).max(1);
        let ok = (items as f64 * r.uniform(0.85, 1.0)) as i64;
        let bucket_id = self.next_bucket_id;
        self.next_bucket_id += 1;
        let bucket = format!("org-{org_id}-data");
        let path = format!("/datasets/{}", ascii_fold(&name));
        let last_file = org_created.max(self.now - days(r.range(0, 120)));
        Dataset {
            name,
            last_file_created: if files > 0 { Some(last_file) } else { None },
            total_file_size: size,
            total_file_count: files,
            total_item_count: items,
            checklist_ok: ok,
            checklist_failed: items - ok,
            tags: match r.index(3) {
                0 => Vec::new(),
                1 => vec!["raw".to_string()],
                _ => vec!["raw".to_string(), "pilot".to_string()],
            },
            kind: r
                .pick(&["clinical", "industrial", "audio", "vision"])
                .to_string(),
            category: r.pick(&["Raw data", "Processed", "Labels"]).to_string(),
            bucket_id,
            bucket_name: bucket,
            bucket_path: path,
            levels_deep: r.range(1, 3),
            daily_bytes: if r.chance(0.3) {
                0
            } else {
                (size as f64 * r.uniform(0.001, 0.01)) as i64
            },
        }
    }

    fn projects(&mut self, kinds: &[OrgKind], total: usize) {
        let mut per_org = vec![0usize; kinds.len()];
        let mut assigned = 0usize;
        for (oi, kind) in kinds.iter().enumerate() {
            let n = match kind {
                OrgKind::Admin => 2,
                OrgKind::Dev => self.rng.range(1, 3) as usize,
                OrgKind::Trial => self.rng.range(1, 2) as usize,
                OrgKind::Regular => 0,
            };
            per_org[oi] = n;
            assigned += n;
        }
        let weights: Vec<f64> = kinds
            .iter()
            .enumerate()
            .map(|(oi, k)| {
                if *k == OrgKind::Regular {
                    self.world.organizations[oi].members.len() as f64
                } else {
                    0.0
                }
            })
            .collect();
        if weights.iter().sum::<f64>() > 0.0 {
            for _ in assigned..total {
                per_org[self.rng.weighted(&weights)] += 1;
            }
        }
        for (oi, &n) in per_org.iter().enumerate() {
            for _ in 0..n {
                self.add_project(oi);
            }
        }
    }

    fn add_project(&mut self, oi: usize) {
        let now = self.now;
        let org = &self.world.organizations[oi];
        let members: Vec<(i64, Time)> = org.members.iter().map(|m| (m.user_id, m.added)).collect();
        let Some(&(owner, owner_added)) = members.get(self.rng.index(members.len())) else {
            return;
        };
        let id = FIRST_PROJECT_ID + self.world.projects.len() as i64;
        let earliest = owner_added.max(org.created);
        let span = (now - earliest).num_days().max(1);
        let created = earliest
            + days(self.rng.range(0, span - 1))
            + Duration::minutes(self.rng.range(0, 600));
        let created = created.min(now - Duration::hours(1));
        let mut p = new_project(self.seed, &mut self.rng, id, org, owner, created);
        let r = &mut self.rng;
        for _ in 0..r.range(0, 3) {
            let (c, _) = members[r.index(members.len())];
            if !p.collaborators.contains(&c) {
                p.collaborators.push(c);
            }
        }
        if org.is_developer_profile && r.chance(0.15) {
            // Developer-profile projects often have an outside collaborator.
            let n_users = self.world.users.len();
            if let Some(u) = self.world.users.get(r.index(n_users))
                && !p.collaborators.contains(&u.id)
            {
                p.collaborators.push(u.id);
            }
        }
        age_project(&mut p, r, now);
        for _ in 0..if r.chance(0.4) { 0 } else { r.range(1, 4) } {
            let dev = make_device(r, self.next_device_id, &p, now);
            self.next_device_id += 1;
            p.devices.push(dev);
        }
        self.world.projects.push(p);
    }

    /// Even the tiniest world has a public, a deleted and a nearly exhausted project.
    fn ensure_variety(&mut self) {
        let now = self.now;
        let n = self.world.projects.len();
        if n < 3 {
            return;
        }
        let ps = &mut self.world.projects;
        if !ps.iter().any(|p| p.is_public) {
            let p = &mut ps[0];
            p.is_public = true;
            p.public_project_listed = true;
            p.license = Some("Apache-2.0".to_string());
        }
        if !ps
            .iter()
            .any(|p| p.compute.time_used_ms() * 10 >= p.compute.total_ms * 8)
        {
            let c = &mut ps[1].compute;
            c.used_ms = c.total_ms / 100 * 93;
        }
        if !ps.iter().any(|p| p.deleted_date.is_some()) {
            let p = &mut ps[n - 1];
            let deleted = (now - days(3)).max(p.created);
            p.deleted_date = Some(deleted);
            p.scheduled_full_deletion_date = Some(deleted + days(30));
            p.compute.daily_ms = 0;
        }
    }

    /// Member datasets, last access and last project, once projects exist.
    fn member_details(&mut self) {
        let mut collabs: std::collections::HashMap<(i64, i64), i64> = Default::default();
        for p in &self.world.projects {
            for &c in &p.collaborators {
                collabs.insert((p.owner_organization_id, c), p.id);
            }
        }
        let now = self.now;
        let last_seen: std::collections::HashMap<i64, Option<Time>> = self
            .world
            .users
            .iter()
            .map(|u| (u.id, u.last_seen))
            .collect();
        for o in &mut self.world.organizations {
            let names: Vec<String> = o.datasets.iter().map(|d| d.name.clone()).collect();
            for m in &mut o.members {
                let seen = last_seen.get(&m.user_id).copied().flatten();
                // Access to an organization happens between joining it and last being seen.
                if let Some(seen) = seen.filter(|s| *s >= m.added) {
                    let back = days(self.rng.range(0, 30));
                    m.last_access = Some((seen - back).max(m.added).min(now));
                    m.last_project_accessed = collabs.get(&(o.id, m.user_id)).copied();
                }
                m.datasets = names
                    .iter()
                    .filter(|_| self.rng.chance(0.6))
                    .cloned()
                    .collect();
            }
        }
    }

    /// `computeTimeCalculatedSince`: the primary organization's contract start, or the
    /// user's creation date.
    fn metrics_since(&mut self) {
        let mut contract: std::collections::HashMap<i64, Time> = Default::default();
        for o in &self.world.organizations {
            if o.is_developer_profile {
                continue;
            }
            if let Some(c) = o.contract_start_date {
                for m in &o.members {
                    contract.entry(m.user_id).or_insert(c);
                }
            }
        }
        for u in &mut self.world.users {
            let since = contract
                .get(&u.id)
                .map_or(u.created, |c| (*c).max(u.created));
            u.metrics = Metrics::Generated {
                since: day_start(day_of(since)),
            };
        }
    }

    fn limits(&mut self, kinds: &[OrgKind]) {
        let now_day = day_of(self.now);
        for (oi, kind) in kinds.iter().enumerate() {
            if *kind == OrgKind::Admin || self.rng.chance(0.12) {
                continue;
            }
            let org = &self.world.organizations[oi];
            let projects: Vec<&Project> = self
                .world
                .projects
                .iter()
                .filter(|p| p.owner_organization_id == org.id)
                .collect();
            let active = projects.iter().filter(|p| p.deleted_date.is_none()).count() as f64;
            let used = if *kind == OrgKind::Dev {
                let uid = org.members.first().map(|m| m.user_id).unwrap_or(0);
                let Some(user) = self.world.user(uid) else {
                    continue;
                };
                let since = match user.metrics {
                    Metrics::Generated { since } => since,
                    Metrics::Explicit(_) => user.created,
                };
                let t = metrics::totals_through(self.seed, uid, user.created, since, now_day);
                [
                    t.storage as f64,
                    t.compute as f64,
                    t.gpu as f64,
                    active,
                    0.0,
                ]
            } else {
                let storage: i64 = org.datasets.iter().map(|d| d.total_file_size).sum();
                let compute: i64 = projects
                    .iter()
                    .map(|p| p.compute.time_used_ms() / 1000)
                    .sum();
                [
                    storage as f64,
                    compute as f64,
                    compute as f64 * 0.2,
                    active,
                    org.members.len() as f64,
                ]
            };
            let defaults = [10e9, 72_000.0, 7_200.0, 10.0, 5.0];
            let mut limit = [None; 5];
            for (i, slot) in limit.iter_mut().enumerate() {
                if self.rng.chance(0.08) {
                    continue; // no limit for this metric
                }
                let u = used[i];
                let factor = match self.rng.f64() {
                    x if x < 0.10 => self.rng.uniform(0.75, 0.99), // exceeded
                    x if x < 0.28 => self.rng.uniform(1.0, 1.24),  // 80-100 %
                    _ => self.rng.uniform(1.4, 8.0),
                };
                let value = if u > 0.0 { u * factor } else { defaults[i] };
                *slot = Some(if i >= 3 {
                    (value.ceil() as i64).max(1)
                } else {
                    round3(value)
                });
            }
            if *kind == OrgKind::Dev {
                limit[4] = Some(1);
            }
            self.world.organizations[oi].entitlement_limits = Some(EntitlementLimits {
                total_storage: limit[0],
                compute_time_per_year: limit[1],
                gpu_compute_time_per_year: limit[2],
                number_of_projects: limit[3],
                number_of_users: limit[4],
            });
        }
    }
}

/// A user as created at `now` (also used by time travel for newcomers).
pub(crate) fn new_user(r: &mut SplitMix64, id: i64, now: Time) -> User {
    let first = r.pick(FIRST_NAMES);
    let last = r.pick(LAST_NAMES);
    let username = format!("{}.{}{}", ascii_fold(first), ascii_fold(last), id % 10_000);
    let email = format!("{username}@{}", r.pick(DOMAINS));
    let pending = r.chance(0.06);
    let is_staff = r.chance(0.02);
    User {
        id,
        name: format!("{first} {last}"),
        email,
        created: now,
        is_staff,
        has_sudo_rights: is_staff && r.chance(0.3),
        staff_company_name: if is_staff { "Sandbox Inc." } else { "" }.to_string(),
        pending,
        activated: !pending && !r.chance(0.03),
        mfa_configured: r.chance(0.45),
        photo: r
            .chance(0.6)
            .then(|| format!("https://usercdn.example.com/photos/{id}.jpg")),
        last_seen: if pending || r.chance(0.05) {
            None
        } else {
            Some(now)
        },
        job_title: r.chance(0.7).then(|| r.pick(JOB_TITLES).to_string()),
        permissions: if is_staff {
            vec!["staff:users:all:read".to_string()]
        } else if r.chance(0.3) {
            vec!["organization:projects:own:write".to_string()]
        } else {
            Vec::new()
        },
        company_name: r.chance(0.6).then(|| r.pick(COMPANIES).to_string()),
        payment_customer_id: r
            .chance(0.3)
            .then(|| format!("cus_{:014x}", r.next_u64() >> 8)),
        has_pending_payments: r.chance(0.03),
        tier: "free".to_string(),
        idps: match r.index(5) {
            0 => vec!["google".to_string()],
            1 => vec!["github".to_string()],
            2 => vec!["saml:acme".to_string()],
            3 => vec!["password".to_string(), "google".to_string()],
            _ => vec!["password".to_string()],
        },
        suspended: r.chance(0.01),
        evaluation: r.chance(0.1),
        ambassador: r.chance(0.02),
        deleted: None,
        metrics: Metrics::Generated {
            since: day_start(day_of(now)),
        },
        quirks: UserQuirks::default(),
        username,
    }
}

/// A fresh, empty project created at `created` (also used by time travel and create-project).
pub(crate) fn new_project(
    seed: u64,
    r: &mut SplitMix64,
    id: i64,
    org: &Organization,
    owner: i64,
    created: Time,
) -> Project {
    let enterprise = !org.is_developer_profile && org.trial_id.is_none();
    let is_public = r.chance(if org.is_developer_profile { 0.35 } else { 0.15 });
    let total_ms = if enterprise {
        r.range(200, 2000) * 3_600_000
    } else {
        r.range(10, 40) * 3_600_000
    };
    let labels = LABEL_SETS[r.index(LABEL_SETS.len())];
    let name = if r.chance(0.3) {
        format!("{} v{}", r.pick(PROJECT_NAMES), r.range(2, 4))
    } else {
        r.pick(PROJECT_NAMES).to_string()
    };
    let mut metadata = serde_json::Map::new();
    if r.chance(0.4) {
        metadata.insert("customer".into(), r.pick(COMPANIES).into());
        metadata.insert("priority".into(), r.range(1, 3).into());
    }
    Project {
        id,
        name,
        description: r.pick(DESCRIPTIONS).to_string(),
        created,
        owner_organization_id: org.id,
        owner_user_id: Some(owner),
        collaborators: vec![owner],
        labeling_method: if r.chance(0.8) {
            "single_label"
        } else {
            "object_detection"
        }
        .to_string(),
        metadata,
        is_enterprise: enterprise,
        tier: if enterprise { "enterprise" } else { "free" }.to_string(),
        has_public_version: is_public && r.chance(0.5),
        is_public,
        allows_live_public_access: is_public && r.chance(0.3),
        ind_pause_processing_samples: r.chance(0.02),
        public_project_listed: is_public && r.chance(0.7),
        last_accessed: Some(created),
        last_modified: Some(created),
        last_modification_details: Some("Project created".to_string()),
        logo: r
            .chance(0.2)
            .then(|| format!("https://cdn.example.com/project-logos/{id}.png")),
        data_explorer_screenshot: None,
        tags: match r.index(4) {
            0 => vec!["prototype".to_string()],
            1 => vec!["production".to_string(), "démo".to_string()],
            _ => Vec::new(),
        },
        category: r.pick(CATEGORIES).to_string(),
        license: if is_public || r.chance(0.5) {
            Some(
                r.pick(&["Apache-2.0", "BSD-3-Clause-Clear", "BSD-3-Clause"])
                    .to_string(),
            )
        } else {
            None
        },
        deleted_date: None,
        full_deletion_date: None,
        scheduled_full_deletion_date: None,
        removed: false,
        api_key: api_key(seed, "project", id),
        hmac_key: sha_hex(&format!("{seed}:hmac:{id}"))[..32].to_string(),
        devices: Vec::new(),
        data_training: DataSummary {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            ..DataSummary::default()
        },
        data_testing: DataSummary::default(),
        data_post_processing: DataSummary::default(),
        compute: ComputeBudget {
            period_start: created,
            period_end: created + days(365),
            used_ms: 0,
            total_ms,
            daily_ms: total_ms / 365 / r.range(1, 4),
        },
        impulses: 0,
        readme: None,
        train_job_notification_uids: vec![owner],
        dsp_job_notification_uids: Vec::new(),
        model_testing_job_notification_uids: Vec::new(),
        export_job_notification_uids: Vec::new(),
        quirks: ProjectQuirks::default(),
    }
}

/// Turns a fresh project into one that has lived from its creation until `now`.
fn age_project(p: &mut Project, r: &mut SplitMix64, now: Time) {
    let created = p.created;
    let life = (now - created).num_days().max(0);
    p.last_accessed = match r.index(20) {
        0 => None,
        1..=5 if life > 91 => Some(now - days(r.range(91, life.min(700)))),
        _ => Some(now - days(r.range(0, life.min(60))) - Duration::minutes(r.range(0, 600))),
    }
    .map(|t| t.max(created));
    p.last_modified = p
        .last_accessed
        .map(|a| (a - days(r.range(0, 30))).max(created));
    p.last_modification_details = Some(
        r.pick(&[
            "Trained model",
            "Added 12 samples",
            "Deployed library",
            "Changed impulse",
            "Renamed project",
        ])
        .to_string(),
    );
    p.data_explorer_screenshot = r
        .chance(0.3)
        .then(|| format!("https://cdn.example.com/screenshots/{}.png", p.id));
    p.impulses = r.weighted(&[0.15, 0.6, 0.15, 0.1]) as i64;
    if r.chance(0.5) {
        p.readme = Some(Readme {
            markdown: format!("# {}\n\nCollected with *care*.", p.name),
            html: maud::html! {
                h1 { (p.name) } "\n"
                p { "Collected with " em { "care" } "." }
            }
            .into_string(),
        });
    }
    let count = if r.chance(0.1) { 0 } else { r.range(20, 5000) };
    let avg_len = r.uniform(500.0, 10_000.0);
    let summary = |n: i64, labels: &[String]| DataSummary {
        total_length_ms: ((n as f64 * avg_len) * 2.0).round() / 2.0,
        labels: if n > 0 { labels.to_vec() } else { Vec::new() },
        data_count: n,
    };
    let labels = p.data_training.labels.clone();
    p.data_training = summary(count, &labels);
    p.data_testing = summary(count / 5, &labels);
    p.data_post_processing = summary(count / 50, &labels);
    p.dsp_job_notification_uids = p
        .collaborators
        .iter()
        .copied()
        .filter(|_| r.chance(0.3))
        .collect();
    p.model_testing_job_notification_uids = p
        .collaborators
        .iter()
        .copied()
        .filter(|_| r.chance(0.2))
        .collect();
    p.export_job_notification_uids = p
        .collaborators
        .iter()
        .copied()
        .filter(|_| r.chance(0.2))
        .collect();
    // Yearly compute period starting at the latest anniversary of the creation.
    let years = life / 365;
    let c = &mut p.compute;
    c.period_start = created + days(365 * years);
    c.period_end = c.period_start + days(365);
    let into = (now - c.period_start).num_days().max(1);
    let fraction = match r.f64() {
        x if x < 0.10 => r.uniform(0.8, 1.0),
        x if x < 0.15 => r.uniform(1.0, 1.1),
        _ => r.uniform(0.0, 0.8) * r.f64(),
    };
    c.used_ms = (c.total_ms as f64 * fraction) as i64;
    c.daily_ms = if r.chance(0.2) { 0 } else { c.used_ms / into };
    if r.chance(0.08) && life > 1 {
        // Most deleted projects wait for their full deletion; some already had it.
        let back = if life > 31 && r.chance(0.25) {
            r.range(31, life.min(59))
        } else {
            r.range(1, life.min(29))
        };
        let deleted = now - days(back);
        p.deleted_date = Some(deleted);
        p.scheduled_full_deletion_date = Some(deleted + days(30));
        p.full_deletion_date = Some(deleted + days(30)).filter(|d| *d <= now);
        c.daily_ms = 0;
    }
}

fn make_device(r: &mut SplitMix64, id: i64, p: &Project, now: Time) -> Device {
    const TYPES: &[(&str, &str)] = &[
        ("nano33-ble", "ARDUINO_NANO33BLE"),
        ("Portenta H7", "ARDUINO_PORTENTA_H7"),
        ("Nicla Vision", "ARDUINO_NICLA_VISION"),
        ("raspberrypi-4", "RASPBERRY_PI_4"),
        ("phone-7f3a", "MOBILE_CLIENT"),
        ("Thingy:53", "NORDIC_THINGY53"),
        ("ESP32-EYE", "ESPRESSIF_ESP32"),
    ];
    let (name, device_type) = TYPES[r.index(TYPES.len())];
    let mut sensors = Vec::new();
    for (sname, len, freqs) in [
        ("Accelerometer", 300, &[62.5, 100.0][..]),
        ("Microphone", 60, &[16000.0][..]),
        ("Camera (320x240)", 0, &[][..]),
        ("Environmental", 3600, &[1.0, 10.0][..]),
    ] {
        if r.chance(0.45) || sensors.is_empty() && sname == "Environmental" {
            sensors.push(Sensor {
                name: sname.to_string(),
                max_sample_length_s: len,
                frequencies: freqs.to_vec(),
            });
        }
    }
    let connected = r.chance(0.4);
    let created = p.created + days(r.range(0, (now - p.created).num_days().max(0)));
    let h = hash(&[id as u64, 0xdead]);
    Device {
        id,
        device_id: format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            h & 0xff,
            (h >> 8) & 0xff,
            (h >> 16) & 0xff,
            (h >> 24) & 0xff,
            (h >> 32) & 0xff,
            (h >> 40) & 0xff
        ),
        created,
        last_seen: if connected {
            now - Duration::minutes(r.range(0, 30))
        } else if r.chance(0.1) {
            created
        } else {
            (now - days(r.range(1, 200))).max(created)
        },
        name: name.to_string(),
        device_type: device_type.to_string(),
        supports_snapshot_streaming: sensors.iter().any(|s| s.name.starts_with("Camera")),
        sensors,
        remote_mgmt_connected: connected,
        remote_mgmt_mode: if connected {
            r.pick(&["ingestion", "inference"])
        } else {
            "disconnected"
        }
        .to_string(),
        remote_mgmt_host: connected.then(|| "remote-mgmt.sandbox.example".to_string()),
        deployed_version: r.chance(0.6).then(|| r.range(1, 12)),
        // Four choices for three values: the same draws as ever, so the rest of the
        // world is unchanged.
        model_type: r
            .pick(&[
                MODEL_TYPES[0],
                MODEL_TYPES[1],
                MODEL_TYPES[2],
                MODEL_TYPES[0],
            ])
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 6, 1).unwrap_or_default()
    }

    #[test]
    fn deterministic_per_seed() {
        let a = generate(Profile::Small, 42, date());
        let b = generate(Profile::Small, 42, date());
        let c = generate(Profile::Small, 43, date());
        assert_eq!(a.digest(), b.digest());
        assert_ne!(a.digest(), c.digest());
        let d = generate(Profile::Tiny, 42, date());
        assert_ne!(a.digest(), d.digest());
    }

    #[test]
    fn credentials_depend_on_the_seed_only() {
        let later = date() + Duration::days(40);
        let a = generate(Profile::Tiny, 42, date());
        let b = generate(Profile::Tiny, 42, later);
        assert_eq!(a.white_labels[0].jwt, b.white_labels[0].jwt);
        assert_eq!(a.organizations[0].api_key, b.organizations[0].api_key);
        assert_eq!(a.projects[0].api_key, b.projects[0].api_key);
        assert_eq!(b.now - a.now, Duration::days(40));
        let c = generate(Profile::Tiny, 43, date());
        assert_ne!(a.white_labels[0].jwt, c.white_labels[0].jwt);
    }

    fn counts(w: &World) -> (usize, usize, usize) {
        (w.organizations.len(), w.users.len(), w.projects.len())
    }

    #[test]
    fn profile_sizes_are_in_range() {
        let cases = [
            (Profile::Tiny, (3, 6), (6, 12), (6, 14)),
            (Profile::Small, (15, 25), (80, 120), (120, 180)),
            (Profile::Medium, (170, 230), (1_700, 2_300), (2_600, 3_400)),
            (Profile::Large, (430, 570), (4_300, 5_700), (8_800, 11_200)),
        ];
        for (profile, orgs, users, projects) in cases {
            let w = generate(profile, 7, date());
            let (o, u, p) = counts(&w);
            assert!((orgs.0..=orgs.1).contains(&o), "{profile:?} orgs {o}");
            assert!((users.0..=users.1).contains(&u), "{profile:?} users {u}");
            assert!(
                (projects.0..=projects.1).contains(&p),
                "{profile:?} projects {p}"
            );
            let wl = if matches!(profile, Profile::Medium | Profile::Large) {
                2
            } else {
                1
            };
            assert_eq!(w.white_labels.len(), wl);
        }
    }

    /// Ten times `large`, still generated in seconds: daily metrics are computed
    /// while they are served, never stored.
    #[test]
    fn xlarge_profile_is_ten_times_large() {
        let w = generate(Profile::Xlarge, 7, date());
        let (o, u, p) = counts(&w);
        assert!((4_300..=5_700).contains(&o), "orgs {o}");
        assert!((43_000..=57_000).contains(&u), "users {u}");
        assert!((88_000..=112_000).contains(&p), "projects {p}");
        assert_eq!(w.white_labels.len(), 2);
    }

    #[test]
    fn xxlarge_profile_is_twice_xlarge() {
        let w = generate(Profile::Xxlarge, 7, date());
        let (o, u, p) = counts(&w);
        assert!((8_600..=11_400).contains(&o), "orgs {o}");
        assert!((86_000..=114_000).contains(&u), "users {u}");
        assert!((176_000..=224_000).contains(&p), "projects {p}");
    }

    #[test]
    fn small_world_has_every_trial_state_and_variety() {
        for profile in [Profile::Small, Profile::Medium] {
            let w = generate(profile, 3, date());
            let now = w.now;
            let status = |t: &Trial| {
                if t.upgraded_date.is_some_and(|d| d <= now) {
                    "upgraded"
                } else if t.deleted_date.is_some_and(|d| d <= now) {
                    "deleted"
                } else if t.expired_date.is_some_and(|d| d <= now) {
                    "expired-marked"
                } else if t.expiration_date <= now {
                    "expired-by-date"
                } else if t.expiration_date - now <= Duration::days(14) {
                    "expiring"
                } else {
                    "active"
                }
            };
            let mut seen: Vec<&str> = w.trials.iter().map(status).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(
                seen,
                [
                    "active",
                    "deleted",
                    "expired-by-date",
                    "expired-marked",
                    "expiring",
                    "upgraded"
                ],
                "{profile:?}"
            );
            // Limits: some absent, some near, some over.
            let orgs = &w.organizations;
            assert!(orgs.iter().any(|o| o.entitlement_limits.is_none()));
            assert!(
                orgs.iter()
                    .filter(|o| o.is_developer_profile)
                    .all(|o| o.members.len() == 1)
            );
            assert!(w.projects.iter().any(|p| p.deleted_date.is_some()));
            assert!(w.projects.iter().any(|p| p.full_deletion_date.is_some()));
            assert!(w.projects.iter().any(|p| p.is_public));
            assert!(w.projects.iter().any(|p| {
                let c = &p.compute;
                c.total_ms > 0 && c.time_used_ms() * 10 >= c.total_ms * 8
            }));
            assert!(w.users.iter().any(|u| u.last_seen.is_none()));
            assert!(w.users.iter().any(|u| !u.name.is_ascii()));
            assert!(orgs.iter().any(|o| o.trial_id.is_none()));
        }
    }

    #[test]
    fn limits_bands_present_in_medium() {
        let w = generate(Profile::Medium, 9, date());
        let mut near = 0;
        let mut over = 0;
        for o in &w.organizations {
            let (Some(l), false) = (&o.entitlement_limits, o.is_developer_profile) else {
                continue;
            };
            let Some(limit) = l.number_of_users else {
                continue;
            };
            let used = o.members.len() as i64;
            if used > limit {
                over += 1;
            } else if used * 10 >= limit * 8 {
                near += 1;
            }
        }
        assert!(near > 0 && over > 0, "near {near} over {over}");
    }

    #[test]
    fn helpers() {
        assert_eq!(ascii_fold("Zoë Łukasz-東京"), "zoelukasz");
        assert_eq!(base64url(b"hello"), "aGVsbG8");
        assert_eq!(base64url(b"hel"), "aGVs");
        assert_eq!(round3(123_456.0), 123_000);
        assert_eq!(round3(12.2), 13);
        let t = jwt(1, 1, 2, 0);
        assert_eq!(t.split('.').count(), 3);
        assert!(t.starts_with("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."));
        assert_eq!(api_key(1, "org", 5).len(), 67);
    }
}
