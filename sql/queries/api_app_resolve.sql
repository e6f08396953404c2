-- The application (tenant) a path names, by id or uid (hookd_tenant_id,
-- sql/0027: the id first), within the token's scope ('' = every tenant).
-- parameters: $1 = id or uid, $2 = the token's tenant id or ''
-- columns: id
SELECT id FROM hookd_tenants WHERE id = hookd_tenant_id($1) AND ($2 = '' OR id = $2)
