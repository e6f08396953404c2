-- One tenant with its endpoints, messages and open and dead deliveries
-- (`hookd tenant show`).
-- parameters: $1 = id
-- columns: id, uid, name, rate_limit, metadata, created_at, endpoints, messages, pending_deliveries,
--   dead_deliveries, tokens, settings
SELECT t.id, coalesce(t.uid, '') AS uid, t.name, coalesce(t.rate_limit::text, '') AS rate_limit,
       t.metadata::text AS metadata, hookd_api_ts(t.created_at) AS created_at,
       (SELECT count(*) FROM webhook_endpoints e WHERE e.tenant_id = t.id) AS endpoints,
       (SELECT count(*) FROM outbox_events o WHERE o.tenant_id = t.id) AS messages,
       (SELECT count(*) FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE e.tenant_id = t.id AND d.status IN ('PENDING', 'RETRYING')) AS pending_deliveries,
       (SELECT count(*) FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE e.tenant_id = t.id AND d.status = 'DEAD') AS dead_deliveries,
       (SELECT count(*) FROM hookd_api_tokens k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL) AS tokens,
       t.settings::text AS settings
  FROM hookd_tenants t WHERE t.id = $1
