-- Changes a subscriber by name (`hookd endpoint update`): each NULL leaves
-- its column as it is. No row: no such endpoint.
-- parameters: $1 = name, $2 = url or NULL, $3 = event filters (comma-separated) or NULL,
--   $4 = timeout in ms or NULL, $5 = max in flight or NULL, $6 = payload filter (JSON; 'null': none) or NULL,
--   $7 = custom headers (JSON object, replacing them) or NULL, $8 = rate limit (0: none) or NULL,
--   $9 = ordered (boolean) or NULL, $10 = delivery settings (JSON object, merged into the
--   endpoint's; a null removes one) or NULL
-- columns: id
UPDATE webhook_endpoints
   SET url = coalesce($2, url),
       event_types = coalesce((SELECT array_agg(trim(x)) FROM unnest(string_to_array($3, ',')) x
                                WHERE trim(x) <> ''), CASE WHEN $3 IS NULL THEN event_types END, ARRAY['*']),
       timeout_ms = coalesce($4::integer, timeout_ms), max_inflight = coalesce($5::integer, max_inflight),
       payload_filter = CASE WHEN $6::text IS NULL THEN payload_filter ELSE nullif($6::jsonb, 'null'::jsonb) END,
       headers = coalesce($7::jsonb, headers),
       rate_limit = CASE WHEN $8::integer IS NULL THEN rate_limit ELSE nullif($8::integer, 0) END,
       ordered = coalesce($9::boolean, ordered),
       settings = CASE WHEN $10::jsonb IS NULL THEN settings ELSE jsonb_strip_nulls(settings || $10::jsonb) END,
       updated_at = now()
 WHERE name = $1
RETURNING id::text AS id
