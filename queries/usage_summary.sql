-- usage_summary: facts per organization and per white label; the report's job counts
-- them over the last 7 and 30 days. Storage growth is summed from the users' daily
-- figures by the job itself (src/report/usage_summary/storage.rs).
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).

-- part: scopes
-- Organizations not deleted at the as-of date, and white labels.
SELECT 'organization' AS scope, id, name
FROM organizations
WHERE deleted_date IS NULL OR deleted_date >= :cutoff
UNION ALL
SELECT 'whitelabel', whitelabel_id, MAX(whitelabel_name)
FROM organizations
WHERE whitelabel_id IS NOT NULL
GROUP BY whitelabel_id;

-- part: people
-- One row per person in a scope: organization members (joined when `added`), and
-- white label users (joined when their account was `created`).
SELECT
    'organization' AS scope,
    m.organization_id AS scope_id,
    m.user_id,
    m.added AS joined,
    m.last_seen,
    m.pending,
    m.mfa_configured,
    u.suspended
FROM organization_members m
LEFT JOIN users u ON u.id = m.user_id
UNION ALL
SELECT 'whitelabel', whitelabel_id, id, created, last_seen, pending, mfa_configured, suspended
FROM users_with_whitelabel;

-- part: departed
-- People who left a scope: a membership (or white label user) the mirror marked
-- removed and that is not present at the as-of date.
SELECT 'organization' AS scope, v.organization_id AS scope_id, v.user_id, MAX(v.removed_at) AS removed_at
FROM organization_members_versions v
WHERE v.removed_at IS NOT NULL AND v.removed_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM organization_members m
                   WHERE m.organization_id = v.organization_id AND m.user_id = v.user_id)
GROUP BY v.organization_id, v.user_id
UNION ALL
SELECT 'whitelabel',
       (SELECT MAX(o.whitelabel_id) FROM organizations_versions o WHERE o.id = v.whitelabel_organization_id),
       v.id, MAX(v.removed_at)
FROM users_versions v
WHERE v.removed_at IS NOT NULL AND v.removed_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = v.id)
GROUP BY v.id;

-- part: projects
-- Every project the mirror has known up to the as-of date, in its latest version,
-- with its organization then (`project_organization_versions`, queries/attribution.sql)
-- and the time it was marked removed (if before the cut-off).
SELECT
    p.id AS project_id,
    p.organization_id,
    COALESCE(p.whitelabel_id, o.whitelabel_id) AS whitelabel_id,
    p.created,
    p.deleted_date,
    p.last_accessed,
    CASE WHEN p.removed_at < :cutoff THEN p.removed_at END AS removed_at
FROM (
    SELECT id, organization_id, whitelabel_id, created, deleted_date, last_accessed,
           removed_at, MAX(valid_from) AS seen
    FROM project_organization_versions
    GROUP BY id
) p
LEFT JOIN organizations o ON o.id = p.organization_id;
