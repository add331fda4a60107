-- entitlements: the inputs of the entitlement report, one row per organization that
-- is not deleted at the as-of date. The report's job turns each row into five rows
-- (storage_bytes, compute_seconds, gpu_compute_seconds, projects, users) and derives
-- pct_used, remaining, status, daily_rate and projected_exhaustion.
--
-- Table names are the mirror's; the as-of views make them show the state at the end
-- of the as-of day. Parameters: :as_of (YYYY-MM-DD) and :cutoff (the next midnight,
-- exclusive, as mirror timestamp text). The job also runs this section as of an
-- earlier date (30 days back, or the first sync if later) for the daily rate.
--
-- Columns the job needs: organization_id, organization_name, limit_* (5), the regular
-- sources storage_bytes, compute_seconds, projects, users, and the developer-profile
-- daily metrics dm_* (latest record on or before :as_of) and dm_prev_* (latest record
-- on or before 30 days earlier).

-- part: organizations
WITH
members AS (
    SELECT organization_id, COUNT(*) AS n, MIN(user_id) AS user_id
    FROM organization_members
    GROUP BY organization_id
),
storage AS (
    SELECT organization_id, SUM(total_file_size) AS bytes
    FROM datasets
    GROUP BY organization_id
),
live_projects AS (
    SELECT owner_organization_id AS organization_id, COUNT(*) AS n
    FROM projects
    WHERE deleted_date IS NULL OR deleted_date >= :cutoff
    GROUP BY owner_organization_id
),
compute AS (
    -- Summed over all the organization's projects, soft-deleted ones included (their
    -- compute was used in the contract year). NULL (no data) when none of its projects
    -- has project info; an organization without projects has no row here and gets 0.
    SELECT p.owner_organization_id AS organization_id,
           SUM(i.compute_time_used_ms) / 1000.0 AS seconds
    FROM projects p
    LEFT JOIN project_info i ON i.project_id = p.id
    GROUP BY p.owner_organization_id
),
dev_user AS (
    -- A developer profile's usage is its single member's daily metrics.
    SELECT o.id AS organization_id, m.user_id
    FROM organizations o
    JOIN members m ON m.organization_id = o.id
    WHERE o.is_developer_profile = 1 AND m.n = 1
),
dm_now AS (
    -- Each developer's latest record on or before :as_of (an index seek per user).
    SELECT d.user_id, d.day,
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
    SELECT d.user_id, d.day,
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
    o.limit_total_storage AS limit_storage_bytes,
    o.limit_compute_time_per_year AS limit_compute_seconds,
    o.limit_gpu_compute_time_per_year AS limit_gpu_compute_seconds,
    o.limit_number_of_projects AS limit_projects,
    o.limit_number_of_users AS limit_users,
    COALESCE(s.bytes, 0) AS storage_bytes,
    CASE WHEN c.organization_id IS NULL THEN 0.0 ELSE c.seconds END AS compute_seconds,
    COALESCE(lp.n, 0) AS projects,
    COALESCE(m.n, 0) AS users,
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
FROM organizations o
LEFT JOIN members m ON m.organization_id = o.id
LEFT JOIN storage s ON s.organization_id = o.id
LEFT JOIN live_projects lp ON lp.organization_id = o.id
LEFT JOIN compute c ON c.organization_id = o.id
LEFT JOIN dev_user du ON du.organization_id = o.id
LEFT JOIN dm_now dn ON dn.user_id = du.user_id
LEFT JOIN dm_prev dp ON dp.user_id = du.user_id
WHERE o.deleted_date IS NULL OR o.deleted_date >= :cutoff
ORDER BY o.id;
