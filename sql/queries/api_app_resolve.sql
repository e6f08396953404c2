-- The application (tenant) a path names, by id or uid, within the token's
-- scope ('' = every tenant); the id wins over a uid that looks the same.
-- parameters: $1 = id or uid, $2 = the token's tenant id or ''
-- columns: id
SELECT id FROM hookd_tenants WHERE (id = $1 OR uid = $1) AND ($2 = '' OR id = $2)
 ORDER BY (id = $1) DESC LIMIT 1
