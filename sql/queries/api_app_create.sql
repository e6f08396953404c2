-- A new application (tenant) with a time-ordered id.
-- parameters: $1 = name, $2 = uid or NULL, $3 = rate limit or NULL, $4 = metadata (JSON object)
-- columns: body
INSERT INTO hookd_tenants (id, uid, name, rate_limit, metadata)
VALUES (hookd_api_id('app', hookd_uuid7()), $2, $1, $3::integer, $4::jsonb)
RETURNING hookd_api_app(hookd_tenants)::text AS body
