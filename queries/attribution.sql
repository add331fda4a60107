-- Who owns what, and which organizations a report lists, shared by the extracts of
-- `entitlements`, `project_compute`, `compute_trends`, `usage_summary`,
-- `storage_trends` and the completeness of their rows.
-- Installed as TEMP views on every report connection after the as-of views (so it
-- reads the mirror as of the report's date; `{cutoff}` is the as-of date's cut-off);
-- extracts and custom reports can all read `reported_organizations`,
-- `whitelabel_names`, `developer_profile_user`, `project_organization`, `project_organization_versions`
-- and `users_with_whitelabel`.

DROP VIEW IF EXISTS temp.reported_organizations;
DROP VIEW IF EXISTS temp.whitelabel_names;
DROP VIEW IF EXISTS temp.developer_profile_user;
DROP VIEW IF EXISTS temp.project_organization;
DROP VIEW IF EXISTS temp.project_organization_versions;
DROP VIEW IF EXISTS temp.project_organization_rule;
DROP VIEW IF EXISTS temp.users_with_whitelabel;

-- The organizations a report lists as of its date: every organization known
-- through get-organization (`organizations`; docs/api.md) that is not deleted by
-- then, and those known only through users' organization summaries
-- (get-whitelabel-user), e.g. when the credentials cannot read them through
-- get-organization: one row per organization, `known_from` saying which.
CREATE TEMP VIEW reported_organizations AS
SELECT id, name, is_developer_profile, 'organization' AS known_from, NULL AS user_count
FROM organizations
WHERE deleted_date IS NULL OR deleted_date >= '{cutoff}'
UNION ALL
SELECT s.organization_id, MIN(s.name), MAX(s.is_developer_profile), 'user_summary',
       MAX(s.user_count)
FROM user_organizations s
WHERE NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = s.organization_id)
GROUP BY s.organization_id;

-- Each white label's name: the one its organizations carry.
CREATE TEMP VIEW whitelabel_names AS
SELECT whitelabel_id, MAX(whitelabel_name) AS whitelabel_name
FROM organizations
WHERE whitelabel_id IS NOT NULL
GROUP BY whitelabel_id;

-- Every white label user (all columns of `users`) with its white label
-- (`whitelabel_id`): the white label of the user's white label organization, else of
-- the first of the user's organizations that has one.
CREATE TEMP VIEW users_with_whitelabel AS
SELECT
    u.*,
    COALESCE(
        wo.whitelabel_id,
        (SELECT MIN(uo.whitelabel_id) FROM user_organizations uo WHERE uo.user_id = u.id)
    ) AS whitelabel_id
FROM users u
LEFT JOIN organizations wo ON wo.id = u.whitelabel_organization_id;

-- The user a developer profile belongs to, as the data says it, best evidence first:
-- the user its projects name as `developerProfileUserId`, the admin whose organization
-- summary marks it a developer profile, its admin member (get-organization, docs/api.md), any user
-- whose summary marks it one, and last its only member. A pending second member is
-- never the profile's user while one of the others names someone.
CREATE TEMP VIEW developer_profile_user AS
WITH
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
)
SELECT organization_id, user_id
FROM (SELECT organization_id, user_id,
             ROW_NUMBER() OVER (PARTITION BY organization_id ORDER BY rank, user_id) AS k
      FROM dev_claims)
WHERE k = 1;

-- A project's organization: the one rule every report, the organization pages and
-- custom reports read (reports/README.md, "A project's organization"). Its
-- `ownerOrganizationId`; else the organization whose get-organization answer lists it
-- (when exactly one does: a user with two developer profiles is told apart this way);
-- else the developer profile of its `developerProfileUserId` (or `ownerUserId`) when
-- the data names exactly one. The rule is applied to every version of a project, so
-- the organization a project belonged to on a day is the one of its version current
-- that day; the second and third steps read the listings and profiles as of the
-- report's date. `current` = 1 marks the as-of date's rows (`projects`), 0 every
-- version up to the as-of date (`projects_versions`); the two views below each keep
-- one kind, and SQLite skips the other arm of the union (a constant-false WHERE).
CREATE TEMP VIEW project_organization_rule AS
WITH
-- MATERIALIZED: computed once, not again for every row the NOT EXISTS below tests.
dev_user AS MATERIALIZED (SELECT organization_id, user_id FROM developer_profile_user),
-- Each user's developer-profile organization, when the data names exactly one.
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
listed AS MATERIALIZED (
    SELECT project_id, MIN(organization_id) AS organization_id
    FROM organization_projects
    GROUP BY project_id
    HAVING COUNT(*) = 1
)
SELECT p.current, p.id, p.valid_from, p.valid_to, p.removed_at, p.deleted_date,
       p.created, p.last_accessed, p.whitelabel_id,
       COALESCE(p.owner_organization_id, l.organization_id, up.organization_id)
           AS organization_id
FROM (SELECT 1 AS current, id, owner_organization_id, developer_profile_user_id,
             owner_user_id, valid_from, NULL AS valid_to, NULL AS removed_at, deleted_date,
             created, last_accessed, whitelabel_id
      FROM projects
      UNION ALL
      SELECT 0, id, owner_organization_id, developer_profile_user_id, owner_user_id,
             valid_from, valid_to, removed_at, deleted_date, created, last_accessed,
             whitelabel_id
      FROM projects_versions) p
LEFT JOIN listed l ON p.owner_organization_id IS NULL AND l.project_id = p.id
LEFT JOIN user_profile up
  ON p.owner_organization_id IS NULL
 AND up.user_id = COALESCE(p.developer_profile_user_id, p.owner_user_id);

-- Each project of the as-of date with its organization.
CREATE TEMP VIEW project_organization AS
SELECT id, deleted_date, organization_id
FROM project_organization_rule
WHERE current = 1;

-- Every version of every project up to the as-of date (`valid_to` NULL while
-- current, `removed_at` when a complete sync stopped seeing it) with the organization
-- the project belonged to while that version was current.
CREATE TEMP VIEW project_organization_versions AS
SELECT id, organization_id, valid_from, valid_to, removed_at, deleted_date, created,
       last_accessed, whitelabel_id
FROM project_organization_rule
WHERE current = 0;
