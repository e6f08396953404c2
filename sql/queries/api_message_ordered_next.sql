-- The deliveries that an expunged message's dead letters held on ordered
-- endpoints (api_message_expunge skips them, as `hookd dlq skip`): for each
-- of the message's deliveries, the aggregate's next open delivery to the
-- same endpoint, as delivery_ordered_next.sql finds it, scheduled at once
-- after the request commits (api_content.c) instead of at the hold's next
-- check (5 s behind a dead letter).
-- parameters: $1 = message id (uuid)
-- columns: id, due_ms
SELECT n.id::text AS id, (extract(epoch FROM greatest(now(), n.next_attempt_at)) * 1000)::bigint AS due_ms
 FROM (SELECT d.endpoint_id, d.event_id FROM outbox_deliveries d WHERE d.event_id = $1::uuid
  AND @in_part(d.part_at, $1::uuid)) d
 JOIN webhook_endpoints ep ON ep.id = d.endpoint_id AND ep.ordered
 CROSS JOIN LATERAL (SELECT e.aggregate_type, e.aggregate_id, coalesce(e.emit_seq, 0) AS seq, e.created_at, e.id
  FROM outbox_events e WHERE e.id = d.event_id
   AND @in_part(e.part_at, d.event_id)
   AND e.aggregate_type IS NOT NULL AND e.aggregate_id IS NOT NULL OFFSET 0) e
 CROSS JOIN LATERAL (SELECT o.id AS event_id, od.id, od.next_attempt_at FROM outbox_deliveries od
  JOIN outbox_events o ON o.id = od.event_id
   AND @in_part(o.part_at, od.event_id)
  WHERE od.endpoint_id = d.endpoint_id AND od.status IN ('PENDING', 'RETRYING')
   AND o.aggregate_type = e.aggregate_type AND o.aggregate_id = e.aggregate_id
   AND (coalesce(o.emit_seq, 0), o.created_at, o.id) > (e.seq, e.created_at, e.id)
  ORDER BY coalesce(o.emit_seq, 0), o.created_at, o.id LIMIT 1) n
