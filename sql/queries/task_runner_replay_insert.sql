-- Replay-missing, one batch, step 2: a delivery of each message to the endpoint,
-- PENDING and due now, or at the message's deliverAt while that is ahead
-- (due_ms, wall ms), in its event's partition (as a resend makes one), the
-- events reopened. A delivery that exists meanwhile is left alone.
-- parameters: $1 = message ids (uuid[] as text), $2 = endpoint id (uuid)
-- columns: id, due_ms
WITH ins AS (INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, next_attempt_at, part_at)
             SELECT hookd_uuid7_at(m.part_at), m.id, $2::uuid, 'PENDING', greatest(now(), m.deliver_at), m.part_at
               FROM outbox_events m JOIN hookd_id_keys($1::uuid[]) k ON m.id = k.id
              AND @in_part_of(m.part_at, k.part_at, k.any_at)
             ON CONFLICT DO NOTHING RETURNING id, event_id, next_attempt_at),
 ev AS (UPDATE outbox_events e SET processed_at = NULL FROM ins
         WHERE e.id = ins.event_id AND @in_part(e.part_at, ins.event_id) AND e.processed_at IS NOT NULL)
SELECT id::text AS id, (extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms FROM ins
