-- Recover: the endpoint's dead deliveries of messages created in [since,
-- until) go back to PENDING with a fresh attempt budget, their dead letters
-- are marked replayed and their events reopened (as `hookd dlq replay`).
-- Messages whose content was expunged or expired stay as they are (they
-- cannot be sent).
-- parameters: $1 = endpoint id (uuid), $2 = since (timestamptz), $3 = until or NULL
-- columns: id
WITH d AS (UPDATE outbox_deliveries SET status = 'PENDING', attempts = 0, last_error = NULL,
                  next_attempt_at = now(), replayed_at = now()
            WHERE endpoint_id = $1::uuid AND status = 'DEAD' AND created_at >= $2::timestamptz
              AND ($3::timestamptz IS NULL OR created_at < $3::timestamptz)
              AND NOT EXISTS (SELECT 1 FROM outbox_events m WHERE m.id = outbox_deliveries.event_id
                                 AND @in_part(m.part_at, outbox_deliveries.event_id)
                                 AND hookd_payload_expired(m))
        RETURNING id, event_id),
 dl AS (UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1
         WHERE source = 'delivery' AND source_id IN (SELECT id FROM d) AND replayed_at IS NULL),
 ev AS (UPDATE outbox_events e SET processed_at = NULL FROM d
         WHERE e.id = d.event_id AND @in_part(e.part_at, d.event_id))
SELECT id::text AS id FROM d
