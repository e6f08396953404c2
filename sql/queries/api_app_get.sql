-- One application as the API shows it.
-- parameters: $1 = id
-- columns: body
SELECT hookd_api_app(t)::text AS body FROM hookd_tenants t WHERE t.id = $1
