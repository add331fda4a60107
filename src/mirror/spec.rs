//! Declarative table specifications: one [`TableSpec`] per mirrored resource.
//!
//! Everything else about a table is derived from its spec: the DDL of the current and
//! `_history` tables, the generic versioned upsert in `table.rs`, the as-of views and
//! the schema documentation. Adding a field of the API means adding one line here
//! (and a migration that adds the column).

/// SQL storage class of a column, with the convention the mirror uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// 64-bit integer.
    Int,
    /// Floating point number.
    Real,
    /// A quantity kept without loss: whole numbers as integers, others as floats
    /// (SQLite's NUMERIC affinity).
    Number,
    /// UTF-8 text.
    Text,
    /// 0 or 1.
    Bool,
    /// JSON text (arrays and free-form objects).
    Json,
    /// Timestamp as fixed-width UTC text `YYYY-MM-DDTHH:MM:SS.sssZ` (text order = time order).
    Time,
}

impl Ty {
    /// The declared SQL type.
    pub fn sql(self) -> &'static str {
        match self {
            Ty::Int | Ty::Bool => "INTEGER",
            Ty::Real => "REAL",
            Ty::Number => "NUMERIC",
            Ty::Text | Ty::Json | Ty::Time => "TEXT",
        }
    }
}

/// One column of a mirrored table.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Column name (snake_case of the API field, prefixed with its parent object when flattened).
    pub name: &'static str,
    /// Storage class.
    pub ty: Ty,
}

/// Shorthand used by the table list below.
const fn c(name: &'static str, ty: Ty) -> Column {
    Column { name, ty }
}

/// A mirrored resource: key, scope and columns.
#[derive(Debug)]
pub struct TableSpec {
    /// Table name; its history table is `<name>_history`.
    pub name: &'static str,
    /// What one row is, for the documentation.
    pub doc: &'static str,
    /// Key columns (they come first in the row, in this order, then `columns`).
    pub key: &'static [Column],
    /// Columns that identify the parent document whose fetch lists this table's rows
    /// completely (e.g. `organization_id` for members). Rows of a scope absent from a
    /// newer copy of the parent are marked removed. Empty for root tables, whose
    /// removal is decided at the end of a complete sync.
    pub scope: &'static [&'static str],
    /// Data columns.
    pub columns: &'static [Column],
    /// Whether absence means removal. Daily metrics are facts about past days: a day
    /// that slides out of the API's 365-day window stays in the mirror, not removed.
    pub removable: bool,
    /// Tables derived from this one's rows, kept in step by the writer.
    pub derived: &'static [Derived],
    /// Columns that move on most days without the entity changing: usage figures,
    /// last-seen times, counts. A version that differs from the next one only in
    /// these is archived in `<name>_moves` (the key, these columns and the validity)
    /// instead of as a whole row in `<name>_history`, so a day of usage adds bytes in
    /// proportion to the figures, not to the row (`crate::mirror::moves`).
    pub moving: &'static [&'static str],
    /// The people whose personal fields a row holds. The one declaration of what
    /// is personal: `orgledger forget` empties these fields and looks for their
    /// texts everywhere else, the writer redacts them for people erased while
    /// still on the service, and `--redact-pii` turns report columns named after
    /// them into pseudonyms (`crate::mirror::privacy`).
    pub personal: &'static [Person],
}

/// What a personal field says about its person, which decides where else it is
/// looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identifies {
    /// An e-mail address: looked for in every text, other people's fields too.
    Address,
    /// A login name: looked for as a whole word in free text. Only a user's own
    /// record has one (or an address), which is how their JSON object is told
    /// from another object with the same `id`.
    Handle,
    /// A display name: looked for as a whole word in free text.
    Name,
    /// Anything else of theirs (a photo, a job title, a customer id): emptied,
    /// not looked for elsewhere.
    Other,
}

/// A column that holds something of a person's.
#[derive(Debug, Clone, Copy)]
pub struct PersonalField {
    /// The column.
    pub column: &'static str,
    /// Where the service's JSON holds it, from the object the row is read from
    /// (`["staffInfo", "companyName"]`).
    pub json: &'static [&'static str],
    /// What it says about them.
    pub identifies: Identifies,
}

