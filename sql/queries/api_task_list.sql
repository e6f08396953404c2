-- A page of background tasks within the token's scope, in id (= creation)
-- order after the iterator, or, reversed (Svix's order=descending, or a
-- prevIterator of an ascending list), in descending order before it
-- (api_reply_list turns a backward page round); optionally one status, one
-- kind.
-- parameters: $1 = the token's tenant id or '', $2 = status or NULL, $3 = kind or NULL,
--   $4 = iterator (qtask_… id) or NULL, $5 = rows, $6 = reversed (boolean: descending)
-- columns: body, api_id
(SELECT hookd_api_task(t)::text AS body, hookd_api_id('qtask', t.id) AS api_id FROM hookd_background_tasks t
  WHERE NOT $6::boolean AND ($1 = '' OR t.tenant_id = $1) AND ($2::text IS NULL OR t.status = $2)
    AND ($3::text IS NULL OR t.kind = $3) AND ($4::text IS NULL OR t.id > hookd_api_uuid('qtask', $4))
  ORDER BY t.id LIMIT $5::integer)
UNION ALL
(SELECT hookd_api_task(t)::text AS body, hookd_api_id('qtask', t.id) AS api_id FROM hookd_background_tasks t
  WHERE $6::boolean AND ($1 = '' OR t.tenant_id = $1) AND ($2::text IS NULL OR t.status = $2)
    AND ($3::text IS NULL OR t.kind = $3) AND ($4::text IS NULL OR t.id < hookd_api_uuid('qtask', $4))
  ORDER BY t.id DESC LIMIT $5::integer)
