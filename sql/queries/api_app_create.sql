-- A new application (tenant) with a time-ordered id.
-- parameters: $1 = name, $2 = uid or NULL, $3 = rate limit or NULL, $4 = metadata (JSON object),
--   $5 = delivery settings (JSON object; nulls dropped) or NULL
-- columns: body
INSERT INTO hookd_tenants (id, uid, name, rate_limit, metadata, settings)
VALUES (hookd_api_id('app', hookd_uuid7()), $2, $1, $3::integer, $4::jsonb,
        jsonb_strip_nulls(coalesce($5::jsonb, '{}')))
RETURNING hookd_api_app(hookd_tenants)::text AS body