/// How a row names the person whose fields it holds.
#[derive(Debug, Clone, Copy)]
pub enum Whose {
    /// The row is the person's own user record: this column holds their id, and
    /// so does the `id` of the JSON object it is read from.
    Own(&'static str),
    /// The row is another entity's and names them (a project's owner): the column
    /// that holds their id, and the key of the JSON object that holds it.
    Named {
        /// The column.
        column: &'static str,
        /// The JSON key.
        json: &'static str,
    },
}

/// A person whose fields a table's rows hold.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    /// What a report calls them: a report column `<role>_<field>` (`user_email`,
    /// `owner_name`) holds that field of theirs, and so do a `changes` row's
    /// `before` and `after` for an entity of that type.
    pub role: &'static str,
    /// Where the row holds their id.
    pub whose: Whose,
    /// The columns that are theirs.
    pub fields: &'static [PersonalField],
}

impl Person {
    /// The column that holds their id.
    pub fn id_column(&self) -> &'static str {
        match self.whose {
            Whose::Own(column) | Whose::Named { column, .. } => column,
        }
    }

    /// Whether the row is their own record.
    pub fn owns_the_row(&self) -> bool {
        matches!(self.whose, Whose::Own(_))
    }
}

const fn field(
    column: &'static str,
    json: &'static [&'static str],
    identifies: Identifies,
) -> PersonalField {
    PersonalField {
        column,
        json,
        identifies,
    }
}

/// The fields of a user record that say who the person is. Everything else (ids,
/// flags, times, counts) stays.
const USER_FIELDS: &[PersonalField] = &[
    field("username", &["username"], Identifies::Handle),
    field("name", &["name"], Identifies::Name),
    field("email", &["email"], Identifies::Address),
    field(
        "staff_company_name",
        &["staffInfo", "companyName"],
        Identifies::Other,
    ),
    field("photo", &["photo"], Identifies::Other),
    field("job_title", &["jobTitle"], Identifies::Other),
    field("company_name", &["companyName"], Identifies::Other),
    field(
        "payment_customer_id",
        &["paymentCustomerId"],
        Identifies::Other,
    ),
];

/// The fields of a project that name its owner.
const OWNER_FIELDS: &[PersonalField] = &[
    field("owner", &["owner"], Identifies::Name),
    field("owner_avatar", &["ownerAvatar"], Identifies::Other),
];

/// A user's own record, in a table that calls them `role` and holds their id in
/// `id`.
const fn own_record(role: &'static str, id: &'static str) -> Person {
    Person {
        role,
        whose: Whose::Own(id),
        fields: USER_FIELDS,
    }
}

/// A table derived from another's rows (a cache readers may use in place of them),
/// kept in step by the writer in the transaction that writes the rows, so the two
/// never disagree after a commit.
#[derive(Debug)]
pub struct Derived {
    /// The derived table.
    pub name: &'static str,
    /// Brings the derived rows of one scope in step after the scope was written with
    /// `rows` (every row its document lists, values in column order). `new_scope`:
    /// the scope held no rows before, so `rows` are all it holds. Called only when
    /// the write changed a row.
    pub keep: KeepDerived,
    /// Rebuilds the whole derived table from the rows (after rows were written
    /// some other way: a migration, a test's hand-made mirror).
    pub rebuild: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
}

/// See [`Derived::keep`]: `(conn, scope, rows, new_scope)`.
pub type KeepDerived =
    fn(&rusqlite::Connection, &[Value], &[&[Value]], bool) -> rusqlite::Result<()>;

impl TableSpec {
    /// Key columns followed by data columns: the order of a row's values.
    pub fn all_columns(&self) -> impl Iterator<Item = &Column> {
        self.key.iter().chain(self.columns.iter())
    }

    /// Number of values in a row.
    pub fn width(&self) -> usize {
        self.key.len() + self.columns.len()
    }

    /// Index (in row order) of a column.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.all_columns().position(|col| col.name == name)
    }
}

use Ty::*;
use rusqlite::types::Value;

/// The base fields of a user record, shared by members, collaborators and users.
macro_rules! user_record_columns {
    ($($extra:expr),* $(,)?) => {
        &[
            c("username", Text), c("name", Text), c("email", Text), c("created", Time),
            c("is_staff", Bool), c("has_sudo_rights", Bool), c("staff_company_name", Text),
            c("pending", Bool), c("activated", Bool), c("mfa_configured", Bool),
            c("photo", Text), c("last_seen", Time), c("job_title", Text), c("permissions", Json),
            c("company_name", Text), c("payment_customer_id", Text),
            c("has_pending_payments", Bool), c("tier", Text), c("idps", Json),
            $($extra),*
        ]
    };
}

