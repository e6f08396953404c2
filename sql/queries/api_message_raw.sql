-- A message's payload as the application sent it (Svix's
-- v1.message.get-raw-payload), by its API id (msg_…) or its eventId: the
-- raw text (payload_raw, sql/0030), else the jsonb payload's text (a
-- message hookd_emit wrote); an expired or expunged one as the API shows it.
-- parameters: $1 = application id, $2 = msg_… id or eventId
-- columns: payload
SELECT CASE WHEN hookd_payload_expired(m) THEN '{"expired": true}'
            ELSE coalesce(m.payload_raw, m.payload::text) END AS payload
  FROM outbox_events m
 WHERE m.tenant_id = $1 AND m.id = coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2))
   AND @in_part(m.part_at, coalesce(hookd_api_uuid('msg', $2),
       (SELECT message_id FROM hookd_message_ids WHERE tenant_id = $1 AND event_id = $2)))
