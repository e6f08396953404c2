-- An endpoint of an application, by its API id (ep_…) or its uid; the id
-- first (the API refuses uids that start with ep_, and one stored before
-- never hides the endpoint whose id it names).
-- parameters: $1 = application id, $2 = ep_… id or uid
-- columns: id
SELECT id::text AS id FROM webhook_endpoints
 WHERE tenant_id = $1 AND (id = hookd_api_uuid('ep', $2) OR uid = $2)
 ORDER BY (id IS NOT DISTINCT FROM hookd_api_uuid('ep', $2)) DESC LIMIT 1