/// Entitlement limit columns (`entitlementLimits.*`): bytes, seconds, seconds, counts;
/// whole numbers are stored as integers (a 2^60 + 1 limit stays exact).
macro_rules! limit_columns {
    ($($extra:expr),* $(,)?) => {
        &[
            $($extra,)*
            c("limit_total_storage", Number), c("limit_compute_time_per_year", Number),
            c("limit_gpu_compute_time_per_year", Number), c("limit_number_of_projects", Number),
            c("limit_number_of_users", Number),
        ]
    };
}

/// Organizations, from `get-organization` (the full document; `list-organizations`
/// only discovers ids).
pub const ORGANIZATIONS: TableSpec = TableSpec {
    name: "organizations",
    doc: "one organization (`get-organization`), with its entitlement limits and default compute limits",
    key: &[c("id", Int)],
    scope: &[],
    columns: limit_columns![
        c("name", Text),
        c("show_header_img_mask", Bool),
        c("is_developer_profile", Bool),
        c("whitelabel_id", Int),
        c("trial_id", Int),
        c("trial_expired_date", Time),
        c("trial_upgraded_date", Time),
        c("created", Time),
        c("logo", Text),
        c("header_img", Text),
        c("whitelabel_name", Text),
        c("contract_start_date", Time),
        c("deleted_date", Time),
        c("default_requests_cpu", Real),
        c("default_requests_memory", Real),
        c("default_limits_cpu", Real),
        c("default_limits_memory", Real),
        c("job_limit_m", Int),
        c("cli_lists", Json),
        c("readme_markdown", Text),
        c("readme_html", Text),
        c("response_whitelabel_id", Int),
    ],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Members of an organization (`organization.users` of `get-organization`).
pub const ORGANIZATION_MEMBERS: TableSpec = TableSpec {
    name: "organization_members",
    doc: "one user's membership of one organization (`get-organization` `organization.users`)",
    key: &[c("organization_id", Int), c("user_id", Int)],
    scope: &["organization_id"],
    columns: user_record_columns![
        c("added", Time),
        c("role", Text),
        c("project_count", Int),
        c("datasets", Json),
        c("last_access_to_organization", Time),
        c("last_organization_project_accessed", Int),
    ],
    removable: true,
    derived: &[],
    moving: &["last_seen", "project_count", "last_access_to_organization"],
    personal: &[own_record("member", "user_id")],
};

/// White label users (`get-whitelabel-user`).
pub const USERS: TableSpec = TableSpec {
    name: "users",
    doc: "one white label user (`get-whitelabel-user`)",
    key: &[c("id", Int)],
    scope: &[],
    columns: user_record_columns![
        c("suspended", Bool),
        c("evaluation", Bool),
        c("ambassador", Bool),
        c("whitelabel_organization_id", Int),
    ],
    removable: true,
    derived: &[],
    moving: &["last_seen"],
    personal: &[own_record("user", "id")],
};

/// Organization summaries of a white label user (`get-whitelabel-user`
/// `user.organizations`).
pub const USER_ORGANIZATIONS: TableSpec = TableSpec {
    name: "user_organizations",
    doc: "one organization summary of a white label user (`get-whitelabel-user` `user.organizations`)",
    key: &[c("user_id", Int), c("organization_id", Int)],
    scope: &["user_id"],
    columns: limit_columns![
        c("name", Text),
        c("is_developer_profile", Bool),
        c("whitelabel_id", Int),
        c("is_admin", Bool),
        c("created", Time),
        c("trial_id", Int),
        c("trial_expired_date", Time),
        c("trial_upgraded_date", Time),
        c("user_count", Int),
        c("admin_count", Int),
        c("private_project_count", Int),
        c("public_project_license_name", Text),
        c("public_project_license_link", Text),
        c("logo", Text),
        c("last_accessed", Time),
    ],
    removable: true,
    derived: &[],
    moving: &[
        "user_count",
        "admin_count",
        "private_project_count",
        "last_accessed",
    ],
    personal: &[],
};

/// Which projects an organization's get-organization answer lists. A developer-profile
/// project names no `ownerOrganizationId`; when its user has two profiles, the
/// organization that lists it is what says which one it belongs to. Not removable: a
/// soft-deleted project leaves the list, but its compute still belongs to the
/// organization that listed it.
pub const ORGANIZATION_PROJECTS: TableSpec = TableSpec {
    name: "organization_projects",
    doc: "one project an organization's get-organization answer lists (or once listed) in `organization.projects`",
    key: &[c("organization_id", Int), c("project_id", Int)],
    scope: &["organization_id"],
    columns: &[c("project_name", Text)],
    removable: false,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Organizations a user can access (`list-user-organizations`, JWT only).
pub const USER_ORGANIZATION_LINKS: TableSpec = TableSpec {
    name: "user_organization_links",
    doc: "one organization listed for a user by `list-user-organizations`",
    key: &[c("user_id", Int), c("organization_id", Int)],
    scope: &["user_id"],
    columns: &[c("organization_name", Text)],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Projects, from every list that carries them (`get-organization`,
/// `get-whitelabel-user`, `list-projects`, `list-user-projects` and the `project` of
/// `get-project-info`).
pub const PROJECTS: TableSpec = TableSpec {
    name: "projects",
    doc: "one project (`get-organization`, `get-whitelabel-user`, `list-projects`, `get-project-info`, `list-user-projects`)",
    key: &[c("id", Int)],
    scope: &[],
    columns: &[
        c("name", Text),
        c("description", Text),
        c("created", Time),
        c("owner", Text),
        c("owner_is_developer_profile", Bool),
        c("labeling_method", Text),
        c("metadata", Json),
        c("is_enterprise_project", Bool),
        c("whitelabel_id", Int),
        c("tier", Text),
        c("has_public_version", Bool),
        c("is_public", Bool),
        c("allows_live_public_access", Bool),
        c("ind_pause_processing_samples", Bool),
        c("public_project_listed", Bool),
        c("last_accessed", Time),
        c("last_modified", Time),
        c("last_modification_details", Text),
        c("logo", Text),
        c("owner_user_id", Int),
        c("owner_organization_id", Int),
        c("owner_avatar", Text),
        c("developer_profile_user_id", Int),
        c("data_explorer_screenshot", Text),
        c("whitelabel_name", Text),
        c("tags", Json),
        c("category", Text),
        c("license", Text),
        c("deleted_date", Time),
        c("full_deletion_date", Time),
        c("scheduled_full_deletion_date", Time),
    ],
    removable: true,
    derived: &[],
    moving: &["last_accessed"],
    personal: &[
        Person {
            role: "owner",
            whose: Whose::Named {
                column: "owner_user_id",
                json: "ownerUserId",
            },
            fields: OWNER_FIELDS,
        },
        Person {
            role: "owner",
            whose: Whose::Named {
                column: "developer_profile_user_id",
                json: "developerProfileUserId",
            },
            fields: OWNER_FIELDS,
        },
    ],
};

/// Collaborators of a project (`project.collaborators`).
pub const PROJECT_COLLABORATORS: TableSpec = TableSpec {
    name: "project_collaborators",
    doc: "one collaborator of one project (`project.collaborators`)",
    key: &[c("project_id", Int), c("user_id", Int)],
    scope: &["project_id"],
    columns: user_record_columns![c("is_owner", Bool)],
    removable: true,
    derived: &[],
    moving: &["last_seen"],
    personal: &[own_record("collaborator", "user_id")],
};

/// Full project information (`get-project-info`), nested single objects flattened into columns.
pub const PROJECT_INFO: TableSpec = TableSpec {
    name: "project_info",
    doc: "the full information of one project (`get-project-info`); nested objects flattened with a prefix",
    key: &[c("project_id", Int)],
    scope: &[],
    columns: &[
        c("development_api_key", Text),
        c("development_hmac_key", Text),
        c("development_api_key_fingerprint", Text),
        c("development_hmac_key_fingerprint", Text),
        c("impulse_created", Bool),
        c("impulse_configured", Bool),
        c("impulse_complete", Bool),
        c("data_total_length_ms", Real),
        c("data_count", Real),
        c("data_labels", Json),
        c("training_total_length_ms", Real),
        c("training_data_count", Real),
        c("training_labels", Json),
        c("testing_total_length_ms", Real),
        c("testing_data_count", Real),
        c("testing_labels", Json),
        c("post_processing_total_length_ms", Real),
        c("post_processing_data_count", Real),
        c("post_processing_labels", Json),
        c("compute_period_start", Time),
        c("compute_period_end", Time),
        c("compute_time_used_ms", Int),
        c("compute_time_left_ms", Int),
        c("acq_interval_ms", Int),
        c("acq_length_ms", Int),
        c("acq_segment_shift", Bool),
        c("acq_default_page_size", Int),
        c("acq_view_type", Text),
        c("acq_grid_column_count", Int),
        c("acq_grid_column_count_detailed", Int),
        c("acq_show_exact_sample_length", Bool),
        c("acq_inline_edit_bounding_boxes", Bool),
        c("acq_sensor", Text),
        c("acq_label", Text),
        c("acq_segment_length", Int),
        c("deploy_eon_compiler", Bool),
        c("deploy_sensor", Text),
        c("deploy_arduino_library_name", Text),
        c("deploy_tinkerkit_library_name", Text),
        c("deploy_particle_library_name", Text),
        c("deploy_last_model_engine", Text),
        c("url_mobile_client", Text),
        c("url_mobile_client_computer", Text),
        c("url_mobile_client_inference", Text),
        c("show_create_first_impulse", Bool),
        c("wizard_show", Bool),
        c("wizard_step", Int),
        c("wizard_tutorial", Text),
        c("wizard_classes", Json),
        c("perf_gpu", Bool),
        c("perf_job_limit_m", Int),
        c("perf_dsp_file_size_mb", Int),
        c("perf_enterprise_performance", Bool),
        c("perf_train_job_ram_mb", Int),
        c("has_new_training_data", Bool),
        c("studio_url", Text),
        c("in_pretrained_model_flow", Bool),
        c("show_sensor_data_in_acquisition_graph", Bool),
        c("notifications", Json),
        c("readme_markdown", Text),
        c("readme_html", Text),
        c("csv_import_config", Json),
        c("dsp_page_size", Int),
        c("target_constraints", Json),
        c("target_selected_based_on", Text),
        c("default_impulse_id", Int),
        c("last_shown_model_engine", Text),
        c("versioning_storage_size_mib", Int),
    ],
    removable: true,
    derived: &[],
    moving: &["compute_time_used_ms", "compute_time_left_ms"],
    personal: &[],
};

/// Users notified when a project's jobs finish (the four `*NotificationUids` lists).
pub const PROJECT_NOTIFICATION_USERS: TableSpec = TableSpec {
    name: "project_notification_users",
    doc: "one user notified of one kind of job (train, dsp, model_testing, export) of a project",
    key: &[c("project_id", Int), c("job", Text), c("user_id", Int)],
    scope: &["project_id"],
    columns: &[],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Datasets of an organization (`get-organization` `datasets`).
pub const DATASETS: TableSpec = TableSpec {
    name: "datasets",
    doc: "one dataset of one organization (`get-organization` `datasets`); sizes in bytes",
    key: &[c("organization_id", Int), c("dataset", Text)],
    scope: &["organization_id"],
    columns: &[
        c("last_file_created", Time),
        c("total_file_size", Int),
        c("total_file_count", Int),
        c("total_item_count", Int),
        c("total_item_count_checklist_ok", Int),
        c("total_item_count_checklist_failed", Int),
        c("tags", Json),
        c("type", Text),
        c("category", Text),
        c("bucket_id", Int),
        c("bucket", Text),
        c("bucket_inner_path", Text),
        c("bucket_full_path_description", Text),
        c("bucket_naming_levels_deep", Int),
        c("bucket_path", Text),
    ],
    removable: true,
    derived: &[],
    moving: &[
        "last_file_created",
        "total_file_size",
        "total_file_count",
        "total_item_count",
        "total_item_count_checklist_ok",
        "total_item_count_checklist_failed",
    ],
    personal: &[],
};

/// Devices of a project (`get-project-info` `devices`).
pub const DEVICES: TableSpec = TableSpec {
    name: "devices",
    doc: "one device of one project (`get-project-info` `devices`)",
    key: &[c("project_id", Int), c("device_id", Text)],
    scope: &["project_id"],
    columns: &[
        c("id", Int),
        c("created", Time),
        c("last_seen", Time),
        c("name", Text),
        c("device_type", Text),
        c("remote_mgmt_connected", Bool),
        c("supports_snapshot_streaming", Bool),
        c("remote_mgmt_mode", Text),
        c("remote_mgmt_host", Text),
        c("inference_project_id", Int),
        c("inference_project_owner", Text),
        c("inference_project_name", Text),
        c("inference_deployed_version", Int),
        c("inference_model_type", Text),
    ],
    removable: true,
    derived: &[],
    moving: &["last_seen"],
    personal: &[],
};

/// Sensors of a device (`get-project-info` `devices[].sensors`).
pub const DEVICE_SENSORS: TableSpec = TableSpec {
    name: "device_sensors",
    doc: "one sensor of one device; max_sample_length_s in seconds, frequencies in Hz",
    key: &[c("project_id", Int), c("device_id", Text), c("name", Text)],
    scope: &["project_id"],
    columns: &[c("max_sample_length_s", Real), c("frequencies", Json)],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Latency estimates per target (`get-project-info` `latencyDevices`).
pub const LATENCY_DEVICES: TableSpec = TableSpec {
    name: "latency_devices",
    doc: "one latency estimate target of one project (`get-project-info` `latencyDevices`), ms",
    key: &[c("project_id", Int), c("mcu", Text)],
    scope: &["project_id"],
    columns: &[
        c("name", Text),
        c("selected", Bool),
        c("int8_latency", Real),
        c("int8_conv_latency", Real),
        c("float32_latency", Real),
        c("float32_conv_latency", Real),
        c("help_text", Text),
    ],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Experiments visible to an organization (`get-organization`), a project
/// (`get-project-info`) or a user (`get-whitelabel-user`).
pub const EXPERIMENTS: TableSpec = TableSpec {
    name: "experiments",
    doc: "one experiment visible to an organization, project or user (scope_kind says which)",
    key: &[c("scope_kind", Text), c("scope_id", Int), c("type", Text)],
    scope: &["scope_kind", "scope_id"],
    columns: &[
        c("title", Text),
        c("enabled", Bool),
        c("show_to_user", Bool),
        c("help", Text),
    ],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Trials of a white label user (`get-whitelabel-user` `user.trials`).
pub const TRIALS: TableSpec = TableSpec {
    name: "trials",
    doc: "one trial (`get-whitelabel-user` `user.trials`)",
    key: &[c("id", Int)],
    scope: &["user_id"],
    columns: &[
        c("user_id", Int),
        c("organization_id", Int),
        c("created", Time),
        c("expiration_date", Time),
        c("expired_date", Time),
        c("deleted_date", Time),
        c("upgraded_date", Time),
        c("notes", Text),
    ],
    removable: true,
    derived: &[],
    moving: &[],
    personal: &[],
};

/// Daily metrics of a white label user (`get-whitelabel-user` `user.dailyMetrics`).
pub const DAILY_METRICS: TableSpec = TableSpec {
    name: "daily_metrics",
    doc: "one day of one white label user's usage (`get-whitelabel-user` `user.dailyMetrics`); seconds and bytes",
    key: &[c("user_id", Int), c("day", Text)],
    scope: &["user_id"],
    columns: &[
        c("date", Time),
        c("total_users", Int),
        c("total_staff_users", Int),
        c("total_projects", Int),
        c("total_current_contract_cpu_compute_time_seconds", Int),
        c("total_current_contract_gpu_compute_time_seconds", Int),
        c("total_current_contract_compute_time_seconds", Int),
        c("total_storage_size_bytes", Int),
        c("users_added", Int),
        c("users_deleted", Int),
        c("projects_added", Int),
        c("projects_deleted", Int),
        c("cpu_compute_time_seconds", Int),
        c("gpu_compute_time_seconds", Int),
        c("compute_time_seconds", Int),
        c("storage_bytes_added", Int),
        c("storage_bytes_deleted", Int),
        c("staff_users_added", Int),
        c("staff_users_deleted", Int),
        c("compute_time_calculated_since", Time),
    ],
    removable: false,
    derived: &[crate::mirror::daily_series::DERIVED],
    moving: &[],
    personal: &[],
};

/// Every versioned table, parents before children.
pub const TABLES: &[&TableSpec] = &[
    &ORGANIZATIONS,
    &ORGANIZATION_MEMBERS,
    &DATASETS,
    &ORGANIZATION_PROJECTS,
    &USERS,
    &USER_ORGANIZATIONS,
    &USER_ORGANIZATION_LINKS,
    &TRIALS,
    &DAILY_METRICS,
    &PROJECTS,
    &PROJECT_COLLABORATORS,
    &PROJECT_INFO,
    &PROJECT_NOTIFICATION_USERS,
    &DEVICES,
    &DEVICE_SENSORS,
    &LATENCY_DEVICES,
    &EXPERIMENTS,
];

/// The versioned tables as what follows their personal-data declarations reads
/// them (`crate::mirror::privacy`, `forget`, `scrub`, the reports' pseudonyms):
/// [`TABLES`], or in a test of this crate, tables with a declaration added
/// ([`with_tables`]).
pub fn tables() -> &'static [&'static TableSpec] {
    #[cfg(test)]
    if let Some(tables) = TEST_TABLES.get() {
        return tables;
    }
    TABLES
}

#[cfg(test)]
thread_local! {
    static TEST_TABLES: std::cell::Cell<Option<&'static [&'static TableSpec]>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f` with [`tables`] answering `tables` on this thread: a test declares a
/// personal column the mirror does not have, and sees it erased and redacted
/// with no other change.
#[cfg(test)]
pub(crate) fn with_tables<R>(tables: &'static [&'static TableSpec], f: impl FnOnce() -> R) -> R {
    struct Restore(Option<&'static [&'static TableSpec]>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TEST_TABLES.set(self.0);
        }
    }
    let _restore = Restore(TEST_TABLES.replace(Some(tables)));
    f()
}

/// The tables whose rows belong to a row of `parent`: their scope columns hold the
/// parent's key, in key order. A parent marked removed takes these rows with it (a
/// user no longer listed has no trials or organization summaries left either).
pub fn children(parent: &TableSpec) -> &'static [&'static TableSpec] {
    match parent.name {
        "organizations" => &[&ORGANIZATION_MEMBERS, &DATASETS],
        "users" => &[&USER_ORGANIZATIONS, &USER_ORGANIZATION_LINKS, &TRIALS],
        "projects" => &[&PROJECT_COLLABORATORS],
        "project_info" => &[
            &PROJECT_NOTIFICATION_USERS,
            &DEVICES,
            &DEVICE_SENSORS,
            &LATENCY_DEVICES,
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn children_are_removable_and_scoped_by_their_parent_s_key() {
        for parent in TABLES {
            for child in children(parent) {
                assert!(child.removable, "{}", child.name);
                assert_eq!(child.scope.len(), parent.key.len(), "{}", child.name);
            }
        }
        assert_eq!(children(&USERS).len(), 3);
    }

    #[test]
    fn names_are_unique_and_scopes_exist() {
        let mut names = HashSet::new();
        for table in TABLES {
            assert!(names.insert(table.name), "duplicate table {}", table.name);
            let mut cols = HashSet::new();
            for col in table.all_columns() {
                assert!(cols.insert(col.name), "{}.{} twice", table.name, col.name);
            }
            for scope in table.scope {
                assert!(
                    table.index_of(scope).is_some(),
                    "{}: scope {scope}",
                    table.name
                );
            }
        }
    }
}

/// The schema documentation (`docs/schema.md`), generated from the specs so it can
/// never drift from the code: a unit test fails when the file is stale.
pub fn markdown() -> String {
    let mut out = String::from(
        "# The mirror's schema\n\n\
         Generated from `src/mirror/spec.rs` (run `UPDATE_SCHEMA_DOC=1 cargo test --release --lib schema_doc` \
         after changing it). Column names are the snake_case of the API's field names; a \
         nested object's fields carry its name as a prefix (`acq_` = `acquisitionSettings`, \
         `deploy_` = `deploySettings`, `perf_` = `performance`, `limit_` = `entitlementLimits`, \
         `wizard_` = `showGettingStartedWizard`, `url_` = `urls`, `bucket_` = `bucket`).\n\n\
         Types: `INTEGER` (booleans are 0/1), `REAL`, `TEXT`; timestamps are UTC text \
         `YYYY-MM-DDTHH:MM:SS.sssZ` (text order is time order); arrays and free-form \
         objects are JSON text.\n\n\
         Every table below also has:\n\n\
         | column | meaning |\n| --- | --- |\n\
         | `content_hash` | 16-byte digest of the row's values; an equal hash means nothing is written |\n\
         | `valid_from` | server time (HTTP `Date`) of the sync run that wrote this version |\n\
         | `run_id` | `sync_runs.id` of that run |\n\
         | `removed_at`, `removed_run` | set when a complete sync no longer saw the entity (rows are never deleted) |\n\n\
         and a twin `<table>_history` holding every previous version, with `valid_to` \
         (when it stopped being current). Reports read both through as-of views.\n\n\
         A table's *moving* columns (named under each table below: usage figures, last-seen \
         times, counts) change most days while nothing else about the entity does. A version \
         that differs from the next one only in them is archived narrow, in \
         `<table>_moves`: the key, the moving columns, `valid_from`, `valid_to`, `run_id`, \
         and `wide_id`, the `<table>_history` row that holds its other columns (NULL: the \
         current row does). So a day of usage adds tens of bytes per entity, not a whole \
         row. The as-of views, `<table>_versions` and `<table>_archived` (every archived \
         version, whole) put the versions back together; queries never need the narrow \
         tables.\n\n\
         Bookkeeping: `sync_runs` (one row per run: status running/succeeded/partial/failed/aborted, \
         requests, bytes, row counts), `sync_errors` (one row per failure: operation, entity, \
         HTTP status, message, attempts), `raw_documents` (the latest body of every fetched \
         document, so fields the models do not name are kept), `schema_migrations` (one row per \
         schema step applied), `maintenance_runs` (one row per `orgledger check` and per \
         verified backup: kind, time, outcome, the backup file; `status` shows the last of each), \
         `privacy_key` (the random key of the reports' pseudonyms, made once per mirror; never \
         exported, reported or readable by `query`), `erasures` (one row per person erased by \
         `orgledger forget` or the retention of people who left: `user_id`, `at`, `reason` \
         request/retention, `keep_redacted`: later syncs store their personal fields redacted; \
         never what was erased). `PRAGMA user_version` has its lowest bit set while the file \
         rewrite an erasure owes is not done (a crash or a reader cut it short); the next \
         `orgledger forget` or sync does it.\n\n\
         Derived: `daily_series` (one row per white label user with live daily metrics: \
         `user_id` and `series`, their days' CPU, GPU and compute seconds and storage bytes \
         added and deleted packed in one blob, rewritten with the user's `daily_metrics` \
         rows in the same transaction; `compute_trends` and `usage_summary` read it instead \
         of a row per day. NULL when a day or value has no packed form: readers then use \
         `daily_metrics`).\n",
    );
    out.push_str(
        "\nAlerts (docs/alerts.md): `alert_state` (one row per condition that has ever held: \
         key, kind, active, crossings so far, the current crossing's `event_id`, `since`: the \
         as-of date of its last change), `alert_runs` (one row per evaluation: as-of date, mode \
         `advanced` or `read_only`, events), `alert_outbox` (one row per event bound for \
         webhooks: id, type, created_at, body), `alert_deliveries` (one row per event and \
         webhook: the webhook's name and format, the body as sent in that format, status \
         pending/delivered/failed, attempts, last HTTP status, error excerpt). Neither the \
         webhook secret nor a webhook's URL is stored. An e-mail recipient of alerts \
         (docs/email.md) is a destination named `email:<address>`, format `email`, its body \
         the event's JSON, `http_status` the SMTP reply code.\n",
    );
    out.push_str(
        "\nE-mail (docs/email.md): `email_sends` (one row per report subscription, as-of date \
         and recipient: status pending/delivered/failed/superseded, attempts, last attempt, SMTP \
         reply code, error, when sent). Neither the SMTP password nor the messages are \
         stored.\n",
    );
    for table in TABLES {
        out.push_str(&format!("\n## `{}`\n\n{}.\n\n", table.name, table.doc));
        let key: Vec<String> = table.key.iter().map(|c| format!("`{}`", c.name)).collect();
        out.push_str(&format!("Key: {}.", key.join(", ")));
        if !table.scope.is_empty() {
            out.push_str(&format!(
                " Listed completely per {}: rows of a parent that disappear from its newest copy are marked removed.",
                table.scope.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        if let Some(parent) = TABLES
            .iter()
            .find(|p| children(p).iter().any(|c| c.name == table.name))
        {
            out.push_str(&format!(
                " Marked removed with their `{}` row when a complete sync no longer sees it.",
                parent.name
            ));
        }
        if !table.removable {
            out.push_str(" Never marked removed: days that leave the API's window stay.");
        }
        if !table.moving.is_empty() {
            let moving: Vec<String> = table.moving.iter().map(|c| format!("`{c}`")).collect();
            out.push_str(&format!(
                " Moving columns (archived narrow in `{}_moves`): {}.",
                table.name,
                moving.join(", ")
            ));
        }
        for person in table.personal {
            let fields: Vec<String> = person
                .fields
                .iter()
                .map(|f| format!("`{}`", f.column))
                .collect();
            out.push_str(&format!(
                " Personal, of the {} whose user id is in `{}` (emptied by `orgledger forget`, \
                 pseudonyms with `--redact-pii`): {}.",
                person.role,
                person.id_column(),
                fields.join(", ")
            ));
        }
        out.push_str("\n\n| column | type |\n| --- | --- |\n");
        for col in table.all_columns() {
            let ty = match col.ty {
                Ty::Bool => "INTEGER (0/1)",
                Ty::Json => "TEXT (JSON)",
                Ty::Time => "TEXT (timestamp)",
                Ty::Number => "NUMERIC (whole numbers as INTEGER, others as REAL)",
                other => other.sql(),
            };
            out.push_str(&format!("| `{}` | {ty} |\n", col.name));
        }
    }
    out
}

#[cfg(test)]
mod schema_doc {
    #[test]
    fn schema_doc_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.md");
        let generated = super::markdown();
        if std::env::var_os("UPDATE_SCHEMA_DOC").is_some() {
            std::fs::write(path, &generated).expect("write docs/schema.md");
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "docs/schema.md is stale: run UPDATE_SCHEMA_DOC=1 cargo test --release --lib schema_doc"
        );
    }
}
