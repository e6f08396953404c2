-- A message of an application by its API id (msg_…) or its eventId: its
-- id, and whether its content was expunged (api_message_expunge.sql) or
-- its payload retention ran out (sql/0020).
-- parameters: $1 = application id, $2 = msg_… id or eventId
-- columns: id, expunged
SELECT m.id::text AS id, hookd_payload_expired(m) AS expunged FROM outbox_events m
 WHERE m.tenant_id = $1 AND m.id = coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2))
   AND @in_part(m.part_at, coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2)))
