-- trials: one row per trial with its user's and organization's names. The report's
-- job derives status, days_left and deletion_due from the dates.
-- Parameters available: :as_of (YYYY-MM-DD), :cutoff (next midnight, exclusive).

SELECT
    t.id AS trial_id,
    t.user_id,
    u.name AS user_name,
    u.email AS user_email,
    t.organization_id,
    COALESCE(
        o.name,
        (SELECT uo.name FROM user_organizations uo
          WHERE uo.user_id = t.user_id AND uo.organization_id = t.organization_id)
    ) AS organization_name,
    t.created,
    t.expiration_date,
    t.expired_date,
    t.upgraded_date,
    t.deleted_date,
    t.notes
FROM trials t
LEFT JOIN users u ON u.id = t.user_id
LEFT JOIN organizations o ON o.id = t.organization_id
ORDER BY t.id;
