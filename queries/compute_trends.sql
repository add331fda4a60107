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
SELECT whitelabel_id, whitelabel_name FROM whitelabel_names;

-- part: organizations
SELECT id AS organization_id, name AS organization_name
FROM organizations;

-- part: org_events
-- Changes of each organization's compute used (sum over its projects of
-- project_info.compute_time_used_ms / 1000) from the mirror's history: every version
-- of a project's info adds its value on the day it became current and takes it away
-- on the day it was replaced or removed, both for the organization the project
-- belonged to when that version became current (`project_organization_versions`,
-- queries/attribution.sql; before the project's first version, its first
-- organization). The CTEs are MATERIALIZED: `v` and `spans` are each read twice, and
-- SQLite would otherwise copy the whole history views (every column) into temporary
-- tables.
WITH
-- Each project's organizations over time: one span per change of organization.
changed AS (
    SELECT id, organization_id, valid_from,
           ROW_NUMBER() OVER w AS k,
           LAG(organization_id) OVER w AS before
    FROM project_organization_versions
    WINDOW w AS (PARTITION BY id ORDER BY valid_from)
),
spans AS MATERIALIZED (
    SELECT id, organization_id,
           CASE WHEN k = 1 THEN '' ELSE valid_from END AS span_from,
           LEAD(valid_from) OVER (PARTITION BY id ORDER BY valid_from) AS span_to
    FROM changed
    WHERE k = 1 OR organization_id IS NOT before
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
),
owned AS MATERIALIZED (
    SELECT s.organization_id, v.valid_from, v.valid_until, v.seconds
    FROM v
    JOIN spans s
      ON s.id = v.project_id
     AND v.valid_from >= s.span_from
     AND (s.span_to IS NULL OR v.valid_from < s.span_to)
    WHERE s.organization_id IS NOT NULL
)
SELECT organization_id, valid_from AS day, seconds AS delta
FROM owned
UNION ALL
SELECT organization_id, valid_until, -seconds
FROM owned
WHERE valid_until < :cutoff;
