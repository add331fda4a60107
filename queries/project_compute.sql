-- project_compute: one row per project the mirror knows (get-project-info's information, docs/api.md;
-- or a project list): its compute budget period and time used/left, soft-deleted
-- projects included (with their deleted_date). A project without stored information
-- has empty figures (its `missing` says why). The report's job derives pct_used and
-- flagged.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).
--
-- A project's organization is its `ownerOrganizationId`, else the developer profile
-- of its `developerProfileUserId` (or `ownerUserId`) when the data names exactly one:
-- the view `project_organization` (queries/attribution.sql).

WITH ids AS (
    SELECT project_id AS id FROM project_info
    UNION
    SELECT id FROM projects
)
SELECT
    ids.id AS project_id,
    p.name AS project_name,
    a.organization_id,
    o.name AS organization_name,
    i.compute_period_start AS period_start,
    i.compute_period_end AS period_end,
    i.compute_time_used_ms AS time_used_ms,
    i.compute_time_left_ms AS time_left_ms,
    p.last_accessed,
    p.deleted_date
FROM ids
LEFT JOIN project_info i ON i.project_id = ids.id
LEFT JOIN projects p ON p.id = ids.id
LEFT JOIN project_organization a ON a.id = ids.id
LEFT JOIN organizations o ON o.id = a.organization_id
ORDER BY ids.id;
