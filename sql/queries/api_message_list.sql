-- A page of an application's messages, newest first, after the iterator,
-- or, paging backwards (a prevIterator, or Svix's `after` alone with no
-- iterator: then from the oldest after it), the newer page before it (rows
-- oldest first: api_reply_list turns them round); optionally only some
-- event types, one channel, one tag, created before and after a time. The
-- tenant's (tenant_id, created_at, id) index serves every filter.
-- parameters: $1 = application id, $2 = event types (comma-separated) or NULL, $3 = with content (boolean),
--   $4 = channel or NULL, $5 = tag or NULL, $6 = before (timestamptz) or NULL, $7 = after or NULL,
--   $8 = iterator (msg_… id) or NULL, $9 = rows, $10 = backwards (boolean)
-- columns: body, api_id
WITH m AS NOT MATERIALIZED (
  SELECT m AS msg, m.id, m.created_at FROM outbox_events m
   WHERE m.tenant_id = $1
     AND ($2::text IS NULL OR m.event_type = ANY (string_to_array($2, ',')))
     AND ($4::text IS NULL OR m.channels @> ARRAY[$4::text])
     AND ($5::text IS NULL OR m.tags @> ARRAY[$5::text])
     AND ($6::timestamptz IS NULL OR m.created_at < $6::timestamptz)
     AND ($7::timestamptz IS NULL OR m.created_at > $7::timestamptz)),
 it AS (SELECT created_at, id FROM outbox_events WHERE id = hookd_api_uuid('msg', $8)
                 AND @in_part(part_at, hookd_api_uuid('msg', $8))),
 page AS (
  (SELECT * FROM m WHERE NOT $10::boolean AND ($8::text IS NULL OR (m.created_at, m.id) < (SELECT * FROM it))
    ORDER BY m.created_at DESC, m.id DESC LIMIT $9::integer)
  UNION ALL
  (SELECT * FROM m WHERE $10::boolean AND ($8::text IS NULL OR (m.created_at, m.id) > (SELECT * FROM it))
    ORDER BY m.created_at, m.id LIMIT $9::integer))
SELECT hookd_api_message(p.msg, $3::boolean)::text AS body, hookd_api_id('msg', p.id) AS api_id FROM page p
