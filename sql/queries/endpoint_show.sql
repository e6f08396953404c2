-- One subscriber with its secret and its open and dead deliveries
-- (`hookd endpoint show`).
-- parameters: $1 = name
-- columns: id, name, url, events, enabled, disabled_reason, timeout_ms, max_inflight,
--   secret, created_at, pending_deliveries, dead_deliveries
SELECT id::text AS id, name, url, array_to_string(event_types, ',') AS events, enabled,
       coalesce(disabled_reason, '') AS disabled_reason, timeout_ms, max_inflight, secret,
       created_at::text AS created_at,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id
           AND d.status IN ('PENDING', 'RETRYING')) AS pending_deliveries,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id
           AND d.status = 'DEAD') AS dead_deliveries
  FROM webhook_endpoints e
 WHERE name = $1
