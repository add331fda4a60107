//! JSON bodies, rendered from the world with the sandbox's own derived `Serialize`
//! structs (deliberately independent of the client's models in `api::models`, so the
//! client's parser is tested against a separately written server).
//!
//! Lists are serialized lazily from indices and daily metrics are computed while they
//! are written, so large responses never build intermediate trees.

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use super::metrics;
use super::rng::hash;
use super::world::{
    DataSummary, Dataset, Device, EntitlementLimits, Organization, Project, Readme, Time, Trial,
    User, WorldState,
};

/// A timestamp (seconds since the epoch) written as `YYYY-MM-DDTHH:MM:SS.000Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iso(pub i64);

impl Iso {
    pub fn of(t: &Time) -> Self {
        Iso(t.timestamp())
    }

    /// The timestamp's text (the epoch for seconds outside chrono's range).
    pub fn text(self) -> String {
        chrono::DateTime::from_timestamp(self.0, 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

impl Serialize for Iso {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

/// `serialize_with` helper for world types holding a `Time`.
pub fn ser_time<S: Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
    Iso::of(t).serialize(s)
}

fn iso(t: &Option<Time>) -> Option<Iso> {
    t.as_ref().map(Iso::of)
}

/// A sequence serialized from indices through a mapping function.
struct Each<'a, T, F>(&'a [T], F);

/// Builds an [`Each`]; the bound here is what lets closures borrow from the items.
fn each<'a, T, R: Serialize, F: Fn(&'a T) -> Option<R>>(items: &'a [T], f: F) -> Each<'a, T, F> {
    Each(items, f)
}

impl<'a, T, R: Serialize, F: Fn(&'a T) -> Option<R>> Serialize for Each<'a, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for item in self.0 {
            if let Some(r) = (self.1)(item) {
                seq.serialize_element(&r)?;
            }
        }
        seq.end()
    }
}

// ---------------------------------------------------------------------------------
// Users

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StaffInfoR<'a> {
    is_staff: bool,
    has_sudo_rights: bool,
    company_name: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UserR<'a> {
    id: i64,
    username: &'a str,
    name: &'a str,
    email: &'a str,
    created: Iso,
    staff_info: StaffInfoR<'a>,
    pending: bool,
    activated: bool,
    mfa_configured: bool,
    photo: Option<&'a str>,
    last_seen: Option<Iso>,
    job_title: Option<&'a str>,
    permissions: &'a [String],
    company_name: Option<&'a str>,
    payment_customer_id: Option<&'a str>,
    has_pending_payments: bool,
    tier: &'a str,
    idps: &'a [String],
}

fn user_r(u: &User) -> UserR<'_> {
    UserR {
        id: u.id,
        username: &u.username,
        name: &u.name,
        email: &u.email,
        created: Iso::of(&u.created),
        staff_info: StaffInfoR {
            is_staff: u.is_staff,
            has_sudo_rights: u.has_sudo_rights,
            company_name: &u.staff_company_name,
        },
        pending: u.pending,
        activated: u.activated,
        mfa_configured: u.mfa_configured,
        photo: u.photo.as_deref(),
        last_seen: iso(&u.last_seen),
        job_title: u.job_title.as_deref(),
        permissions: &u.permissions,
        company_name: u.company_name.as_deref(),
        payment_customer_id: u.payment_customer_id.as_deref(),
        has_pending_payments: u.has_pending_payments,
        tier: &u.tier,
        idps: &u.idps,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CollaboratorR<'a> {
    #[serde(flatten)]
    user: UserR<'a>,
    is_owner: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemberR<'a> {
    #[serde(flatten)]
    user: UserR<'a>,
    added: Iso,
    role: &'a str,
    project_count: i64,
    datasets: &'a [String],
    last_access_to_organization: Option<Iso>,
    last_organization_project_accessed: Option<i64>,
}

// ---------------------------------------------------------------------------------
// Projects

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectR<'a, C: Serialize> {
    id: IdR,
    name: &'a str,
    description: &'a str,
    created: Iso,
    owner: &'a str,
    owner_is_developer_profile: bool,
    collaborators: C,
    labeling_method: &'a str,
    metadata: &'a serde_json::Map<String, serde_json::Value>,
    is_enterprise_project: bool,
    whitelabel_id: Option<i64>,
    tier: &'a str,
    has_public_version: bool,
    is_public: bool,
    allows_live_public_access: bool,
    ind_pause_processing_samples: bool,
    public_project_listed: bool,
    last_accessed: Option<Iso>,
    last_modified: Option<Iso>,
    last_modification_details: Option<&'a str>,
    logo: Option<&'a str>,
    owner_user_id: Option<i64>,
    owner_organization_id: Option<i64>,
    owner_avatar: Option<&'a str>,
    developer_profile_user_id: Option<i64>,
    data_explorer_screenshot: Option<&'a str>,
    whitelabel_name: Option<&'a str>,
    tags: &'a [String],
    category: &'a str,
    license: Option<&'a str>,
    deleted_date: Option<Iso>,
    full_deletion_date: Option<Iso>,
    scheduled_full_deletion_date: Option<Iso>,
}

/// An id, written as an integer or (a hard case) as a whole float such as `3.0`.
struct IdR {
    id: i64,
    as_float: bool,
}

