-- A page of an application's messages, newest first, after the iterator,
-- or, paging backwards (a prevIterator), the newer page before it (rows
-- oldest first: api_reply_list turns them round); optionally only some
-- event types.
-- parameters: $1 = application id, $2 = event types (comma-separated) or NULL, $3 = with content (boolean),
--   $4 = iterator (msg_… id) or NULL, $5 = rows, $6 = backwards (boolean)
-- columns: body, api_id
(SELECT hookd_api_message(m, $3::boolean)::text AS body, hookd_api_id('msg', m.id) AS api_id FROM outbox_events m
  WHERE NOT $6::boolean AND m.tenant_id = $1
    AND ($4::text IS NULL OR (m.created_at, m.id) < (SELECT created_at, id FROM outbox_events
                                                     WHERE id = hookd_api_uuid('msg', $4)))
    AND ($2::text IS NULL OR m.event_type = ANY (string_to_array($2, ',')))
  ORDER BY m.created_at DESC, m.id DESC LIMIT $5::integer)
UNION ALL
(SELECT hookd_api_message(m, $3::boolean)::text AS body, hookd_api_id('msg', m.id) AS api_id FROM outbox_events m
  WHERE $6::boolean AND m.tenant_id = $1
    AND (m.created_at, m.id) > (SELECT created_at, id FROM outbox_events WHERE id = hookd_api_uuid('msg', $4))
    AND ($2::text IS NULL OR m.event_type = ANY (string_to_array($2, ',')))
  ORDER BY m.created_at, m.id LIMIT $5::integer)
