-- entitlements: the inputs of the entitlement report, one row per organization that
-- is not deleted at the as-of date, known either through get-organization (`organizations`; docs/api.md)
-- or only through users' organization summaries (get-whitelabel-user). The report's job turns
-- each row into five rows (storage_bytes, compute_seconds, gpu_compute_seconds,
-- projects, users) and derives pct_used, remaining, status, daily_rate and
-- projected_exhaustion.
--
-- Table names are the mirror's; the as-of views make them show the state at the end
-- of the as-of day. Parameters: :as_of (YYYY-MM-DD) and :cutoff (the next midnight,
-- exclusive, as mirror timestamp text). The job also runs this section as of an
-- earlier date (30 days back, or the first sync if later) for the daily rate.
--
-- Columns the job needs: organization_id, organization_name, limit_* (5) with
-- limit_source_* (5), the regular sources storage_bytes, compute_seconds, projects,
-- users with source_* (4), and the developer-profile daily metrics dm_* (latest record
-- on or before :as_of) and dm_prev_* (latest record on or before 30 days earlier).

-- part: organizations
WITH
-- Developer profiles' users and projects' organizations: queries/attribution.sql.
-- MATERIALIZED: each view is computed once, though this extract reads it twice.
dev_user AS MATERIALIZED (SELECT organization_id, user_id FROM developer_profile_user),
attributed AS MATERIALIZED (SELECT id, deleted_date, organization_id FROM project_organization),
-- The summaries' limits of every organization, for those get-organization leaves empty.
summary_limits AS (
    SELECT organization_id,
           MAX(limit_total_storage) AS storage,
           MAX(limit_compute_time_per_year) AS compute,
           MAX(limit_gpu_compute_time_per_year) AS gpu,
           MAX(limit_number_of_projects) AS projects,
           MAX(limit_number_of_users) AS users
    FROM user_organizations
    GROUP BY organization_id
),
-- The organizations listed (queries/attribution.sql) with their own limits.
orgs AS (
    SELECT r.id, r.name, r.is_developer_profile, r.known_from, r.user_count,
           o.limit_total_storage, o.limit_compute_time_per_year,
           o.limit_gpu_compute_time_per_year, o.limit_number_of_projects,
           o.limit_number_of_users
    FROM reported_organizations r
    LEFT JOIN organizations o ON r.known_from = 'organization' AND o.id = r.id
),
members AS (
    SELECT organization_id, COUNT(*) AS n
    FROM organization_members
    GROUP BY organization_id
),
storage AS (
    SELECT organization_id, SUM(total_file_size) AS bytes
    FROM datasets
    GROUP BY organization_id
),
per_org AS (
    -- Per organization: its live projects, and the compute used summed over all its
    -- projects, soft-deleted ones included (their compute was used in the contract
    -- year). `seconds` is NULL (no data) when none of its projects has project info;
    -- an organization without projects has no row here and gets 0 projects and 0
    -- seconds. One CTE, so the organizations are matched against one per-organization
    -- list, not two. The CAST gives the key INTEGER affinity, like `o.id`: a key
    -- computed by COALESCE has none, and SQLite then builds no index on this list
    -- for the join and scans it once per organization (0.5 s over 4,555
    -- organizations).
    SELECT CAST(a.organization_id AS INTEGER) AS organization_id,
           SUM(a.deleted_date IS NULL OR a.deleted_date >= :cutoff) AS live,
           SUM(i.compute_time_used_ms) / 1000.0 AS seconds
    FROM attributed a
    LEFT JOIN project_info i ON i.project_id = a.id
    GROUP BY a.organization_id
),
dm_now AS (
    -- The profile user's latest record on or before :as_of (an index seek per user).
    SELECT du.organization_id, d.day,
           d.total_storage_size_bytes AS storage_bytes,
           d.total_current_contract_compute_time_seconds AS compute_seconds,
           d.total_current_contract_gpu_compute_time_seconds AS gpu_compute_seconds,
           d.total_projects AS projects,
           d.total_users AS users
    FROM dev_user du
    JOIN daily_metrics d
      ON d.user_id = du.user_id
     AND d.day = (SELECT x.day FROM daily_metrics x
                   WHERE x.user_id = du.user_id AND x.day <= :as_of
                   ORDER BY x.day DESC LIMIT 1)
),
dm_prev AS (
    -- ... and on or before 30 days earlier.
    SELECT du.organization_id, d.day,
           d.total_storage_size_bytes AS storage_bytes,
           d.total_current_contract_compute_time_seconds AS compute_seconds,
           d.total_current_contract_gpu_compute_time_seconds AS gpu_compute_seconds,
           d.total_projects AS projects,
           d.total_users AS users
    FROM dev_user du
    JOIN daily_metrics d
      ON d.user_id = du.user_id
     AND d.day = (SELECT x.day FROM daily_metrics x
                   WHERE x.user_id = du.user_id AND x.day <= date(:as_of, '-30 days')
                   ORDER BY x.day DESC LIMIT 1)
)
SELECT
    o.id AS organization_id,
    o.name AS organization_name,
    o.is_developer_profile,
    COALESCE(o.limit_total_storage, sl.storage) AS limit_storage_bytes,
    COALESCE(o.limit_compute_time_per_year, sl.compute) AS limit_compute_seconds,
    COALESCE(o.limit_gpu_compute_time_per_year, sl.gpu) AS limit_gpu_compute_seconds,
    COALESCE(o.limit_number_of_projects, sl.projects) AS limit_projects,
    COALESCE(o.limit_number_of_users, sl.users) AS limit_users,
    CASE WHEN o.limit_total_storage IS NOT NULL THEN o.known_from
         WHEN sl.storage IS NOT NULL THEN 'user_summary' END AS limit_source_storage_bytes,
    CASE WHEN o.limit_compute_time_per_year IS NOT NULL THEN o.known_from
         WHEN sl.compute IS NOT NULL THEN 'user_summary' END AS limit_source_compute_seconds,
    CASE WHEN o.limit_gpu_compute_time_per_year IS NOT NULL THEN o.known_from
         WHEN sl.gpu IS NOT NULL THEN 'user_summary' END AS limit_source_gpu_compute_seconds,
    CASE WHEN o.limit_number_of_projects IS NOT NULL THEN o.known_from
         WHEN sl.projects IS NOT NULL THEN 'user_summary' END AS limit_source_projects,
    CASE WHEN o.limit_number_of_users IS NOT NULL THEN o.known_from
         WHEN sl.users IS NOT NULL THEN 'user_summary' END AS limit_source_users,
    COALESCE(s.bytes, 0) AS storage_bytes,
    'datasets' AS source_storage_bytes,
    CASE WHEN p.organization_id IS NULL THEN 0.0 ELSE p.seconds END AS compute_seconds,
    'project_info+projects' AS source_compute_seconds,
    COALESCE(p.live, 0) AS projects,
    'projects' AS source_projects,
    -- An organization known only through summaries has no member list: the summaries'
    -- user count stands in.
    CASE WHEN m.n IS NULL AND o.user_count IS NOT NULL THEN o.user_count
         ELSE COALESCE(m.n, 0) END AS users,
    CASE WHEN m.n IS NULL AND o.user_count IS NOT NULL THEN 'user_organizations'
         ELSE 'organization_members' END AS source_users,
    dn.day AS dm_day,
    dn.storage_bytes AS dm_storage_bytes,
    dn.compute_seconds AS dm_compute_seconds,
    dn.gpu_compute_seconds AS dm_gpu_compute_seconds,
    dn.projects AS dm_projects,
    dn.users AS dm_users,
    dp.day AS dm_prev_day,
    dp.storage_bytes AS dm_prev_storage_bytes,
    dp.compute_seconds AS dm_prev_compute_seconds,
    dp.gpu_compute_seconds AS dm_prev_gpu_compute_seconds,
    dp.projects AS dm_prev_projects,
    dp.users AS dm_prev_users
