-- storage_trends: storage per organization and per white label at the end of each
-- day, ISO week and month. The report's job (src/report/storage_trends.rs) reads
-- the users' daily net storage (bytes added less deleted) itself
-- (src/report/daily.rs), builds each organization's and white label's level day by
-- day, and cuts it into the periods shown (src/report/periods.rs). The sections
-- below are its other inputs.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).

-- part: organizations
-- The organizations listed (queries/attribution.sql) with their developer profile's
-- user, whose daily metrics carry the organization's storage when it has any.
SELECT r.id AS organization_id, r.name AS organization_name, d.user_id
FROM reported_organizations r
LEFT JOIN developer_profile_user d ON d.organization_id = r.id
ORDER BY r.id;

-- part: whitelabels
SELECT whitelabel_id, whitelabel_name FROM whitelabel_names;

-- part: users
-- Each white label user's white label and the storage of its latest daily record on
-- or before :as_of (`total_bytes`, on `last_day`), with its first record's day: an
-- index seek per user and end (ORDER BY ... LIMIT 1: MIN and MAX over the as-of view
-- read every record of the user), then one for the record (MATERIALIZED: folded into
-- the join, the days were looked up for every row of daily_metrics).
WITH days AS MATERIALIZED (
    SELECT u.id AS user_id, u.whitelabel_id,
           (SELECT x.day FROM daily_metrics x
             WHERE x.user_id = u.id AND x.day <= :as_of
             ORDER BY x.day LIMIT 1) AS first_day,
           (SELECT x.day FROM daily_metrics x
             WHERE x.user_id = u.id AND x.day <= :as_of
             ORDER BY x.day DESC LIMIT 1) AS last_day
    FROM users_with_whitelabel u
)
SELECT days.user_id, days.whitelabel_id, days.first_day, days.last_day,
       d.total_storage_size_bytes AS total_bytes
FROM days
JOIN daily_metrics d ON d.user_id = days.user_id AND d.day = days.last_day;

-- part: dataset_events
-- Changes of each organization's dataset storage (the sum of its datasets'
-- total_file_size) from the mirror's history: every version of a dataset adds its
-- size on the day it became current and takes it away on the day it was replaced or
-- removed.
WITH v AS (
    SELECT organization_id,
           total_file_size AS bytes,
           valid_from,
           CASE WHEN removed_at IS NOT NULL AND (valid_to IS NULL OR removed_at < valid_to)
                THEN removed_at ELSE valid_to END AS valid_until
    FROM datasets_versions
    WHERE total_file_size IS NOT NULL AND organization_id IS NOT NULL
)
SELECT organization_id, valid_from AS day, bytes AS delta
FROM v
UNION ALL
SELECT organization_id, valid_until, -bytes
FROM v
WHERE valid_until < :cutoff;
