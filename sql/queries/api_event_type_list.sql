-- A page of the event-type catalog in name order, after the iterator.
-- parameters: $1 = iterator (a name) or NULL, $2 = rows, $3 = include archived (boolean)
-- columns: body, name
SELECT hookd_api_event_type(t)::text AS body, t.name FROM hookd_event_types t
 WHERE ($1::text IS NULL OR t.name > $1) AND ($3::boolean OR NOT t.archived)
 ORDER BY t.name LIMIT $2::integer
