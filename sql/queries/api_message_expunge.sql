-- Expunge a message's content (Svix's expunge-content): its payload expires
-- now and its bytes are cleared (JSON null, and the raw text sql/0030 keeps; reads answer {"expired": true},
-- what Svix shows for a message without content: sql/0020). It is
-- never sent again: its open deliveries are closed (DEAD, "payload
-- expunged", without a dead letter), its open dead letters skipped (as
-- `hookd dlq skip`: an ordered endpoint's successors go on), and an event
-- not fanned out yet is marked fanned out with no delivery. Resend and
-- recover refuse it then (api_message_find.sql: `expunged`), as they refuse a
-- message whose payload retention ran out.
-- parameters: $1 = message id (uuid)
-- columns: id
WITH m AS (UPDATE outbox_events SET payload = 'null'::jsonb, payload_raw = NULL,
                  payload_expires_at = least(payload_expires_at, now()),
                  fanned_out_at = coalesce(fanned_out_at, now()), processed_at = coalesce(processed_at, now())
            WHERE id = $1::uuid AND @in_part(part_at, $1::uuid) RETURNING id),
 d AS (UPDATE outbox_deliveries SET status = 'DEAD', last_error = 'payload expunged'
        WHERE event_id = $1::uuid AND @in_part(part_at, $1::uuid)
          AND status IN ('PENDING', 'RETRYING') RETURNING id),
 dl AS (UPDATE dead_letters SET replayed_at = now(), skipped_at = now()
         WHERE source = 'delivery' AND replayed_at IS NULL
           AND source_id IN (SELECT id FROM outbox_deliveries WHERE event_id = $1::uuid
                              AND @in_part(part_at, $1::uuid)))
SELECT m.id::text AS id FROM m