impl Serialize for IdR {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.as_float {
            s.serialize_f64(self.id as f64)
        } else {
            s.serialize_i64(self.id)
        }
    }
}

fn wl_name(ws: &WorldState, wl_id: Option<i64>) -> Option<&str> {
    let id = wl_id?;
    ws.world
        .white_labels
        .iter()
        .find(|w| w.id == id)
        .map(|w| w.name.as_str())
}

fn project_r<'a>(ws: &'a WorldState, p: &'a Project) -> ProjectR<'a, impl Serialize + 'a> {
    let org = ws.org(p.owner_organization_id);
    let dev = org.is_some_and(|o| o.is_developer_profile);
    let owner_user = p.owner_user_id.and_then(|id| ws.user(id));
    let (owner, avatar) = match (dev, owner_user, org) {
        (true, Some(u), _) => (u.name.as_str(), u.photo.as_deref()),
        (_, _, Some(o)) => (o.name.as_str(), o.logo.as_deref()),
        (_, Some(u), None) => (u.name.as_str(), u.photo.as_deref()),
        _ => ("", None),
    };
    let owner_id = p.owner_user_id;
    let collaborators = each(&p.collaborators, move |id| {
        ws.user(*id).map(|u| CollaboratorR {
            user: user_r(u),
            is_owner: Some(*id) == owner_id,
        })
    });
    let wl = org.and_then(|o| o.whitelabel_id);
    ProjectR {
        id: IdR {
            id: p.id,
            as_float: p.quirks.id_as_float,
        },
        name: &p.name,
        description: &p.description,
        created: Iso::of(&p.created),
        owner,
        owner_is_developer_profile: dev,
        collaborators,
        labeling_method: &p.labeling_method,
        metadata: &p.metadata,
        is_enterprise_project: p.is_enterprise,
        whitelabel_id: wl,
        tier: &p.tier,
        has_public_version: p.has_public_version,
        is_public: p.is_public,
        allows_live_public_access: p.allows_live_public_access,
        ind_pause_processing_samples: p.ind_pause_processing_samples,
        public_project_listed: p.public_project_listed,
        last_accessed: iso(&p.last_accessed),
        last_modified: iso(&p.last_modified),
        last_modification_details: p.last_modification_details.as_deref(),
        logo: p.logo.as_deref(),
        owner_user_id: p.owner_user_id,
        owner_organization_id: (!p.quirks.owner_organization_null)
            .then_some(p.owner_organization_id),
        owner_avatar: avatar,
        developer_profile_user_id: if dev { p.owner_user_id } else { None },
        data_explorer_screenshot: p.data_explorer_screenshot.as_deref(),
        whitelabel_name: wl_name(ws, wl),
        tags: &p.tags,
        category: &p.category,
        license: p.license.as_deref(),
        deleted_date: iso(&p.deleted_date),
        full_deletion_date: iso(&p.full_deletion_date),
        scheduled_full_deletion_date: iso(&p.scheduled_full_deletion_date),
    }
}

fn projects_of<'a>(ws: &'a WorldState, indices: &'a [usize]) -> impl Serialize + 'a {
    each(indices, move |&i| {
        ws.world.projects.get(i).map(|p| project_r(ws, p))
    })
}

// ---------------------------------------------------------------------------------
// Organizations

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrganizationR<'a, U: Serialize, P: Serialize> {
    id: i64,
    name: &'a str,
    show_header_img_mask: bool,
    users: U,
    is_developer_profile: bool,
    whitelabel_id: Option<i64>,
    trial_id: Option<i64>,
    trial_expired_date: Option<Iso>,
    trial_upgraded_date: Option<Iso>,
    created: Iso,
    logo: Option<&'a str>,
    header_img: Option<&'a str>,
    whitelabel_name: Option<&'a str>,
    projects: P,
    contract_start_date: Option<Iso>,
    deleted_date: Option<Iso>,
}

fn org_r<'a>(ws: &'a WorldState, o: &'a Organization) -> impl Serialize + 'a {
    let trial: Option<&Trial> = o.trial_id.and_then(|id| ws.trial(id));
    let members = each(&o.members, move |m| {
        ws.user(m.user_id).map(|u| MemberR {
            user: user_r(u),
            added: Iso::of(&m.added),
            role: &m.role,
            project_count: ws.member_project_count(o.id, u.id),
            datasets: &m.datasets,
            last_access_to_organization: iso(&m.last_access),
            last_organization_project_accessed: m.last_project_accessed,
        })
    });
    OrganizationR {
        id: o.id,
        name: &o.name,
        show_header_img_mask: o.show_header_img_mask,
        users: members,
        is_developer_profile: o.is_developer_profile,
        whitelabel_id: o.whitelabel_id,
        trial_id: o.trial_id,
        trial_expired_date: trial.and_then(|t| iso(&t.expired_date)),
        trial_upgraded_date: trial.and_then(|t| iso(&t.upgraded_date)),
        created: Iso::of(&o.created),
        logo: o.logo.as_deref(),
        header_img: o.header_img.as_deref(),
        whitelabel_name: wl_name(ws, o.whitelabel_id),
        projects: projects_of(ws, ws.org_projects(o.id)),
        contract_start_date: iso(&o.contract_start_date),
        deleted_date: iso(&o.deleted_date),
    }
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct LimitsR {
    #[serde(skip_serializing_if = "Option::is_none")]
    total_storage: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_time_per_year: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_compute_time_per_year: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    number_of_projects: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    number_of_users: Option<i64>,
}

fn limits_r(l: &EntitlementLimits) -> LimitsR {
    LimitsR {
        total_storage: l.total_storage,
        compute_time_per_year: l.compute_time_per_year,
        gpu_compute_time_per_year: l.gpu_compute_time_per_year,
        number_of_projects: l.number_of_projects,
        number_of_users: l.number_of_users,
    }
}

#[derive(Serialize)]
struct ReadmeR<'a> {
    markdown: &'a str,
    html: &'a str,
}

