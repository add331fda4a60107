-- project_compute: one row per project with project information (operation 6): its
-- compute budget period and time used/left, soft-deleted projects included (with
-- their deleted_date). The report's job derives pct_used and flagged.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).

SELECT
    i.project_id,
    p.name AS project_name,
    p.owner_organization_id AS organization_id,
    o.name AS organization_name,
    i.compute_period_start AS period_start,
    i.compute_period_end AS period_end,
    i.compute_time_used_ms AS time_used_ms,
    i.compute_time_left_ms AS time_left_ms,
    p.last_accessed,
    p.deleted_date
FROM project_info i
LEFT JOIN projects p ON p.id = i.project_id
LEFT JOIN organizations o ON o.id = p.owner_organization_id
ORDER BY i.project_id;
