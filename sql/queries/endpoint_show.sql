-- One subscriber with its secret, its delivery policies and its open and
-- dead deliveries (`hookd endpoint show`).
-- parameters: $1 = name
-- columns: id, name, url, events, enabled, disabled_reason, timeout_ms, max_inflight,
--   secret, created_at, pending_deliveries, dead_deliveries, headers, rate_limit, ordered, payload_filter,
--   settings
SELECT id::text AS id, name, url, array_to_string(event_types, ',') AS events, enabled,
       coalesce(disabled_reason, '') AS disabled_reason, timeout_ms, max_inflight, secret,
       created_at::text AS created_at,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id
           AND d.status IN ('PENDING', 'RETRYING')) AS pending_deliveries,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id
           AND d.status = 'DEAD') AS dead_deliveries,
       (SELECT coalesce(string_agg(k, ', ' ORDER BY k), '') FROM jsonb_object_keys(e.headers) k) AS headers,
       coalesce(e.rate_limit::text, '') AS rate_limit, CASE WHEN e.ordered THEN 'yes' ELSE 'no' END AS ordered,
       coalesce(e.payload_filter::text, '') AS payload_filter, e.settings::text AS settings
  FROM webhook_endpoints e
 WHERE name = $1
