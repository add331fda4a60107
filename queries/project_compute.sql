-- project_compute: one row per project with project information (operation 6): its
-- compute budget period and time used/left, soft-deleted projects included (with
-- their deleted_date). The report's job derives pct_used and flagged.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).
--
-- A project's organization is its `ownerOrganizationId`, else the developer profile
-- of its `developerProfileUserId` (or `ownerUserId`) when the data names exactly one:
-- the view `project_organization` (queries/attribution.sql).

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
LEFT JOIN project_organization a ON a.id = i.project_id
LEFT JOIN organizations o ON o.id = a.organization_id
ORDER BY i.project_id;
