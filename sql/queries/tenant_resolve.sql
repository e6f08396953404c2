-- A tenant by id or uid (hookd_tenant_id, sql/0027: the id first).
-- parameters: $1 = id or uid
-- columns: id
SELECT t.id FROM (SELECT hookd_tenant_id($1) AS id) t WHERE t.id IS NOT NULL
