-- An operational-webhook endpoint (a global one: no tenant, the operator's
-- endpoints included), by its API id (ep_…) or its uid, the id first.
-- parameters: $1 = ep_… id or uid
-- columns: id
SELECT id::text AS id FROM webhook_endpoints
 WHERE tenant_id IS NULL AND (id = hookd_api_uuid('ep', $1) OR uid = $1)
 ORDER BY (id IS NOT DISTINCT FROM hookd_api_uuid('ep', $1)) DESC LIMIT 1
