-- A page of applications in id (= creation) order, after the iterator.
-- parameters: $1 = the token's tenant id or '', $2 = iterator (id) or NULL, $3 = rows
-- columns: body, id
SELECT hookd_api_app(t)::text AS body, t.id FROM hookd_tenants t
 WHERE ($1 = '' OR t.id = $1) AND ($2::text IS NULL OR t.id > $2)
 ORDER BY t.id LIMIT $3::integer
