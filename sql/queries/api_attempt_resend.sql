-- Resend: the message's delivery to the endpoint is (re)opened - PENDING,
-- due now, with a fresh attempt budget; created when the endpoint never had
-- one - its dead letter marked replayed and its event reopened.
-- parameters: $1 = message id (uuid), $2 = endpoint id (uuid)
-- columns: id
WITH ins AS (INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, next_attempt_at)
             VALUES (hookd_uuid7(), $1::uuid, $2::uuid, 'PENDING', now())
             ON CONFLICT (event_id, endpoint_id) DO UPDATE
               SET status = 'PENDING', attempts = 0, last_error = NULL, next_attempt_at = now(), replayed_at = now()
             RETURNING id),
 dl AS (UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1
         WHERE source = 'delivery' AND source_id IN (SELECT id FROM ins) AND replayed_at IS NULL),
 ev AS (UPDATE outbox_events SET processed_at = NULL WHERE id = $1::uuid AND processed_at IS NOT NULL)
SELECT id::text AS id FROM ins
