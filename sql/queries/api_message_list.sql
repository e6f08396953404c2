-- A page of an application's messages, newest first, after the iterator;
-- optionally only some event types, one channel, one tag.
-- parameters: $1 = application id, $2 = iterator (msg_… id) or NULL, $3 = rows,
--   $4 = event types (comma-separated) or NULL, $5 = with content (boolean), $6 = channel or NULL,
--   $7 = tag or NULL
-- columns: body, api_id
SELECT hookd_api_message(m, $5::boolean)::text AS body, hookd_api_id('msg', m.id) AS api_id FROM outbox_events m
 WHERE m.tenant_id = $1
   AND ($2::text IS NULL OR (m.created_at, m.id) < (SELECT created_at, id FROM outbox_events
                                                    WHERE id = hookd_api_uuid('msg', $2)))
   AND ($4::text IS NULL OR m.event_type = ANY (string_to_array($4, ',')))
   AND ($6::text IS NULL OR m.channels @> ARRAY[$6::text])
   AND ($7::text IS NULL OR m.tags @> ARRAY[$7::text])
 ORDER BY m.created_at DESC, m.id DESC LIMIT $3::integer
