-- A page of applications in id (= creation) order after the iterator, or, reversed
-- (Svix's order=descending, or a prevIterator of an ascending list), in
-- descending order before it (api_reply_list turns a backward page round).
-- Svix's exclusions: applications without endpoints, and applications
-- whose endpoints are all disabled (read through webhook_endpoints_tenant).
-- parameters: $1 = the token's tenant id or '', $2 = exclude those without endpoints (boolean),
--   $3 = exclude those with only disabled endpoints (boolean), $4 = iterator (id) or NULL, $5 = rows,
--   $6 = reversed (boolean: descending)
-- columns: body, id
WITH t AS NOT MATERIALIZED (
  SELECT t AS app, t.id FROM hookd_tenants t
   WHERE ($1 = '' OR t.id = $1)
     AND (NOT $2::boolean OR EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id = t.id))
     AND (NOT $3::boolean OR EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id = t.id AND e.enabled)
          OR NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id = t.id)))
(SELECT hookd_api_app(t.app)::text AS body, t.id FROM t
  WHERE NOT $6::boolean AND ($4::text IS NULL OR t.id > $4)
  ORDER BY t.id LIMIT $5::integer)
UNION ALL
(SELECT hookd_api_app(t.app)::text AS body, t.id FROM t
  WHERE $6::boolean AND ($4::text IS NULL OR t.id < $4)
  ORDER BY t.id DESC LIMIT $5::integer)
