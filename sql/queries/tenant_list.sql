-- Every tenant with its number of endpoints (`hookd tenant list`).
-- parameters: none
-- columns: id, uid, name, endpoints, created_at
SELECT t.id, coalesce(t.uid, '') AS uid, t.name,
       (SELECT count(*) FROM webhook_endpoints e WHERE e.tenant_id = t.id) AS endpoints,
       hookd_api_ts(t.created_at) AS created_at
  FROM hookd_tenants t ORDER BY t.id
