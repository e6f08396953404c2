-- A tenant's messages, newest first, with their delivery state: filtered by
-- event type, state (delivered, failed, pending, none) and a time range, one
-- page at a time: $7/$8 are the last row of the page before (its cursor_at
-- and raw_id), so that the next page starts after it whatever arrives meanwhile.
-- failed: a delivery is dead, or retrying after a failed attempt.
-- parameters: $1 = tenant id, $2 = event type or NULL, $3 = state or NULL, $4 = since or NULL,
--   $5 = until or NULL, $6 = rows, $7 = before: created_at or NULL, $8 = before: id (uuid) or NULL
-- columns: id, event_type, created_at, state, deliveries, cursor_at, raw_id
SELECT hookd_api_id('msg', m.id) AS id, m.event_type,
       to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created_at, s.state,
       s.deliveries::text AS deliveries,
       to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at, m.id::text AS raw_id
  FROM outbox_events m
 CROSS JOIN LATERAL (
    SELECT count(*) AS deliveries,
           CASE WHEN count(*) = 0 THEN 'none'
                WHEN bool_or(d.status = 'DEAD' OR (d.status = 'RETRYING' AND d.attempts > 0)) THEN 'failed'
                WHEN bool_and(d.status = 'SUCCEEDED') THEN 'delivered'
                ELSE 'pending' END AS state
      FROM outbox_deliveries d WHERE d.event_id = m.id AND @in_part(d.part_at, m.id)) s
 WHERE m.tenant_id = $1
   AND ($2::text IS NULL OR m.event_type = $2)
   AND ($3::text IS NULL OR s.state = $3)
   AND ($4::timestamptz IS NULL OR m.created_at >= $4::timestamptz)
   AND ($5::timestamptz IS NULL OR m.created_at < $5::timestamptz)
   AND ($7::timestamptz IS NULL OR (m.created_at, m.id) < ($7::timestamptz, $8::uuid))
 ORDER BY m.created_at DESC, m.id DESC LIMIT $6::integer
