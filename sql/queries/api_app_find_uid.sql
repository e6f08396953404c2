-- The application with this uid (get-or-create), within the token's scope.
-- parameters: $1 = uid, $2 = the token's tenant id or ''
-- columns: body
SELECT hookd_api_app(t)::text AS body FROM hookd_tenants t WHERE t.uid = $1 AND ($2 = '' OR t.id = $2)
