-- A tenant's message's deliveries: one per endpoint, with its state.
-- parameters: $1 = tenant id, $2 = message id (msg_…)
-- columns: endpoint_id, url, status, attempts
SELECT hookd_api_id('ep', e.id) AS endpoint_id, e.url, d.status, d.attempts::text AS attempts
  FROM outbox_deliveries d
  JOIN outbox_events m ON m.id = d.event_id AND m.tenant_id = $1 
  AND @in_part(m.part_at, hookd_api_uuid('msg', $2))
  JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = $1
 WHERE d.event_id = hookd_api_uuid('msg', $2) AND @in_part(d.part_at, hookd_api_uuid('msg', $2))
 ORDER BY e.created_at, e.id
