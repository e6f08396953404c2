-- A page of an application's endpoints in id order after the iterator, or, reversed
-- (Svix's order=descending, or a prevIterator of an ascending list), in
-- descending order before it (api_reply_list turns a backward page round).
-- parameters: $1 = application id, $2 = iterator (ep_… id) or NULL, $3 = rows, $4 = reversed (boolean: descending)
-- columns: body, api_id
(SELECT hookd_api_endpoint(e)::text AS body, hookd_api_id('ep', e.id) AS api_id FROM webhook_endpoints e
  WHERE NOT $4::boolean AND e.tenant_id = $1 AND ($2::text IS NULL OR e.id > hookd_api_uuid('ep', $2))
  ORDER BY e.id LIMIT $3::integer)
UNION ALL
(SELECT hookd_api_endpoint(e)::text AS body, hookd_api_id('ep', e.id) AS api_id FROM webhook_endpoints e
  WHERE $4::boolean AND e.tenant_id = $1 AND ($2::text IS NULL OR e.id < hookd_api_uuid('ep', $2))
  ORDER BY e.id DESC LIMIT $3::integer)
