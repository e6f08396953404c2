-- A tenant's message's payload as Postgres stores it (an expired one as the
-- API shows it), for its download.
-- parameters: $1 = tenant id, $2 = message id (msg_…)
-- columns: payload
SELECT (CASE WHEN hookd_payload_expired(m) THEN '{"expired": true}'::jsonb ELSE m.payload END)::text AS payload
  FROM outbox_events m
 WHERE m.tenant_id = $1 AND m.id = hookd_api_uuid('msg', $2)
   AND (m.part_at IN (hookd_id_part(hookd_api_uuid('msg', $2)), '-infinity')
        OR m.part_at >= hookd_id_any(hookd_api_uuid('msg', $2)))
