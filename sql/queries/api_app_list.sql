-- A page of applications in id (= creation) order after the iterator, or, reversed
-- (Svix's order=descending, or a prevIterator of an ascending list), in
-- descending order before it (api_reply_list turns a backward page round).
-- parameters: $1 = the token's tenant id or '', $2 = iterator (id) or NULL, $3 = rows,
--   $4 = reversed (boolean: descending)
-- columns: body, id
(SELECT hookd_api_app(t)::text AS body, t.id FROM hookd_tenants t
  WHERE NOT $4::boolean AND ($1 = '' OR t.id = $1) AND ($2::text IS NULL OR t.id > $2)
  ORDER BY t.id LIMIT $3::integer)
UNION ALL
(SELECT hookd_api_app(t)::text AS body, t.id FROM hookd_tenants t
  WHERE $4::boolean AND ($1 = '' OR t.id = $1) AND ($2::text IS NULL OR t.id < $2)
  ORDER BY t.id DESC LIMIT $3::integer)
