-- Resend: the message's delivery to the endpoint is (re)opened - PENDING,
-- due now, with a fresh attempt budget; created (in its event's partition,
-- sql/0012_retention.sql) when the endpoint never had one - its dead letter
-- marked replayed and its event reopened. The existing delivery is found by
-- (event, endpoint) in its event's partition or _kept (where a kept row's
-- part_at, -infinity, puts it), so a resend never makes a second one.
-- A new delivery's id carries its event's part_at (hookd_uuid7_at,
-- sql/0018_ids_carry_partition.sql), so that statements finding it by id prune.
-- parameters: $1 = message id (uuid), $2 = endpoint id (uuid)
-- columns: id
WITH upd AS (UPDATE outbox_deliveries
               SET status = 'PENDING', attempts = 0, last_error = NULL, next_attempt_at = now(), replayed_at = now()
             WHERE event_id = $1::uuid AND endpoint_id = $2::uuid
               AND @in_part(part_at, $1::uuid)
             RETURNING id),
 ins AS (INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, next_attempt_at, part_at)
         SELECT hookd_uuid7_at(e.part_at), $1::uuid, $2::uuid, 'PENDING', now(), e.part_at
           FROM outbox_events e WHERE e.id = $1::uuid
            AND @in_part(e.part_at, $1::uuid) AND NOT EXISTS (SELECT 1 FROM upd)
         ON CONFLICT DO NOTHING RETURNING id),
 d AS (SELECT id FROM upd UNION ALL SELECT id FROM ins),
 dl AS (UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1
         WHERE source = 'delivery' AND source_id IN (SELECT id FROM d) AND replayed_at IS NULL),
 ev AS (UPDATE outbox_events SET processed_at = NULL WHERE id = $1::uuid
         AND @in_part(part_at, $1::uuid)
         AND processed_at IS NOT NULL)
SELECT id::text AS id FROM d
