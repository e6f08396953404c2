-- A page of the operational-webhook endpoints (the global ones: no tenant)
-- in id order after the iterator, or, reversed (Svix's order=descending, or
-- a prevIterator of an ascending list), in descending order before it.
-- parameters: $1 = iterator (ep_… id) or NULL, $2 = rows, $3 = reversed (boolean: descending)
-- columns: body, api_id
(SELECT hookd_api_endpoint(e)::text AS body, hookd_api_id('ep', e.id) AS api_id FROM webhook_endpoints e
  WHERE NOT $3::boolean AND e.tenant_id IS NULL AND ($1::text IS NULL OR e.id > hookd_api_uuid('ep', $1))
  ORDER BY e.id LIMIT $2::integer)
UNION ALL
(SELECT hookd_api_endpoint(e)::text AS body, hookd_api_id('ep', e.id) AS api_id FROM webhook_endpoints e
  WHERE $3::boolean AND e.tenant_id IS NULL AND ($1::text IS NULL OR e.id < hookd_api_uuid('ep', $1))
  ORDER BY e.id DESC LIMIT $2::integer)
