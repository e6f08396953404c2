-- Every tenant, for the operators' view (a portal link each).
-- parameters: none
-- columns: id, uid, name
SELECT id, coalesce(uid, '') AS uid, name FROM hookd_tenants ORDER BY created_at, id LIMIT 500
