-- The open (not replayed) dead letters, newest first, each with what a person
-- needs to recognise it, from either source (`hookd dlq list`, the admin page).
-- parameters: $1 = source ('inbox' | 'delivery') or NULL, $2 = partner (inbox) or
--   endpoint name (delivery) or NULL, $3 = event type glob ('*' wildcards) or NULL,
--   $4 = dead within this many ms or NULL, $5 = at most this many rows,
--   $6 = tenant (uid or id) or NULL: only deliveries of that tenant's events
-- columns: id, source, source_id, partner, event_type, entity, attempts, reason,
--   last_error, dead_at, replay_count
SELECT d.id::text AS id, d.source, d.source_id::text AS source_id,
       coalesce(i.partner_name, ep.name) AS partner,
       coalesce(i.event_type, ev.event_type) AS event_type,
       CASE WHEN d.source = 'inbox' THEN coalesce(i.entity_type, '') || ':' || coalesce(i.entity_id, '')
            ELSE coalesce(ev.aggregate_type, '') || ':' || coalesce(ev.aggregate_id, '') END AS entity,
       d.attempts, d.reason, coalesce(d.last_error, '') AS last_error,
       to_char(d.dead_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS dead_at,
       d.replay_count
  FROM dead_letters d
  LEFT JOIN webhook_inbox i ON d.source = 'inbox' AND i.id = d.source_id
        AND @in_part(i.part_at, d.source_id)
  LEFT JOIN outbox_deliveries od ON d.source = 'delivery' AND od.id = d.source_id
        AND @in_part(od.part_at, d.source_id)
  LEFT JOIN outbox_events ev ON ev.id = od.event_id
        AND @in_part(ev.part_at, od.event_id)
  LEFT JOIN webhook_endpoints ep ON ep.id = od.endpoint_id
 WHERE d.replayed_at IS NULL
   AND ($1::text IS NULL OR d.source = $1)
   AND ($2::text IS NULL OR coalesce(i.partner_name, ep.name) = $2)
   AND ($3::text IS NULL OR coalesce(i.event_type, ev.event_type) LIKE
        replace(replace(replace(replace($3, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'))
   AND ($4::bigint IS NULL OR d.dead_at >= now() - $4::bigint * interval '1 millisecond')
   AND ($6::text IS NULL OR ev.tenant_id = hookd_tenant_id($6))
 ORDER BY d.dead_at DESC, d.id
 LIMIT $5::int
