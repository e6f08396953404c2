-- An endpoint of an application, by its API id (ep_…) or its uid.
-- parameters: $1 = application id, $2 = ep_… id or uid
-- columns: id
SELECT id::text AS id FROM webhook_endpoints
 WHERE tenant_id = $1 AND (id = hookd_api_uuid('ep', $2) OR uid = $2)
 ORDER BY (uid = $2) LIMIT 1
