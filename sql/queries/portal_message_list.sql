-- A tenant's messages, newest first, with their delivery state: filtered by
-- event type, state (delivered, failed, pending, none) and a time range.
-- failed: a delivery is dead, or retrying after a failed attempt.
-- parameters: $1 = tenant id, $2 = event type or NULL, $3 = state or NULL, $4 = since or NULL,
--   $5 = until or NULL, $6 = rows
-- columns: id, event_type, created_at, state, deliveries
SELECT hookd_api_id('msg', m.id) AS id, m.event_type,
       to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created_at, s.state,
       s.deliveries::text AS deliveries
  FROM outbox_events m
 CROSS JOIN LATERAL (
    SELECT count(*) AS deliveries,
           CASE WHEN count(*) = 0 THEN 'none'
                WHEN bool_or(d.status = 'DEAD' OR (d.status = 'RETRYING' AND d.attempts > 0)) THEN 'failed'
                WHEN bool_and(d.status = 'SUCCEEDED') THEN 'delivered'
                ELSE 'pending' END AS state
      FROM outbox_deliveries d WHERE d.event_id = m.id) s
 WHERE m.tenant_id = $1
   AND ($2::text IS NULL OR m.event_type = $2)
   AND ($3::text IS NULL OR s.state = $3)
   AND ($4::timestamptz IS NULL OR m.created_at >= $4::timestamptz)
   AND ($5::timestamptz IS NULL OR m.created_at < $5::timestamptz)
 ORDER BY m.created_at DESC, m.id DESC LIMIT $6::integer
