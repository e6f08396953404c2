-- Adds a subscriber; the event filters come as one comma-separated text that
-- Postgres splits and trims ("order.*, user.*" -> {order.*,user.*}).
-- parameters: $1 = name, $2 = url, $3 = signing secret (whsec_…),
--   $4 = event filters, comma-separated, $5 = timeout in ms, $6 = max in flight
-- columns: id
INSERT INTO webhook_endpoints (name, url, secret, event_types, timeout_ms, max_inflight)
VALUES ($1, $2, $3, (SELECT array_agg(trim(x)) FROM unnest(string_to_array($4, ',')) x WHERE trim(x) <> ''),
        $5, $6)
RETURNING id::text AS id
