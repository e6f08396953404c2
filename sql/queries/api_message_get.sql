-- One message of an application, by its API id (msg_…) or its eventId.
-- parameters: $1 = application id, $2 = msg_… id or eventId, $3 = with content (boolean)
-- columns: body, id
SELECT hookd_api_message(m, $3::boolean)::text AS body, m.id::text AS id FROM outbox_events m
 WHERE m.tenant_id = $1 AND m.id = coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2))
   AND @in_part(m.part_at, coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2)))
