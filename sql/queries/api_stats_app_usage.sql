-- Svix's application usage statistics: per application, the message
-- destinations (deliveries, a message to one endpoint) created in
-- [since, until), of every application or of those asked for by id or uid,
-- with the asked ones that name no application.
-- parameters: $1 = since (timestamptz), $2 = until (timestamptz),
--   $3 = ids or uids as a JSON array, or NULL for every application
-- columns: resolved, body
WITH asked AS (
    SELECT x AS ref, hookd_tenant_id(x) AS id FROM jsonb_array_elements_text($3::jsonb) x
), apps AS (
    SELECT t.id, t.uid FROM hookd_tenants t WHERE $3::jsonb IS NULL OR t.id IN (SELECT id FROM asked)
), counts AS (
    SELECT e.tenant_id, count(*) AS n
      FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.created_at >= $1::timestamptz AND d.created_at < $2::timestamptz
       AND e.tenant_id IN (SELECT id FROM apps)
     GROUP BY e.tenant_id
)
SELECT (SELECT count(*) FROM apps) AS resolved,
       jsonb_build_object(
           'appStats', coalesce((SELECT jsonb_agg(jsonb_build_object('messageDestinations', coalesce(c.n, 0),
                                                                     'appId', a.id, 'appUid', a.uid) ORDER BY a.id)
                                   FROM apps a LEFT JOIN counts c ON c.tenant_id = a.id), '[]'),
           'unresolvedAppIds', coalesce((SELECT jsonb_agg(DISTINCT ref) FROM asked WHERE id IS NULL), '[]')) AS body
