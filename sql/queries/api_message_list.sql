-- A page of an application's messages, newest first, after the iterator,
-- or, paging backwards (a prevIterator), the newer page before it (rows
-- oldest first: api_reply_list turns them round); optionally only some
-- event types, one channel, one tag.
-- parameters: $1 = application id, $2 = event types (comma-separated) or NULL, $3 = with content (boolean),
--   $4 = channel or NULL, $5 = tag or NULL, $6 = iterator (msg_… id) or NULL, $7 = rows, $8 = backwards (boolean)
-- columns: body, api_id
(SELECT hookd_api_message(m, $3::boolean)::text AS body, hookd_api_id('msg', m.id) AS api_id FROM outbox_events m
  WHERE NOT $8::boolean AND m.tenant_id = $1
    AND ($6::text IS NULL OR (m.created_at, m.id) < (SELECT created_at, id FROM outbox_events
                                                     WHERE id = hookd_api_uuid('msg', $6)
      AND @in_part(part_at, hookd_api_uuid('msg', $6))))
    AND ($2::text IS NULL OR m.event_type = ANY (string_to_array($2, ',')))
    AND ($4::text IS NULL OR m.channels @> ARRAY[$4::text])
    AND ($5::text IS NULL OR m.tags @> ARRAY[$5::text])
  ORDER BY m.created_at DESC, m.id DESC LIMIT $7::integer)
UNION ALL
(SELECT hookd_api_message(m, $3::boolean)::text AS body, hookd_api_id('msg', m.id) AS api_id FROM outbox_events m
  WHERE $8::boolean AND m.tenant_id = $1
    AND (m.created_at, m.id) > (SELECT created_at, id FROM outbox_events WHERE id = hookd_api_uuid('msg', $6)
      AND @in_part(part_at, hookd_api_uuid('msg', $6)))
    AND ($2::text IS NULL OR m.event_type = ANY (string_to_array($2, ',')))
    AND ($4::text IS NULL OR m.channels @> ARRAY[$4::text])
    AND ($5::text IS NULL OR m.tags @> ARRAY[$5::text])
  ORDER BY m.created_at, m.id LIMIT $7::integer)
