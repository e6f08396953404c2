-- Updates an application: NULL name or metadata keep the old value; uid and
-- rate limit change only when their flag is set.
-- parameters: $1 = id, $2 = name or NULL, $3 = set uid (boolean), $4 = uid,
--   $5 = set rate limit (boolean), $6 = rate limit, $7 = metadata or NULL,
--   $8 = delivery settings (JSON object, merged into the stored ones; a null removes one) or NULL
-- columns: body
UPDATE hookd_tenants SET name = coalesce($2, name),
       uid = CASE WHEN $3::boolean THEN $4 ELSE uid END,
       rate_limit = CASE WHEN $5::boolean THEN $6::integer ELSE rate_limit END,
       metadata = coalesce($7::jsonb, metadata),
       settings = CASE WHEN $8::jsonb IS NULL THEN settings ELSE jsonb_strip_nulls(settings || $8::jsonb) END,
       updated_at = now()
 WHERE id = $1
RETURNING hookd_api_app(hookd_tenants)::text AS body
