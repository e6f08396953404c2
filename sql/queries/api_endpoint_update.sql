-- Changes the fields present in the API's normalised object (see
-- api_endpoint_create); absent keys keep their value, null resets.
-- parameters: $1 = endpoint id (uuid), $2 = the fields (jsonb)
-- columns: body
UPDATE webhook_endpoints e SET
   url = coalesce(c->>'url', e.url),
   description = CASE WHEN c ? 'description' THEN coalesce(c->>'description', '') ELSE e.description END,
   uid = CASE WHEN c ? 'uid' THEN c->>'uid' ELSE e.uid END,
   enabled = CASE WHEN c ? 'enabled' THEN coalesce((c->>'enabled')::boolean, true) ELSE e.enabled END,
   disabled_reason = CASE WHEN NOT c ? 'enabled' THEN e.disabled_reason
                          WHEN coalesce((c->>'enabled')::boolean, true) THEN NULL
                          WHEN e.enabled THEN 'disabled through the API' ELSE e.disabled_reason END,
   event_types = CASE WHEN c ? 'event_types' THEN coalesce((SELECT array_agg(x)
       FROM jsonb_array_elements_text(nullif(c->'event_types', 'null')) x), ARRAY['*']) ELSE e.event_types END,
   rate_limit = CASE WHEN c ? 'rate_limit' THEN (c->>'rate_limit')::integer ELSE e.rate_limit END,
   metadata = CASE WHEN c ? 'metadata' THEN coalesce(nullif(c->'metadata', 'null'), '{}') ELSE e.metadata END,
   headers = CASE WHEN c ? 'headers' THEN coalesce(nullif(c->'headers', 'null'), '{}') ELSE e.headers END,
   payload_filter = CASE WHEN c ? 'payload_filter' THEN nullif(c->'payload_filter', 'null') ELSE e.payload_filter END,
   ordered = CASE WHEN c ? 'ordered' THEN coalesce((c->>'ordered')::boolean, false) ELSE e.ordered END,
   channels = CASE WHEN c ? 'channels' THEN (SELECT array_agg(DISTINCT x ORDER BY x)
       FROM jsonb_array_elements_text(nullif(c->'channels', 'null')) x) ELSE e.channels END,
   settings = CASE WHEN c ? 'settings' THEN jsonb_strip_nulls(CASE WHEN c ? 'settings_merge' THEN e.settings
       ELSE '{}' END || c->'settings') ELSE e.settings END,
   updated_at = now()
  FROM (SELECT $2::jsonb AS c) x
 WHERE e.id = $1::uuid
RETURNING hookd_api_endpoint(e)::text AS body
