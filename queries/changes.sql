-- changes: one row per change the mirror observed between two points of its history
-- (`orgledger changes`, and the `changes` report: the 7 days up to the as-of date).
--
-- Every version of a document is a row of `<table>` (the current one) or
-- `<table>_archived` (earlier ones, with `valid_to`: the view orgledger installs over
-- `<table>_history` and the narrow `<table>_moves`); `removed_at`/`removed_run` say
-- when a complete sync stopped seeing it. Walking a document's versions in time order
-- (LAG over `valid_from`), each version is compared with the one before it:
--   * no earlier version, or the earlier one had been removed → `*.added`;
--   * a version with `removed_at`                            → `*.removed`;
--   * otherwise, a field whose value differs                 → that field's kind.
-- A field is compared with the previous version's value of the same field, so a
-- version written because some other column moved reports nothing for it, and a sync
-- that saw nothing new wrote no version at all: only transitions between distinct
-- observed states come out, however many syncs saw each state.
--
-- Parameters (bound by orgledger): the window is the (time, run) pairs after
-- (:since_at, :since_run) and up to (:until_at, :until_run), inclusive. Times are
-- mirror timestamp text; a run id breaks ties between runs that observed the same
-- second. History older than the window is skipped early (`valid_to >= :since_at`):
-- the version current at the window's start is kept as the "before" of its first
-- change.
--
-- Columns: observed_at, run_id, kind, entity_type, entity_id, entity_name, field,
-- before, after. Limits are REAL in the mirror; they are written without a trailing
-- `.0` when whole.