FROM orgs o
LEFT JOIN summary_limits sl ON sl.organization_id = o.id
LEFT JOIN members m ON m.organization_id = o.id
LEFT JOIN storage s ON s.organization_id = o.id
LEFT JOIN per_org p ON p.organization_id = o.id
LEFT JOIN dm_now dn ON dn.organization_id = o.id
LEFT JOIN dm_prev dp ON dp.organization_id = o.id
ORDER BY o.id;

-- part: history
-- The organization pages' history of the figures above (src/report/figure_history.rs):
-- instead of this extract as of each day of their window (a read of the mirror per
-- day), the changes of its inputs over the mirror's history, read once. One row per
-- change: the organization, the metric, `day` (the change holds from the end of that
-- day), `kind`, `value` and, for a summary, `until` (the day it stops holding):
--   'delta'          a change of a count: `projects` (live projects, as `per_org`
--                    counts them) or `users` (members, as `members` counts them), by
--                    a version of a project or a membership that became current or
--                    stopped being current;
--   'limit'          the organization's own limit from that day, one row per metric
--                    and version of the organization (NULL: none);
--   'summary_limit'  a user's summary's limit of the organization (`summary_limits`
--                    takes the largest of those current on a day);
--   'summary_count'  a summary's user count (for an organization known only from
--                    them, the largest is its users);
--   'daily'          a developer profile's daily metric on that day (as `dm_now`),
--                    from the last record on or before :from on.
-- Storage and compute used change as storage_trends' `dataset_events` and
-- compute_trends' `org_events` say; the job reads those sections. Parameters: :from,
-- the window's first day (YYYY-MM-DD), and :as_of.
WITH
dev_user AS MATERIALIZED (SELECT organization_id, user_id FROM developer_profile_user),
-- Each project version's days live: current, and not soft-deleted by the day's end.
project_span AS MATERIALIZED (
    SELECT organization_id, substr(valid_from, 1, 10) AS start,
           MIN(COALESCE(substr(CASE WHEN removed_at IS NOT NULL
                                         AND (valid_to IS NULL OR removed_at < valid_to)
                                    THEN removed_at ELSE valid_to END, 1, 10), '9999-12-31'),
               COALESCE(substr(deleted_date, 1, 10), '9999-12-31')) AS stop
    FROM project_organization_versions
    WHERE organization_id IS NOT NULL
),
member_span AS MATERIALIZED (
    SELECT organization_id, substr(valid_from, 1, 10) AS start,
           substr(CASE WHEN removed_at IS NOT NULL AND (valid_to IS NULL OR removed_at < valid_to)
                       THEN removed_at ELSE valid_to END, 1, 10) AS stop
    FROM organization_members_versions
),
summary_span AS MATERIALIZED (
    SELECT organization_id, substr(valid_from, 1, 10) AS start,
           substr(CASE WHEN removed_at IS NOT NULL AND (valid_to IS NULL OR removed_at < valid_to)
                       THEN removed_at ELSE valid_to END, 1, 10) AS stop,
           limit_total_storage, limit_compute_time_per_year, limit_gpu_compute_time_per_year,
           limit_number_of_projects, limit_number_of_users, user_count
    FROM user_organizations_versions
),
-- Every version's limits: the organization's own, and each summary's.
limit_span AS (
    SELECT id AS organization_id, 'limit' AS kind, substr(valid_from, 1, 10) AS start,
           NULL AS stop, limit_total_storage, limit_compute_time_per_year,
           limit_gpu_compute_time_per_year, limit_number_of_projects, limit_number_of_users
    FROM organizations_versions
    UNION ALL
    SELECT organization_id, 'summary_limit', start, stop, limit_total_storage,
           limit_compute_time_per_year, limit_gpu_compute_time_per_year,
           limit_number_of_projects, limit_number_of_users
    FROM summary_span
),
metric(name) AS (VALUES ('storage_bytes'), ('compute_seconds'), ('gpu_compute_seconds'),
                        ('projects'), ('users'))