fn readme_r(r: &Readme) -> ReadmeR<'_> {
    ReadmeR {
        markdown: &r.markdown,
        html: &r.html,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BucketR<'a> {
    id: i64,
    bucket: &'a str,
    path: &'a str,
    full_bucket_path_description: String,
    data_item_naming_levels_deep: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DatasetR<'a> {
    dataset: &'a str,
    last_file_created: Option<Iso>,
    total_file_size: i64,
    total_file_count: i64,
    total_item_count: i64,
    #[serde(rename = "totalItemCountChecklistOK")]
    total_item_count_checklist_ok: i64,
    total_item_count_checklist_failed: i64,
    tags: &'a [String],
    #[serde(rename = "type")]
    kind: &'a str,
    category: &'a str,
    bucket: BucketR<'a>,
    bucket_path: &'a str,
}

fn dataset_r(d: &Dataset) -> DatasetR<'_> {
    DatasetR {
        dataset: &d.name,
        last_file_created: iso(&d.last_file_created),
        total_file_size: d.total_file_size,
        total_file_count: d.total_file_count,
        total_item_count: d.total_item_count,
        total_item_count_checklist_ok: d.checklist_ok,
        total_item_count_checklist_failed: d.checklist_failed,
        tags: &d.tags,
        kind: &d.kind,
        category: &d.category,
        bucket: BucketR {
            id: d.bucket_id,
            bucket: &d.bucket_name,
            path: &d.bucket_path,
            full_bucket_path_description: format!("s3://{}{}", d.bucket_name, d.bucket_path),
            data_item_naming_levels_deep: d.levels_deep,
        },
        bucket_path: &d.bucket_path,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExperimentR {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'static str,
    enabled: bool,
    show_to_user: bool,
    help: &'static str,
}

const EXPERIMENTS: &[(&str, &str, &str)] = &[
    (
        "fomo",
        "FOMO: Faster Objects, More Objects",
        "Object detection for microcontrollers.",
    ),
    (
        "byom",
        "Bring your own model",
        "Upload a pretrained model instead of training one.",
    ),
    (
        "synthetic_data",
        "Synthetic data",
        "Generate training data with generative models.",
    ),
    (
        "eon_tuner_v2",
        "EON Tuner v2",
        "Search architectures within your target's budget.",
    ),
    (
        "auto_labeler",
        "Auto-labeler",
        "Cluster and label images automatically.",
    ),
];

/// Experiments an entity has access to; which are enabled is a pure function of its id.
fn experiments(seed: u64, kind: u64, id: i64) -> Vec<ExperimentR> {
    EXPERIMENTS
        .iter()
        .enumerate()
        .map(|(i, &(k, title, help))| ExperimentR {
            kind: k,
            title,
            enabled: hash(&[seed, kind, id as u64, i as u64]).is_multiple_of(3),
            show_to_user: i != 3,
            help,
        })
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ComputeLimitsR {
    requests_cpu: f64,
    requests_memory: i64,
    limits_cpu: f64,
    limits_memory: i64,
}

#[derive(Serialize)]
struct Choice {
    label: &'static str,
    value: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CliListsR {
    object_detection_last_layer_options: &'static [Choice],
    image_input_scaling_options: &'static [Choice],
}

static CLI_LISTS: CliListsR = CliListsR {
    object_detection_last_layer_options: &[
        Choice {
            label: "MobileNetV2 SSD FPN",
            value: "mobilenet-ssd",
        },
        Choice {
            label: "FOMO (Faster Objects, More Objects)",
            value: "fomo",
        },
        Choice {
            label: "YOLOv5",
            value: "yolov5",
        },
    ],
    image_input_scaling_options: &[
        Choice {
            label: "Pixels ranging 0..1 (not normalized)",
            value: "0..1",
        },
        Choice {
            label: "Pixels ranging -1..1 (not normalized)",
            value: "-1..1",
        },
        Choice {
            label: "Pixels ranging 0..255 (not normalized)",
            value: "0..255",
        },
    ],
};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JobLimitR {
    job_limit_m: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrgInfoR<'a, O: Serialize> {
    success: bool,
    organization: O,
    datasets: Vec<DatasetR<'a>>,
    default_compute_limits: ComputeLimitsR,
    experiments: Vec<ExperimentR>,
    cli_lists: &'static CliListsR,
    performance: JobLimitR,
    #[serde(skip_serializing_if = "Option::is_none")]
    entitlement_limits: Option<LimitsR>,
    #[serde(skip_serializing_if = "Option::is_none")]
    readme: Option<ReadmeR<'a>>,
    whitelabel_id: Option<i64>,
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value)
        .unwrap_or_else(|e| error_body(&format!("internal error while rendering: {e}")))
}

/// `{"success": false, "error": "..."}`
pub fn error_body(message: &str) -> Vec<u8> {
    #[derive(Serialize)]
    struct Envelope<'a> {
        success: bool,
        error: &'a str,
    }
    serde_json::to_vec(&Envelope {
        success: false,
        error: message,
    })
    .unwrap_or_else(|_| br#"{"success":false,"error":"internal error"}"#.to_vec())
}

/// get-organization (docs/api.md, op 1).
pub fn org_info(ws: &WorldState, o: &Organization) -> Vec<u8> {
    let enterprise = o.contract_start_date.is_some();
    to_json(&OrgInfoR {
        success: true,
        organization: org_r(ws, o),
        datasets: o.datasets.iter().map(dataset_r).collect(),
        default_compute_limits: ComputeLimitsR {
            requests_cpu: if enterprise { 1.0 } else { 0.5 },
            requests_memory: if enterprise { 4096 } else { 2048 },
            limits_cpu: if enterprise { 4.0 } else { 2.0 },
            limits_memory: if enterprise { 16_384 } else { 4096 },
        },
        experiments: experiments(ws.world.seed, 1, o.id),
        cli_lists: &CLI_LISTS,
        performance: JobLimitR {
            job_limit_m: o.job_limit_m,
        },
        entitlement_limits: o.entitlement_limits.as_ref().map(limits_r),
        readme: o.readme.as_ref().map(readme_r),
        whitelabel_id: o.whitelabel_id,
    })
}

/// list-organizations and list-user-organizations (docs/api.md, ops 3 and 4):
/// `{"success": true, "organizations": [...]}`.
pub fn organizations(ws: &WorldState, org_indices: &[usize]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<O: Serialize> {
        success: bool,
        organizations: O,
    }
    to_json(&Body {
        success: true,
        organizations: each(org_indices, |&i| {
            ws.world.organizations.get(i).map(|o| org_r(ws, o))
        }),
    })
}

/// list-projects and list-user-projects (docs/api.md, ops 5 and 7):
/// `{"success": true, "projects": [...]}`.
pub fn projects(ws: &WorldState, project_indices: &[usize]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<P: Serialize> {
        success: bool,
        projects: P,
    }
    to_json(&Body {
        success: true,
        projects: projects_of(ws, project_indices),
    })
}

// ---------------------------------------------------------------------------------
// get-whitelabel-user (docs/api.md, op 2)

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LicenseR {
    name: &'static str,
    link: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrgSummaryR<'a> {
    id: i64,
    name: &'a str,
    is_developer_profile: bool,
    whitelabel_id: Option<i64>,
    is_admin: bool,
    created: Iso,
    trial_id: Option<i64>,
    trial_expired_date: Option<Iso>,
    trial_upgraded_date: Option<Iso>,
    /// Always an object on the platform (empty when no limit is set), never null.
    entitlement_limits: LimitsR,
    user_count: i64,
    admin_count: i64,
    private_project_count: i64,
    public_project_license: Option<LicenseR>,
    logo: Option<&'a str>,
    last_accessed: Option<Iso>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TrialR<'a> {
    id: i64,
    user_id: i64,
    organization_id: i64,
    created: Iso,
    expiration_date: Iso,
    expired_date: Option<Iso>,
    deleted_date: Option<Iso>,
    upgraded_date: Option<Iso>,
    notes: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WlUserR<'a, O: Serialize, P: Serialize, T: Serialize> {
    #[serde(flatten)]
    user: UserR<'a>,
    organizations: O,
    projects: P,
    experiments: Vec<ExperimentR>,
    suspended: bool,
    trials: T,
    evaluation: bool,
    ambassador: bool,
    // `dailyMetrics` is appended by `whitelabel_user` with the fast writer.
}

/// get-whitelabel-user (docs/api.md, op 2).
pub fn whitelabel_user(ws: &WorldState, u: &User) -> Vec<u8> {
    let now = ws.world.now;
    let orgs = each(ws.memberships(u.id), |&(oi, mi)| {
        let o = ws.world.organizations.get(oi)?;
        let m = o.members.get(mi)?;
        let trial = o.trial_id.and_then(|id| ws.trial(id));
        let visible: Vec<&super::world::Member> = o
            .members
            .iter()
            .filter(|m| ws.user(m.user_id).is_some())
            .collect();
        let projects = ws.org_projects(o.id);
        Some(OrgSummaryR {
            id: o.id,
            name: &o.name,
            is_developer_profile: o.is_developer_profile,
            whitelabel_id: o.whitelabel_id,
            is_admin: m.role == "admin",
            created: Iso::of(&o.created),
            trial_id: o.trial_id,
            trial_expired_date: trial.and_then(|t| iso(&t.expired_date)),
            trial_upgraded_date: trial.and_then(|t| iso(&t.upgraded_date)),
            entitlement_limits: o
                .entitlement_limits
                .as_ref()
                .map_or_else(LimitsR::default, limits_r),
            user_count: visible.len() as i64,
            admin_count: visible.iter().filter(|m| m.role == "admin").count() as i64,
            private_project_count: projects
                .iter()
                .filter(|&&i| {
                    let p = &ws.world.projects[i];
                    !p.is_public && p.deleted_date.is_none()
                })
                .count() as i64,
            public_project_license: (!o.is_developer_profile).then_some(LicenseR {
                name: "Apache-2.0",
                link: "https://www.apache.org/licenses/LICENSE-2.0",
            }),
            logo: o.logo.as_deref(),
            last_accessed: iso(&m.last_access),
        })
    });
    let active: Vec<usize> = ws
        .user_collabs(u.id)
        .iter()
        .copied()
        .filter(|&i| super::world::project_active(&ws.world.projects[i], now))
        .collect();
    let trials: Vec<TrialR> = ws
        .idx
        .user_trials
        .get(&u.id)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|&i| {
            let t = &ws.world.trials[i];
            TrialR {
                id: t.id,
                user_id: t.user_id,
                organization_id: t.organization_id,
                created: Iso::of(&t.created),
                expiration_date: Iso::of(&t.expiration_date),
                expired_date: iso(&t.expired_date),
                deleted_date: iso(&t.deleted_date),
                upgraded_date: iso(&t.upgraded_date),
                notes: t.notes.as_deref(),
            }
        })
        .collect();
    #[derive(Serialize)]
    struct Body<U: Serialize> {
        success: bool,
        user: U,
    }
    let mut body = to_json(&Body {
        success: true,
        user: WlUserR {
            user: user_r(u),
            organizations: orgs,
            projects: projects_of(ws, &active),
            experiments: experiments(ws.world.seed, 2, u.id),
            suspended: u.suspended,
            trials,
            evaluation: u.evaluation,
            ambassador: u.ambassador,
        },
    });
    // The daily metrics (most of the bytes) are written straight after the rest of
    // the user: `...,"ambassador":false}}` becomes `...,"ambassador":false,"dailyMetrics":[...]}}`.
    if body.ends_with(b"}}") {
        body.truncate(body.len() - 2);
        body.extend_from_slice(b",\"dailyMetrics\":");
        let start = body.len();
        metrics::series(ws, u).write_json(&mut body);
        if u.quirks.metrics_at_plus_two {
            at_plus_two(&mut body, start);
        }
        body.extend_from_slice(b"}}");
    }
    body
}

/// Rewrites the daily-metrics dates written from `start` on (midnight UTC) as the same
/// calendar day's midnight at `+02:00`.
fn at_plus_two(body: &mut Vec<u8>, start: usize) {
    const UTC: &[u8] = b"T00:00:00.000Z\",\"totalUsers\"";
    const PLUS_TWO: &[u8] = b"T00:00:00.000+02:00\",\"totalUsers\"";
    let tail = body.split_off(start);
    let mut rest = &tail[..];
    while let Some(i) = memfind(rest, UTC) {
        body.extend_from_slice(&rest[..i]);
        body.extend_from_slice(PLUS_TWO);
        rest = &rest[i + UTC.len()..];
    }
    body.extend_from_slice(rest);
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------
// get-project-info (docs/api.md, op 6)

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DevKeysR<'a> {
    api_key: &'a str,
    hmac_key: &'a str,
}

#[derive(Serialize)]
struct ImpulseR {
    created: bool,
    configured: bool,
    complete: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SensorR<'a> {
    name: &'a str,
    max_sample_length_s: i64,
    frequencies: &'a [f64],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceInfoR<'a> {
    project_id: i64,
    project_owner: &'a str,
    project_name: &'a str,
    deployed_version: i64,
    model_type: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeviceR<'a> {
    id: i64,
    device_id: &'a str,
    created: Iso,
    last_seen: Iso,
    name: &'a str,
    device_type: &'a str,
    sensors: Vec<SensorR<'a>>,
    #[serde(rename = "remote_mgmt_connected")]
    remote_mgmt_connected: bool,
    supports_snapshot_streaming: bool,
    remote_mgmt_mode: &'a str,
    #[serde(rename = "remote_mgmt_host", skip_serializing_if = "Option::is_none")]
    remote_mgmt_host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inference_info: Option<InferenceInfoR<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DataSummaryR<'a> {
    total_length_ms: f64,
    labels: &'a [String],
    data_count: i64,
}

fn summary_r(d: &DataSummary) -> DataSummaryR<'_> {
    DataSummaryR {
        total_length_ms: d.total_length_ms,
        labels: &d.labels,
        data_count: d.data_count,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PerCategoryR<'a> {
    training: DataSummaryR<'a>,
    testing: DataSummaryR<'a>,
    post_processing: DataSummaryR<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ComputeTimeR {
    period_start_date: Iso,
    period_end_date: Iso,
    time_used_ms: i64,
    time_left_ms: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AcquisitionR<'a> {
    interval_ms: i64,
    length_ms: i64,
    segment_shift: bool,
    default_page_size: i64,
    view_type: &'static str,
    grid_column_count: i64,
    grid_column_count_detailed: i64,
    show_exact_sample_length: bool,
    inline_edit_bounding_boxes: bool,
    sensor: &'static str,
    label: &'a str,
    segment_length: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeployR {
    eon_compiler: bool,
    sensor: &'static str,
    arduino_library_name: String,
    tinkerkit_library_name: String,
    particle_library_name: String,
    last_deploy_model_engine: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LatencyDeviceR {
    mcu: &'static str,
    name: &'static str,
    selected: bool,
    int8_latency: f64,
    int8_conv_latency: f64,
    float32_latency: f64,
    float32_conv_latency: f64,
    help_text: &'static str,
}

/// (mcu, name, int8, int8 conv, float32, float32 conv, help)
const LATENCY_DEVICES: &[(&str, &str, f64, f64, f64, f64, &str)] = &[
    (
        "cortex-m4f-80mhz",
        "Low-end MCU",
        12.5,
        10.0,
        48.0,
        40.5,
        "Cortex-M4F at 80 MHz",
    ),
    (
        "cortex-m7-216mhz",
        "High-end MCU",
        3.1,
        2.4,
        11.0,
        9.2,
        "Cortex-M7 at 216 MHz",
    ),
    (
        "nrf52840",
        "Nordic nRF52840",
        16.0,
        13.0,
        61.0,
        52.0,
        "Cortex-M4F at 64 MHz",
    ),
    ("jetson-nano", "NVIDIA Jetson Nano", 0.9, 0.7, 1.2, 1.0, ""),
    (
        "rpi4",
        "Raspberry Pi 4",
        1.5,
        1.2,
        2.8,
        2.2,
        "Cortex-A72 at 1.5 GHz",
    ),
];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UrlsR {
    mobile_client: String,
    mobile_client_computer: String,
    mobile_client_inference: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WizardR<'a> {
    show_wizard: bool,
    step: i64,
    /// `kws` or `cv` (the platform's whole set); left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    tutorial: Option<&'static str>,
    classes: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectPerfR {
    gpu: bool,
    job_limit_m: i64,
    dsp_file_size_mb: i64,
    enterprise_performance: bool,
    train_job_ram_mb: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CsvImportConfigR {
    delimiter: &'static str,
    timestamp_column: &'static str,
    timestamp_format: &'static str,
    label_column: &'static str,
    value_columns: &'static [&'static str],
}

#[derive(Serialize)]
struct RangeR {
    minimum: f64,
    maximum: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemSpecR {
    fast_bytes: RangeR,
    slow_bytes: RangeR,
}

#[derive(Serialize)]
struct MemR {
    ram: MemSpecR,
    rom: MemSpecR,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProcessorR {
    part: &'static str,
    format: &'static str,
    architecture: &'static str,
    specific_architecture: &'static str,
    accelerator: &'static str,
    fpu: bool,
    clock_rate_mhz: RangeR,
    memory: MemR,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TargetDeviceR {
    processors: &'static [ProcessorR],
    board: &'static str,
    name: &'static str,
    latency_device: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BudgetR {
    latency_per_inference_ms: RangeR,
    energy_per_inference_joules: RangeR,
    memory_overhead: MemR,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TargetConstraintsR {
    target_devices: &'static [TargetDeviceR],
    application_budgets: &'static [BudgetR],
    selected_target_based_on: &'static str,
}

const fn range(minimum: f64, maximum: f64) -> RangeR {
    RangeR { minimum, maximum }
}

const fn mem(ram_fast: f64, ram_slow: f64, rom_fast: f64, rom_slow: f64) -> MemR {
    MemR {
        ram: MemSpecR {
            fast_bytes: range(0.0, ram_fast),
            slow_bytes: range(0.0, ram_slow),
        },
        rom: MemSpecR {
            fast_bytes: range(0.0, rom_fast),
            slow_bytes: range(0.0, rom_slow),
        },
    }
}

static TARGETS: [TargetConstraintsR; 2] = [
    TargetConstraintsR {
        target_devices: &[TargetDeviceR {
            processors: &[ProcessorR {
                part: "nRF52840",
                format: "mcu",
                architecture: "Cortex-M",
                specific_architecture: "Cortex-M4F",
                accelerator: "none",
                fpu: true,
                clock_rate_mhz: range(64.0, 64.0),
                memory: mem(262_144.0, 0.0, 1_048_576.0, 0.0),
            }],
            board: "Arduino Nano 33 BLE Sense",
            name: "Gesture wristband",
            latency_device: "nrf52840",
        }],
        application_budgets: &[BudgetR {
            latency_per_inference_ms: range(0.0, 100.0),
            energy_per_inference_joules: range(0.0, 0.005),
            memory_overhead: mem(32_768.0, 0.0, 65_536.0, 0.0),
        }],
        selected_target_based_on: "user-configured",
    },
    TargetConstraintsR {
        target_devices: &[
            TargetDeviceR {
                processors: &[ProcessorR {
                    part: "STM32H747XI",
                    format: "mcu",
                    architecture: "Cortex-M",
                    specific_architecture: "Cortex-M7",
                    accelerator: "none",
                    fpu: true,
                    clock_rate_mhz: range(240.0, 480.0),
                    memory: mem(1_048_576.0, 8_388_608.0, 2_097_152.0, 16_777_216.0),
                }],
                board: "Arduino Portenta H7",
                name: "Camera node",
                latency_device: "cortex-m7-216mhz",
            },
            TargetDeviceR {
                processors: &[ProcessorR {
                    part: "BCM2711",
                    format: "cpu",
                    architecture: "Cortex-A",
                    specific_architecture: "Cortex-A72",
                    accelerator: "none",
                    fpu: true,
                    clock_rate_mhz: range(1500.0, 1500.0),
                    memory: mem(0.0, 4_294_967_296.0, 0.0, 34_359_738_368.0),
                }],
                board: "Raspberry Pi 4",
                name: "Gateway",
                latency_device: "rpi4",
            },
        ],
        application_budgets: &[],
        selected_target_based_on: "default",
    },
];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectInfoR<'a, P: Serialize> {
    success: bool,
    project: P,
    development_keys: DevKeysR<'a>,
    impulse: ImpulseR,
    devices: Vec<DeviceR<'a>>,
    data_summary: DataSummaryR<'a>,
    data_summary_per_category: PerCategoryR<'a>,
    compute_time: ComputeTimeR,
    acquisition_settings: AcquisitionR<'a>,
    collaborators: Vec<UserR<'a>>,
    deploy_settings: DeployR,
    experiments: Vec<ExperimentR>,
    latency_devices: Vec<LatencyDeviceR>,
    urls: UrlsR,
    show_create_first_impulse: bool,
    show_getting_started_wizard: WizardR<'a>,
    performance: ProjectPerfR,
    train_job_notification_uids: &'a [i64],
    dsp_job_notification_uids: &'a [i64],
    model_testing_job_notification_uids: &'a [i64],
    export_job_notification_uids: &'a [i64],
    has_new_training_data: bool,
    studio_url: String,
    in_pretrained_model_flow: bool,
    show_sensor_data_in_acquisition_graph: bool,
    notifications: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    readme: Option<ReadmeR<'a>>,
    csv_import_config: Option<CsvImportConfigR>,
    dsp_page_size: i64,
    target_constraints: &'static TargetConstraintsR,
    default_impulse_id: Option<i64>,
    last_shown_model_engine: &'static str,
    versioning_storage_size_mib: i64,
    /// In the platform's schema, not in the API's description (docs/api.md,
    /// get-project-info; a hard case: fields nobody named).
    #[serde(skip_serializing_if = "Option::is_none")]
    anomaly_labels_config: Option<AnomalyLabelsR>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AnomalyLabelsR {
    anomaly_labels: [&'static str; 1],
    no_anomaly_labels: [&'static str; 1],
}

/// Library name the platform generates for a project (`<slug>_inferencing`).
fn library_name(p: &Project) -> String {
    let slug = p
        .name
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .map(super::generate::ascii_fold)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    let slug = if slug.is_empty() {
        format!("project_{}", p.id)
    } else {
        slug
    };
    format!("{slug}_inferencing")
}

/// get-project-info (docs/api.md, op 6). `impulse` is the requested impulse (already
/// validated).
pub fn project_info(ws: &WorldState, p: &Project, impulse: Option<i64>) -> Vec<u8> {
    let seed = ws.world.seed;
    let h = hash(&[seed, p.id as u64, 0x6]);
    let org = ws.org(p.owner_organization_id);
    let owner_name = org.map(|o| o.name.as_str()).unwrap_or("");
    let impulse_id = impulse.unwrap_or(1);
    let has_impulse = p.impulses > 0;
    let configured =
        has_impulse && !hash(&[seed, p.id as u64, impulse_id as u64]).is_multiple_of(4);
    let labels = &p.data_training.labels;
    let devices = p
        .devices
        .iter()
        .map(|d: &Device| DeviceR {
            id: d.id,
            device_id: &d.device_id,
            created: Iso::of(&d.created),
            last_seen: Iso::of(&d.last_seen),
            name: &d.name,
            device_type: &d.device_type,
            sensors: d
                .sensors
                .iter()
                .map(|s| SensorR {
                    name: &s.name,
                    max_sample_length_s: s.max_sample_length_s,
                    frequencies: &s.frequencies,
                })
                .collect(),
            remote_mgmt_connected: d.remote_mgmt_connected,
            supports_snapshot_streaming: d.supports_snapshot_streaming,
            remote_mgmt_mode: &d.remote_mgmt_mode,
            remote_mgmt_host: d.remote_mgmt_host.as_deref(),
            inference_info: d.deployed_version.map(|v| InferenceInfoR {
                project_id: p.id,
                project_owner: owner_name,
                project_name: &p.name,
                deployed_version: v,
                model_type: &d.model_type,
            }),
        })
        .collect();
    let t = &p.data_training;
    let s = &p.data_testing;
    let used = p.compute.time_used_ms();
    let total = p.compute.total_ms.max(1);
    let mut notifications = Vec::new();
    if used * 10 >= total * 8 {
        notifications.push("Your compute time for this period is almost used up.");
    }
    if p.deleted_date.is_some() {
        notifications.push("This project is scheduled for deletion.");
    }
    let selected = (h % LATENCY_DEVICES.len() as u64) as usize;
    let lib = library_name(p);
    let body = ProjectInfoR {
        success: true,
        project: project_r(ws, p),
        development_keys: DevKeysR {
            api_key: &p.api_key,
            hmac_key: &p.hmac_key,
        },
        impulse: ImpulseR {
            created: has_impulse,
            configured,
            complete: configured && t.data_count > 0,
        },
        devices,
        data_summary: DataSummaryR {
            total_length_ms: t.total_length_ms + s.total_length_ms,
            labels,
            data_count: t.data_count + s.data_count,
        },
        data_summary_per_category: PerCategoryR {
            training: summary_r(t),
            testing: summary_r(s),
            post_processing: summary_r(&p.data_post_processing),
        },
        compute_time: ComputeTimeR {
            period_start_date: Iso::of(&p.compute.period_start),
            period_end_date: Iso::of(&p.compute.period_end),
            time_used_ms: used,
            time_left_ms: p.compute.time_left_ms(),
        },
        acquisition_settings: AcquisitionR {
            interval_ms: 16,
            length_ms: 10_000,
            segment_shift: h & 1 == 1,
            default_page_size: 50,
            view_type: if h & 2 == 0 { "list" } else { "grid" },
            grid_column_count: 3,
            grid_column_count_detailed: 2,
            show_exact_sample_length: h & 4 == 0,
            inline_edit_bounding_boxes: p.labeling_method == "object_detection",
            sensor: "accelerometer",
            label: labels.first().map(String::as_str).unwrap_or("unknown"),
            segment_length: 1000,
        },
        collaborators: p
            .collaborators
            .iter()
            .filter_map(|&id| ws.user(id))
            .map(user_r)
            .collect(),
        deploy_settings: DeployR {
            eon_compiler: h & 8 == 0,
            sensor: "accelerometer",
            arduino_library_name: lib.clone(),
            tinkerkit_library_name: lib.clone(),
            particle_library_name: lib,
            last_deploy_model_engine: "tflite-eon",
        },
        experiments: experiments(seed, 6, p.id),
        latency_devices: LATENCY_DEVICES
            .iter()
            .enumerate()
            .map(|(i, &(mcu, name, a, b, c, d, help))| LatencyDeviceR {
                mcu,
                name,
                selected: i == selected,
                int8_latency: a,
                int8_conv_latency: b,
                float32_latency: c,
                float32_conv_latency: d,
                help_text: help,
            })
            .collect(),
        urls: UrlsR {
            mobile_client: format!("https://smartphone.sandbox.example/?project={}", p.id),
            mobile_client_computer: format!(
                "https://smartphone.sandbox.example/?project={}&computer=1",
                p.id
            ),
            mobile_client_inference: format!(
                "https://smartphone.sandbox.example/classifier.html?project={}",
                p.id
            ),
        },
        show_create_first_impulse: !has_impulse,
        show_getting_started_wizard: WizardR {
            show_wizard: t.data_count == 0,
            step: if t.data_count == 0 { 1 } else { 3 },
            tutorial: match p.category.as_str() {
                "Audio" | "Keyword spotting" => Some("kws"),
                "Images" | "Object detection" => Some("cv"),
                _ => None,
            },
            // The platform's wizard names at most two classes.
            classes: &labels[..labels.len().min(2)],
        },
        performance: ProjectPerfR {
            gpu: p.is_enterprise,
            job_limit_m: org.map(|o| o.job_limit_m).unwrap_or(60),
            dsp_file_size_mb: if p.is_enterprise { 4096 } else { 512 },
            enterprise_performance: p.is_enterprise,
            train_job_ram_mb: if p.is_enterprise { 16_384 } else { 4096 },
        },
        train_job_notification_uids: &p.train_job_notification_uids,
        dsp_job_notification_uids: &p.dsp_job_notification_uids,
        model_testing_job_notification_uids: &p.model_testing_job_notification_uids,
        export_job_notification_uids: &p.export_job_notification_uids,
        has_new_training_data: h & 16 == 0,
        studio_url: format!("https://studio.sandbox.example/studio/{}", p.id),
        in_pretrained_model_flow: false,
        show_sensor_data_in_acquisition_graph: h & 32 == 0,
        notifications,
        readme: p.readme.as_ref().map(readme_r),
        csv_import_config: (h & 64 == 0).then_some(CsvImportConfigR {
            delimiter: ",",
            timestamp_column: "timestamp",
            timestamp_format: "unix_ms",
            label_column: "label",
            value_columns: &["accX", "accY", "accZ"],
        }),
        dsp_page_size: 25,
        target_constraints: &TARGETS[(h >> 8) as usize % TARGETS.len()],
        default_impulse_id: has_impulse.then_some(1),
        last_shown_model_engine: ["tflite-eon", "tflite-eon-ram-optimized", "tflite"]
            [(h >> 12) as usize % 3],
        versioning_storage_size_mib: (t.data_count + s.data_count) / 20,
        anomaly_labels_config: p.quirks.unnamed_fields.then_some(AnomalyLabelsR {
            anomaly_labels: ["anomaly"],
            no_anomaly_labels: ["no anomaly"],
        }),
    };
    to_json(&body)
}

/// create-project (docs/api.md, op 8).
pub fn created(id: i64, api_key: &str) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        success: bool,
        id: i64,
        api_key: &'a str,
    }
    to_json(&Body {
        success: true,
        id,
        api_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn iso_matches_chrono() {
        for secs in [
            0i64,
            951_782_400,
            1_709_210_096,
            4_102_444_799,
            1_234_567_890,
        ] {
            let t = Utc.timestamp_opt(secs, 0).single().unwrap_or_default();
            let expected = t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            assert_eq!(
                serde_json::to_string(&Iso(secs)).ok(),
                Some(format!("\"{expected}\""))
            );
        }
    }
}
