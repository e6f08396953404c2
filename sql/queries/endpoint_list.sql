-- Every subscriber, by name (`hookd endpoint list`), or a tenant's.
-- parameters: $1 = tenant id or NULL (every endpoint)
-- columns: name, enabled, events, url, disabled_reason, tenant
SELECT e.name, CASE WHEN e.enabled THEN 'yes' ELSE 'no' END AS enabled,
       array_to_string(e.event_types, ',') AS events, e.url,
       coalesce(e.disabled_reason, '') AS disabled_reason, coalesce(t.uid, t.id, '-') AS tenant
  FROM webhook_endpoints e LEFT JOIN hookd_tenants t ON t.id = e.tenant_id
 WHERE $1::text IS NULL OR e.tenant_id = $1
 ORDER BY e.name
