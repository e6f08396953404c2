-- Recover, one batch: the next (after the cursor, in id order) of the
-- endpoint's dead deliveries of messages created in [since, until) go back
-- to PENDING with a fresh attempt budget, their dead letters are marked
-- replayed and their events reopened (as `hookd dlq replay`). Messages
-- whose content was expunged or expired stay as they are (they cannot be
-- sent). The batch's rows are locked, so a batch runs once.
-- parameters: $1 = endpoint id (uuid), $2 = since (timestamptz), $3 = until or NULL,
--   $4 = cursor (the last delivery id of the previous batch) or NULL, $5 = batch size
-- columns: ids, last, examined
WITH b AS (SELECT id, event_id FROM outbox_deliveries
            WHERE endpoint_id = $1::uuid AND status = 'DEAD' AND created_at >= $2::timestamptz
              AND ($3::timestamptz IS NULL OR created_at < $3::timestamptz)
              AND ($4::uuid IS NULL OR id > $4::uuid)
            ORDER BY id LIMIT $5::integer FOR UPDATE),
 d AS (UPDATE outbox_deliveries SET status = 'PENDING', attempts = 0, last_error = NULL,
              next_attempt_at = now(), replayed_at = now()
         FROM b
        WHERE outbox_deliveries.id = b.id AND outbox_deliveries.endpoint_id = $1::uuid
          AND NOT EXISTS (SELECT 1 FROM outbox_events m WHERE m.id = b.event_id
                             AND @in_part(m.part_at, b.event_id) AND hookd_payload_expired(m))
        RETURNING outbox_deliveries.id, outbox_deliveries.event_id),
 dl AS (UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1
         WHERE source = 'delivery' AND source_id IN (SELECT id FROM d) AND replayed_at IS NULL),
 ev AS (UPDATE outbox_events e SET processed_at = NULL FROM d
         WHERE e.id = d.event_id AND @in_part(e.part_at, d.event_id))
SELECT (SELECT coalesce(json_agg(id::text), '[]') FROM d)::text AS ids,
       (SELECT id::text FROM b ORDER BY id DESC LIMIT 1) AS last,
       (SELECT count(*) FROM b)::integer AS examined
