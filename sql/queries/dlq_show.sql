-- One dead letter by its id, else the newest entry of the source row with that
-- id: the columns of dlq_list.sql (first, in the same order, so one reader
-- serves both), then the payload (an expired one as the API shows it),
-- kept headers, endpoint and replay time.
-- parameters: $1 = dead letter id or source row id (uuid)
-- columns: id, source, source_id, partner, event_type, entity, attempts, reason,
--   last_error, dead_at, replay_count, replayed_at, payload, headers, endpoint_url, event_id
SELECT d.id::text AS id, d.source, d.source_id::text AS source_id,
       coalesce(i.partner_name, ep.name) AS partner,
       coalesce(i.event_type, ev.event_type) AS event_type,
       CASE WHEN d.source = 'inbox' THEN coalesce(i.entity_type, '') || ':' || coalesce(i.entity_id, '')
            ELSE coalesce(ev.aggregate_type, '') || ':' || coalesce(ev.aggregate_id, '') END AS entity,
       d.attempts, d.reason, coalesce(d.last_error, '') AS last_error,
       to_char(d.dead_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS dead_at,
       d.replay_count,
       to_char(d.replayed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS replayed_at,
       coalesce(i.payload, CASE WHEN ev.payload_expires_at <= now() THEN '{"expired": true}'::jsonb -- sql/0020
                                ELSE ev.payload END)::text AS payload, i.headers::text AS headers,
       ep.url AS endpoint_url, ev.id::text AS event_id
  FROM dead_letters d
  LEFT JOIN webhook_inbox i ON d.source = 'inbox' AND i.id = d.source_id
        AND @in_part(i.part_at, d.source_id)
  LEFT JOIN outbox_deliveries od ON d.source = 'delivery' AND od.id = d.source_id
        AND @in_part(od.part_at, d.source_id)
  LEFT JOIN outbox_events ev ON ev.id = od.event_id
        AND @in_part(ev.part_at, od.event_id)
  LEFT JOIN webhook_endpoints ep ON ep.id = od.endpoint_id
 WHERE d.id = $1::uuid OR d.source_id = $1::uuid
 ORDER BY (d.id = $1::uuid) DESC, d.dead_at DESC
 LIMIT 1
