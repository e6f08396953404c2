-- Adds a subscriber; the event filters come as one comma-separated text that
-- Postgres splits and trims ("order.*, user.*" -> {order.*,user.*}).
-- parameters: $1 = name, $2 = url, $3 = signing secret (whsec_…),
--   $4 = event filters, comma-separated, $5 = timeout in ms, $6 = max in flight,
--   $7 = tenant id or NULL (a global endpoint), $8 = payload filter (JSON) or NULL,
--   $9 = custom headers (JSON object) or NULL, $10 = rate limit (deliveries/s) or NULL,
--   $11 = ordered (boolean), $12 = delivery settings (JSON object; nulls dropped) or NULL
-- columns: id
INSERT INTO webhook_endpoints (name, url, secret, event_types, timeout_ms, max_inflight, tenant_id, payload_filter,
                               headers, rate_limit, ordered, settings)
VALUES ($1, $2, $3, (SELECT array_agg(trim(x)) FROM unnest(string_to_array($4, ',')) x WHERE trim(x) <> ''),
        $5, $6, $7, $8::jsonb, coalesce($9::jsonb, '{}'), $10::integer, $11::boolean,
        jsonb_strip_nulls(coalesce($12::jsonb, '{}')))
RETURNING id::text AS id
