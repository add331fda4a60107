-- What each report row's figures are missing, and how old their inputs are.
-- Installed as TEMP views on every report connection after queries/attribution.sql
-- (so it reads the mirror as of the report's date); `{cutoff}` is replaced by the
-- as-of cut-off. The report job (src/report/completeness.rs) reads the last four
-- views once per run and attaches `complete`, `missing` and `data_as_of` to the rows.
--
-- The rule: a document whose latest fetch failed but of which an earlier version is
-- stored counts with that version (its row stays complete, its `data_as_of` is that
-- version's observation); a document of which no version is stored leaves the rows
-- that need it incomplete, and `missing` names it and why.

DROP VIEW IF EXISTS temp.report_run;
DROP VIEW IF EXISTS temp.failed_document;
DROP VIEW IF EXISTS temp.project_completeness;
DROP VIEW IF EXISTS temp.organization_completeness;
DROP VIEW IF EXISTS temp.missing_users;
DROP VIEW IF EXISTS temp.collided_day;

-- The sync run a report as of T reads: the latest finished run observed before the
-- end of day T.
CREATE TEMP VIEW report_run AS
SELECT id, observed_at
FROM main.sync_runs
WHERE status IN ('succeeded', 'partial') AND observed_at < '{cutoff}'
ORDER BY observed_at DESC, id DESC
LIMIT 1;

-- Each document (`organization N`, `user N`, `project N`) that failed in that run,
-- once, with the observation time of the latest earlier run that did not fail it.
CREATE TEMP VIEW failed_document AS
SELECT e.entity, e.operation, e.run_id,
       substr(e.message, 1, 200) AS message,
       (SELECT MAX(r.observed_at) FROM main.sync_runs r
         WHERE r.status IN ('succeeded', 'partial') AND r.observed_at < rr.observed_at
           AND NOT EXISTS (SELECT 1 FROM main.sync_errors x
                            WHERE x.run_id = r.id AND x.entity = e.entity)) AS earlier_ok
FROM report_run rr
JOIN main.sync_errors e ON e.run_id = rr.id
WHERE e.entity IS NOT NULL
  AND e.id = (SELECT MIN(y.id) FROM main.sync_errors y
               WHERE y.run_id = rr.id AND y.entity = e.entity);

-- One row per project the mirror knows at T (soft-deleted ones included): what its
-- compute figure lacks (`missing` NULL when nothing) and when its information was
-- observed. A project whose organization the data cannot name says so.
CREATE TEMP VIEW project_completeness AS
WITH
-- MATERIALIZED: the as-of views are unions without an index; each is read once and
-- joined through an automatic index.
attributed AS MATERIALIZED (SELECT id, organization_id, deleted_date FROM project_organization),
p AS MATERIALIZED (SELECT id, developer_profile_user_id, owner_user_id FROM projects),
info AS MATERIALIZED (SELECT project_id, valid_from FROM project_info),
failed AS MATERIALIZED (
    SELECT CAST(substr(entity, 9) AS INTEGER) AS project_id, operation, run_id, message,
           earlier_ok
    FROM failed_document
    WHERE entity LIKE 'project %'
),
-- A user's developer-profile organizations, for projects that name only their user.
profiles AS MATERIALIZED (
    SELECT user_id, COUNT(*) AS n, group_concat(organization_id, ', ') AS ids
    FROM (SELECT DISTINCT user_id, organization_id FROM developer_profile_user
          UNION
          SELECT l.user_id, l.organization_id
          FROM user_organization_links l
          JOIN organizations o ON o.id = l.organization_id AND o.is_developer_profile = 1
          ORDER BY 1, 2)
    GROUP BY user_id
)
SELECT
    a.id AS project_id,
    a.organization_id,
    CASE WHEN i.project_id IS NOT NULL THEN NULL
         WHEN f.project_id IS NOT NULL
              THEN 'project ' || a.id || ' (' || f.operation || ' failed in sync run '
                   || f.run_id || ': ' || f.message || ')'
         WHEN a.deleted_date IS NOT NULL
              THEN 'project ' || a.id || ' (deleted; the service no longer serves its '
                   || 'information and none is stored)'
         ELSE 'project ' || a.id || ' (no project information stored)'
    END AS info_missing,
    CASE WHEN a.organization_id IS NOT NULL THEN NULL
         WHEN pr.n > 1
              THEN 'organization unknown: the project names no owner organization and its '
                   || 'user ' || COALESCE(p.developer_profile_user_id, p.owner_user_id)
                   || ' has ' || pr.n || ' developer profiles (' || pr.ids || '), '
                   || 'none of whose get-organization answers lists it'
         ELSE 'organization unknown: the project names no owner organization and no '
              || 'developer profile of its user is known'
    END AS organization_missing,
    CASE WHEN i.project_id IS NULL THEN NULL
         WHEN f.project_id IS NOT NULL THEN MAX(i.valid_from, COALESCE(f.earlier_ok, ''))
         ELSE COALESCE(rr.observed_at, i.valid_from)
    END AS data_as_of
FROM attributed a
JOIN p ON p.id = a.id
LEFT JOIN info i ON i.project_id = a.id
LEFT JOIN failed f ON f.project_id = a.id
LEFT JOIN profiles pr ON pr.user_id = COALESCE(p.developer_profile_user_id, p.owner_user_id)
LEFT JOIN report_run rr;

-- One row per organization the reports can show (get-organization, or users' summaries
-- only): what its own document lacks and when it was observed. The job adds what
-- its compute (the sum over its projects) lacks from `project_completeness`.
CREATE TEMP VIEW organization_completeness AS
WITH
failed AS MATERIALIZED (
    SELECT CAST(substr(entity, 14) AS INTEGER) AS organization_id, operation, run_id,
           message, earlier_ok
    FROM failed_document
    WHERE entity LIKE 'organization %'
),
ids AS (
    SELECT id FROM organizations
    UNION
    SELECT organization_id FROM user_organizations
),
o AS MATERIALIZED (SELECT id, valid_from FROM organizations)
SELECT
    ids.id AS organization_id,
    CASE WHEN o.id IS NULL AND f.organization_id IS NOT NULL
         THEN 'organization ' || ids.id || ' (' || f.operation || ' failed in sync run '
              || f.run_id || ': ' || f.message || ')'
    END AS document_missing,
    CASE WHEN o.id IS NULL THEN rr.observed_at
         WHEN f.organization_id IS NOT NULL THEN MAX(o.valid_from, COALESCE(f.earlier_ok, ''))
         ELSE COALESCE(rr.observed_at, o.valid_from)
    END AS document_as_of
FROM ids
LEFT JOIN o ON o.id = ids.id
LEFT JOIN failed f ON f.organization_id = ids.id
LEFT JOIN report_run rr;

-- White label users (get-whitelabel-user, docs/api.md) that failed in the report's run with no version
-- stored: a white label's counts lack them.
CREATE TEMP VIEW missing_users AS
SELECT CAST(substr(f.entity, 6) AS INTEGER) AS user_id,
       f.entity || ' (' || f.operation || ' failed in sync run ' || f.run_id || ': '
       || f.message || ')' AS missing
FROM failed_document f
WHERE f.entity LIKE 'user %' AND f.entity NOT LIKE 'user % on %'
  AND f.operation = 'get-whitelabel-user'
  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = CAST(substr(f.entity, 6) AS INTEGER));

-- Days on which more than one of a user's daily records fell in the report's run (the
-- sync kept the last; sync_errors names them `user N on YYYY-MM-DD`, see
-- `day_entity` in src/sync/rows/whitelabel_user.rs): the figures of that user and
-- day, and of the user's white label, are not what the service meant. A day is an
-- entity of its own rather than a line of the user's message, so the view reads the
-- user and the day straight from it and the rows that need that day are flagged,
-- whichever source (daily_metrics or the packed series) the report read.
CREATE TEMP VIEW collided_day AS
SELECT c.user_id, c.day, w.whitelabel_id, c.missing
FROM (SELECT CAST(substr(f.entity, 6) AS INTEGER) AS user_id,
             substr(f.entity, -10) AS day,
             f.entity || ' (' || f.operation || ' in sync run ' || f.run_id || ': '
             || f.message || ')' AS missing
      FROM failed_document f
      WHERE f.entity LIKE 'user % on ____-__-__') c
LEFT JOIN users_with_whitelabel w ON w.id = c.user_id;
