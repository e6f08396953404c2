-- A new endpoint of an application from the API's normalised fields (a
-- JSON object: url, description, uid, enabled, event_types (array or null:
-- every type), rate_limit, metadata, headers, payload_filter, ordered,
-- channels (array or null: every message), settings (an object; null
-- values are dropped), settings_merge (true: settings are merged into the
-- stored ones, for an update)); its
-- name is its API id.
-- parameters: $1 = application id, $2 = the fields (jsonb), $3 = signing secret (whsec_…)
-- columns: body
WITH n AS (SELECT hookd_uuid7() AS id, $2::jsonb AS c)
INSERT INTO webhook_endpoints (id, name, tenant_id, url, secret, description, uid, enabled, disabled_reason,
                               event_types, rate_limit, metadata, headers, payload_filter, ordered, channels,
                               settings)
SELECT n.id, hookd_api_id('ep', n.id), $1, c->>'url', $3, coalesce(c->>'description', ''), c->>'uid',
       coalesce((c->>'enabled')::boolean, true),
       CASE WHEN coalesce((c->>'enabled')::boolean, true) THEN NULL ELSE 'disabled through the API' END,
       coalesce((SELECT array_agg(x) FROM jsonb_array_elements_text(nullif(c->'event_types', 'null')) x), ARRAY['*']),
       (c->>'rate_limit')::integer, coalesce(nullif(c->'metadata', 'null'), '{}'),
       coalesce(nullif(c->'headers', 'null'), '{}'), nullif(c->'payload_filter', 'null'),
       coalesce((c->>'ordered')::boolean, false),
       (SELECT array_agg(DISTINCT x ORDER BY x) FROM jsonb_array_elements_text(nullif(c->'channels', 'null')) x),
       jsonb_strip_nulls(coalesce(c->'settings', '{}'))
  FROM n
RETURNING hookd_api_endpoint(webhook_endpoints)::text AS body