SELECT organization_id, 'projects' AS metric, start AS day, 'delta' AS kind, 1.0 AS value,
       NULL AS until
FROM project_span WHERE start < stop
UNION ALL
SELECT organization_id, 'projects', stop, 'delta', -1.0, NULL
FROM project_span WHERE start < stop AND stop <= :as_of
UNION ALL
SELECT organization_id, 'users', start, 'delta', 1.0, NULL FROM member_span
UNION ALL
SELECT organization_id, 'users', stop, 'delta', -1.0, NULL
FROM member_span WHERE stop IS NOT NULL AND stop <= :as_of
UNION ALL
SELECT l.organization_id, m.name, l.start, l.kind,
       CASE m.name WHEN 'storage_bytes' THEN l.limit_total_storage
                   WHEN 'compute_seconds' THEN l.limit_compute_time_per_year
                   WHEN 'gpu_compute_seconds' THEN l.limit_gpu_compute_time_per_year
                   WHEN 'projects' THEN l.limit_number_of_projects
                   ELSE l.limit_number_of_users END,
       l.stop
FROM limit_span l CROSS JOIN metric m
UNION ALL
SELECT organization_id, 'users', start, 'summary_count', user_count, stop FROM summary_span
UNION ALL
SELECT du.organization_id, m.name, d.day, 'daily',
       CASE m.name WHEN 'storage_bytes' THEN d.total_storage_size_bytes
                   WHEN 'compute_seconds' THEN d.total_current_contract_compute_time_seconds
                   WHEN 'gpu_compute_seconds' THEN d.total_current_contract_gpu_compute_time_seconds
                   WHEN 'projects' THEN d.total_projects
                   ELSE d.total_users END,
       NULL
FROM dev_user du
JOIN daily_metrics d
  ON d.user_id = du.user_id
 AND d.day <= :as_of
 AND d.day >= COALESCE((SELECT MAX(x.day) FROM daily_metrics x
                         WHERE x.user_id = du.user_id AND x.day <= :from), :from)
CROSS JOIN metric m;
