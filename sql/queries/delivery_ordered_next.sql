-- The deliveries that finished ordered deliveries release (ordered
-- delivery, sql/0017): for each given delivery of an ordered endpoint whose
-- event has an aggregate, the next open (PENDING/RETRYING) delivery of the
-- same aggregate to the same endpoint, in hookd_emit order - the one
-- hookd_delivery_blocked_ms held behind it. Run after a success commits, and
-- after `hookd dlq skip`: the caller schedules each at due_ms (now, or its
-- own later due time) instead of leaving it to the hold's poll (200 ms
-- behind an open delivery, 5 s behind a dead letter). Found like the
-- ordering check finds them: the endpoint's open deliveries
-- (outbox_deliveries_endpoint_open), each event by id in its partition.
-- parameters: $1 = delivery ids (uuid[], binary)
-- columns: id, due_ms
SELECT n.id::text AS id, (extract(epoch FROM greatest(now(), n.next_attempt_at)) * 1000)::bigint AS due_ms
 FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT d.endpoint_id, d.event_id FROM outbox_deliveries d WHERE d.id = k.id
  AND @in_part_of(d.part_at, k.part_at, k.any_at) OFFSET 0) d
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
