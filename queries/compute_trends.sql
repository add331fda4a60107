-- compute_trends: compute time per user, per white label and per organization.
-- The report's job reads the users' days from daily_metrics itself
-- (src/report/daily.rs; a day's compute time is defined in
-- src/report/compute_trends/read.rs), fills calendar gaps, computes the rolling 7-
-- and 30-day sums over the whole history, the ISO-week and calendar-month totals and
-- the change against the previous period, then keeps the last 30 days, 13 weeks and
-- 12 months. The sections below are its other inputs.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).

-- part: users
-- Each white label user's name and white label (`users_with_whitelabel`,
-- queries/attribution.sql, says which).
SELECT id AS user_id, name AS user_name, whitelabel_id
FROM users_with_whitelabel;

-- part: whitelabels
SELECT whitelabel_id, MAX(whitelabel_name) AS whitelabel_name
FROM organizations
WHERE whitelabel_id IS NOT NULL
GROUP BY whitelabel_id;

-- part: organizations
SELECT id AS organization_id, name AS organization_name
FROM organizations;

-- part: org_events
-- Changes of each organization's compute used (sum over its projects of
-- project_info.compute_time_used_ms / 1000) from the mirror's history: every version
-- of a project's info adds its value on the day it became current and takes it away
-- on the day it was replaced or removed. A project belongs to the organization of its
-- latest version. Both CTEs are MATERIALIZED: `v` is read twice, and SQLite would
-- otherwise copy the whole history views (every column) into temporary tables.
WITH
owner AS MATERIALIZED (
    SELECT id, owner_organization_id, MAX(valid_from) AS seen
    FROM projects_versions
    GROUP BY id
),
v AS MATERIALIZED (
    SELECT
        project_id,
        compute_time_used_ms / 1000.0 AS seconds,
        valid_from,
        CASE WHEN removed_at IS NOT NULL AND (valid_to IS NULL OR removed_at < valid_to)
             THEN removed_at ELSE valid_to END AS valid_until
    FROM project_info_versions
    WHERE compute_time_used_ms IS NOT NULL
)
SELECT o.owner_organization_id AS organization_id, v.valid_from AS day, v.seconds AS delta
FROM v JOIN owner o ON o.id = v.project_id
WHERE o.owner_organization_id IS NOT NULL
UNION ALL
SELECT o.owner_organization_id, v.valid_until, -v.seconds
FROM v JOIN owner o ON o.id = v.project_id
WHERE o.owner_organization_id IS NOT NULL AND v.valid_until < :cutoff;