WITH
org_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(limit_total_storage) OVER w AS p_total_storage,
        LAG(limit_compute_time_per_year) OVER w AS p_compute,
        LAG(limit_gpu_compute_time_per_year) OVER w AS p_gpu,
        LAG(limit_number_of_projects) OVER w AS p_projects,
        LAG(limit_number_of_users) OVER w AS p_users
    FROM (
        SELECT id, name, limit_total_storage, limit_compute_time_per_year,
               limit_gpu_compute_time_per_year, limit_number_of_projects,
               limit_number_of_users, valid_from, run_id, removed_at, removed_run
          FROM main.organizations
        UNION ALL
        SELECT id, name, limit_total_storage, limit_compute_time_per_year,
               limit_gpu_compute_time_per_year, limit_number_of_projects,
               limit_number_of_users, valid_from, run_id, removed_at, removed_run
          FROM organizations_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY id ORDER BY valid_from, run_id)
),
-- The newest name of each organization, for rows about its members and trials.
org_name AS MATERIALIZED (
    SELECT id, name FROM main.organizations
),
org_limits AS (
    SELECT valid_from, run_id, id, name, 'limit_total_storage' AS field,
           p_total_storage AS before, limit_total_storage AS after
      FROM org_v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
    UNION ALL
    SELECT valid_from, run_id, id, name, 'limit_compute_time_per_year',
           p_compute, limit_compute_time_per_year
      FROM org_v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
    UNION ALL
    SELECT valid_from, run_id, id, name, 'limit_gpu_compute_time_per_year',
           p_gpu, limit_gpu_compute_time_per_year
      FROM org_v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
    UNION ALL
    SELECT valid_from, run_id, id, name, 'limit_number_of_projects',
           p_projects, limit_number_of_projects
      FROM org_v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
    UNION ALL
    SELECT valid_from, run_id, id, name, 'limit_number_of_users',
           p_users, limit_number_of_users
      FROM org_v WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
),
member_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(role) OVER w AS prev_role
    FROM (
        SELECT organization_id, user_id, name, role, valid_from, run_id, removed_at, removed_run
          FROM main.organization_members
        UNION ALL
        SELECT organization_id, user_id, name, role, valid_from, run_id, removed_at, removed_run
          FROM organization_members_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY organization_id, user_id ORDER BY valid_from, run_id)
),
user_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(suspended) OVER w AS prev_suspended
    FROM (
        SELECT id, name, suspended, valid_from, run_id, removed_at, removed_run
          FROM main.users
        UNION ALL
        SELECT id, name, suspended, valid_from, run_id, removed_at, removed_run
          FROM users_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY id ORDER BY valid_from, run_id)
),
project_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(deleted_date) OVER w AS prev_deleted_date
    FROM (
        SELECT id, name, deleted_date, valid_from, run_id, removed_at, removed_run
          FROM main.projects
        UNION ALL
        SELECT id, name, deleted_date, valid_from, run_id, removed_at, removed_run
          FROM projects_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY id ORDER BY valid_from, run_id)
),
-- A compute budget is the period's used + left time: it changes when the budget is
-- changed, not as compute is used.
budget_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(compute_period_start) OVER w AS prev_period_start,
        LAG(budget_ms) OVER w AS prev_budget_ms
    FROM (
        SELECT project_id, compute_period_start,
               compute_time_used_ms + compute_time_left_ms AS budget_ms,
               valid_from, run_id, removed_at
          FROM main.project_info
        UNION ALL
        SELECT project_id, compute_period_start,
               compute_time_used_ms + compute_time_left_ms,
               valid_from, run_id, removed_at
          FROM project_info_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY project_id ORDER BY valid_from, run_id)
),
trial_v AS MATERIALIZED (
    SELECT v.*,
        LAG(valid_from) OVER w AS prev_from,
        LAG(removed_at) OVER w AS prev_removed_at,
        LAG(upgraded_date) OVER w AS prev_upgraded,
        LAG(expired_date) OVER w AS prev_expired,
        LAG(deleted_date) OVER w AS prev_deleted
    FROM (
        SELECT id, organization_id, upgraded_date, expired_date, deleted_date,
               valid_from, run_id, removed_at
          FROM main.trials
        UNION ALL
        SELECT id, organization_id, upgraded_date, expired_date, deleted_date,
               valid_from, run_id, removed_at
          FROM trials_archived WHERE valid_to >= :since_at
    ) v
    WINDOW w AS (PARTITION BY id ORDER BY valid_from, run_id)
),
events (observed_at, run_id, kind, entity_type, entity_id, entity_name, field, before, after) AS (
    -- organizations
    SELECT valid_from, run_id, 'organization.added', 'organization', CAST(id AS TEXT), name,
           NULL, NULL, NULL
      FROM org_v WHERE prev_from IS NULL OR prev_removed_at IS NOT NULL
    UNION ALL
    SELECT removed_at, removed_run, 'organization.removed', 'organization', CAST(id AS TEXT),
           name, NULL, NULL, NULL
      FROM org_v WHERE removed_at IS NOT NULL
    UNION ALL
    SELECT valid_from, run_id, 'limit.changed', 'organization', CAST(id AS TEXT), name, field,
           CASE WHEN before = CAST(before AS INTEGER) THEN CAST(CAST(before AS INTEGER) AS TEXT)
                ELSE CAST(before AS TEXT) END,
           CASE WHEN after = CAST(after AS INTEGER) THEN CAST(CAST(after AS INTEGER) AS TEXT)
                ELSE CAST(after AS TEXT) END
      FROM org_limits WHERE before IS NOT after
    -- members: entity_id is `organization_id/user_id`
    UNION ALL
    SELECT m.valid_from, m.run_id, 'member.added', 'member',
           m.organization_id || '/' || m.user_id,
           m.name || ' in ' || COALESCE(o.name, 'organization ' || m.organization_id),
           'role', NULL, m.role
      FROM member_v m LEFT JOIN org_name o ON o.id = m.organization_id
     WHERE m.prev_from IS NULL OR m.prev_removed_at IS NOT NULL
    UNION ALL
    SELECT m.removed_at, m.removed_run, 'member.removed', 'member',
           m.organization_id || '/' || m.user_id,
           m.name || ' in ' || COALESCE(o.name, 'organization ' || m.organization_id),
           'role', m.role, NULL
      FROM member_v m LEFT JOIN org_name o ON o.id = m.organization_id
     WHERE m.removed_at IS NOT NULL
    UNION ALL
    SELECT m.valid_from, m.run_id, 'member.role_changed', 'member',
           m.organization_id || '/' || m.user_id,
           m.name || ' in ' || COALESCE(o.name, 'organization ' || m.organization_id),
           'role', m.prev_role, m.role
      FROM member_v m LEFT JOIN org_name o ON o.id = m.organization_id
     WHERE m.prev_from IS NOT NULL AND m.prev_removed_at IS NULL AND m.role IS NOT m.prev_role
    -- white label users
    UNION ALL
    SELECT valid_from, run_id, 'user.added', 'user', CAST(id AS TEXT), name, NULL, NULL, NULL
      FROM user_v WHERE prev_from IS NULL OR prev_removed_at IS NOT NULL
    UNION ALL
    SELECT removed_at, removed_run, 'user.removed', 'user', CAST(id AS TEXT), name,
           NULL, NULL, NULL
      FROM user_v WHERE removed_at IS NOT NULL
    UNION ALL
    SELECT valid_from, run_id, 'user.suspended', 'user', CAST(id AS TEXT), name,
           'suspended', CAST(prev_suspended AS TEXT), CAST(suspended AS TEXT)
      FROM user_v
     WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
       AND suspended = 1 AND prev_suspended IS NOT 1
    -- projects
    UNION ALL
    SELECT valid_from, run_id, 'project.added', 'project', CAST(id AS TEXT), name,
           NULL, NULL, NULL
      FROM project_v WHERE prev_from IS NULL OR prev_removed_at IS NOT NULL
    UNION ALL
    SELECT removed_at, removed_run, 'project.removed', 'project', CAST(id AS TEXT), name,
           NULL, NULL, NULL
      FROM project_v WHERE removed_at IS NOT NULL
    UNION ALL
    SELECT valid_from, run_id, 'project.deleted', 'project', CAST(id AS TEXT), name,
           'deleted_date', NULL, deleted_date
      FROM project_v
     WHERE prev_from IS NOT NULL AND prev_removed_at IS NULL
       AND deleted_date IS NOT NULL AND prev_deleted_date IS NULL
    -- compute budgets (project information)
    UNION ALL
    SELECT b.valid_from, b.run_id, 'project.budget_changed', 'project',
           CAST(b.project_id AS TEXT), p.name,
           'compute_period_start', b.prev_period_start, b.compute_period_start
      FROM budget_v b LEFT JOIN main.projects p ON p.id = b.project_id
     WHERE b.prev_from IS NOT NULL AND b.prev_removed_at IS NULL
       AND b.compute_period_start IS NOT b.prev_period_start
    UNION ALL
    SELECT b.valid_from, b.run_id, 'project.budget_changed', 'project',
           CAST(b.project_id AS TEXT), p.name,
           'compute_budget_ms', CAST(b.prev_budget_ms AS TEXT), CAST(b.budget_ms AS TEXT)
      FROM budget_v b LEFT JOIN main.projects p ON p.id = b.project_id
     WHERE b.prev_from IS NOT NULL AND b.prev_removed_at IS NULL
       AND b.budget_ms IS NOT b.prev_budget_ms
    -- trials: entity_name is the trial's organization
    UNION ALL
    SELECT t.valid_from, t.run_id, 'trial.started', 'trial', CAST(t.id AS TEXT), o.name,
           NULL, NULL, NULL
      FROM trial_v t LEFT JOIN org_name o ON o.id = t.organization_id
     WHERE t.prev_from IS NULL OR t.prev_removed_at IS NOT NULL
    UNION ALL
    SELECT t.valid_from, t.run_id, 'trial.upgraded', 'trial', CAST(t.id AS TEXT), o.name,
           'upgraded_date', NULL, t.upgraded_date
      FROM trial_v t LEFT JOIN org_name o ON o.id = t.organization_id
     WHERE t.prev_from IS NOT NULL AND t.prev_removed_at IS NULL
       AND t.upgraded_date IS NOT NULL AND t.prev_upgraded IS NULL
    UNION ALL
    SELECT t.valid_from, t.run_id, 'trial.expired', 'trial', CAST(t.id AS TEXT), o.name,
           'expired_date', NULL, t.expired_date
      FROM trial_v t LEFT JOIN org_name o ON o.id = t.organization_id
     WHERE t.prev_from IS NOT NULL AND t.prev_removed_at IS NULL
       AND t.expired_date IS NOT NULL AND t.prev_expired IS NULL
    UNION ALL
    SELECT t.valid_from, t.run_id, 'trial.deleted', 'trial', CAST(t.id AS TEXT), o.name,
           'deleted_date', NULL, t.deleted_date
      FROM trial_v t LEFT JOIN org_name o ON o.id = t.organization_id
     WHERE t.prev_from IS NOT NULL AND t.prev_removed_at IS NULL
       AND t.deleted_date IS NOT NULL AND t.prev_deleted IS NULL
)
SELECT observed_at, run_id, kind, entity_type, entity_id, entity_name, field, before, after
  FROM events
 WHERE (observed_at, run_id) > (:since_at, :since_run)
   AND (observed_at, run_id) <= (:until_at, :until_run)
 ORDER BY observed_at, run_id, entity_type, entity_id, kind, field
