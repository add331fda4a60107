-- project_compute: one row per project with project information (operation 6): its
-- compute budget period and time used/left, soft-deleted projects included (with
-- their deleted_date). The report's job derives pct_used and flagged.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).
--
-- A project's organization is its `ownerOrganizationId`, else the developer profile
-- of its `developerProfileUserId` (or `ownerUserId`) when the data names exactly one
-- (the same attribution as queries/entitlements.sql; each file stands alone, so a
-- copy in the queries folder can override either).

WITH
-- The user a developer profile belongs to, as the data says it, best evidence first:
-- the user its projects name as `developerProfileUserId`, the admin whose organization
-- summary marks it a developer profile, its admin member (operation 1), any user
-- whose summary marks it one, and last its only member. A pending second member is
-- never the profile's user while one of the others names someone.
dev_claims AS (
    SELECT owner_organization_id AS organization_id, developer_profile_user_id AS user_id,
           1 AS rank
    FROM projects
    WHERE owner_organization_id IS NOT NULL AND developer_profile_user_id IS NOT NULL
    UNION ALL
    SELECT organization_id, user_id, CASE WHEN is_admin = 1 THEN 2 ELSE 4 END
    FROM user_organizations
    WHERE is_developer_profile = 1
    UNION ALL
    SELECT m.organization_id, m.user_id, 3
    FROM organization_members m
    JOIN organizations o ON o.id = m.organization_id AND o.is_developer_profile = 1
    WHERE m.role = 'admin'
    UNION ALL
    SELECT m.organization_id, MIN(m.user_id), 5
    FROM organization_members m
    JOIN organizations o ON o.id = m.organization_id AND o.is_developer_profile = 1
    GROUP BY m.organization_id
    HAVING COUNT(*) = 1
),
dev_user AS (
    SELECT organization_id, user_id
    FROM (SELECT organization_id, user_id,
                 ROW_NUMBER() OVER (PARTITION BY organization_id ORDER BY rank, user_id) AS k
          FROM dev_claims)
    WHERE k = 1
),
-- Each user's developer-profile organization, when the data names exactly one: the
-- organization of a project whose owner organization is left out (null).
user_profile AS (
    SELECT user_id, MIN(organization_id) AS organization_id
    FROM (SELECT user_id, organization_id FROM dev_user
          UNION
          SELECT l.user_id, l.organization_id
          FROM user_organization_links l
          JOIN organizations o ON o.id = l.organization_id AND o.is_developer_profile = 1
          WHERE NOT EXISTS (SELECT 1 FROM dev_user d
                            WHERE d.organization_id = l.organization_id))
    GROUP BY user_id
    HAVING COUNT(DISTINCT organization_id) = 1
),
attributed AS (
    SELECT p.id, p.deleted_date,
           COALESCE(p.owner_organization_id, up.organization_id) AS organization_id
    FROM projects p
    LEFT JOIN user_profile up
      ON p.owner_organization_id IS NULL
     AND up.user_id = COALESCE(p.developer_profile_user_id, p.owner_user_id)
)
SELECT
    i.project_id,
    p.name AS project_name,
    a.organization_id,
    o.name AS organization_name,
    i.compute_period_start AS period_start,
    i.compute_period_end AS period_end,
    i.compute_time_used_ms AS time_used_ms,
    i.compute_time_left_ms AS time_left_ms,
    p.last_accessed,
    p.deleted_date
FROM project_info i
LEFT JOIN projects p ON p.id = i.project_id
LEFT JOIN attributed a ON a.id = i.project_id
LEFT JOIN organizations o ON o.id = a.organization_id
ORDER BY i.project_id;
