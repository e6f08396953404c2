-- A tenant's message's payload as Postgres stores it (an expired one as the
-- API shows it): the whole text for its download, or only its first
-- characters for its page; and the whole text's length in bytes.
-- parameters: $1 = tenant id, $2 = message id (msg_…), $3 = at most this many characters (NULL: all)
-- columns: payload, bytes
SELECT CASE WHEN $3::int IS NULL THEN p.text ELSE left(p.text, $3::int) END AS payload,
       octet_length(p.text)::text AS bytes
  FROM outbox_events m
 CROSS JOIN LATERAL (SELECT (CASE WHEN hookd_payload_expired(m) THEN '{"expired": true}'::jsonb
                                  ELSE m.payload END)::text AS text) p
 WHERE m.tenant_id = $1 AND m.id = hookd_api_uuid('msg', $2)
   AND @in_part(m.part_at, hookd_api_uuid('msg', $2))
