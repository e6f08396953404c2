-- A page of the event-type catalog in name order after the iterator, or, reversed
-- (Svix's order=descending, or a prevIterator of an ascending list), in
-- descending order before it (api_reply_list turns a backward page round).
-- parameters: $1 = include archived (boolean), $2 = iterator (a name) or NULL, $3 = rows,
--   $4 = reversed (boolean: descending)
-- columns: body, name
(SELECT hookd_api_event_type(t)::text AS body, t.name FROM hookd_event_types t
  WHERE NOT $4::boolean AND ($2::text IS NULL OR t.name > $2) AND ($1::boolean OR NOT t.archived)
  ORDER BY t.name LIMIT $3::integer)
UNION ALL
(SELECT hookd_api_event_type(t)::text AS body, t.name FROM hookd_event_types t
  WHERE $4::boolean AND ($2::text IS NULL OR t.name < $2) AND ($1::boolean OR NOT t.archived)
  ORDER BY t.name DESC LIMIT $3::integer)
