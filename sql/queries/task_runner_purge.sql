-- Expunge all contents (Svix's application.purge_content), one batch: the
-- next (after the cursor, in id order) of the application's messages whose
-- content is still there lose it as one expunge-content does
-- (api_message_expunge.sql): the payload cleared and expired now, open
-- deliveries closed (DEAD, "payload expunged", without a dead letter), open
-- dead letters skipped, an event not fanned out yet marked fanned out. The
-- batch's rows are locked, so a batch runs once.
-- parameters: $1 = application id, $2 = cursor (the last message id of the previous batch) or NULL,
--   $3 = batch size
-- columns: purged, last, examined
WITH b AS (SELECT m.id, m.part_at FROM outbox_events m
            WHERE m.tenant_id = $1 AND ($2::uuid IS NULL OR m.id > $2::uuid)
            ORDER BY m.id LIMIT $3::integer FOR UPDATE),
 m AS (UPDATE outbox_events e SET payload = 'null'::jsonb, payload_expires_at = least(e.payload_expires_at, now()),
              fanned_out_at = coalesce(e.fanned_out_at, now()), processed_at = coalesce(e.processed_at, now())
         FROM b
        WHERE e.id = b.id AND e.part_at = b.part_at AND NOT hookd_payload_expired(e)
        RETURNING e.id),
 d AS (UPDATE outbox_deliveries x SET status = 'DEAD', last_error = 'payload expunged'
         FROM b
        WHERE x.event_id = b.id AND @in_part(x.part_at, b.id) AND x.status IN ('PENDING', 'RETRYING')),
 dl AS (UPDATE dead_letters SET replayed_at = now(), skipped_at = now()
         WHERE source = 'delivery' AND replayed_at IS NULL
           AND source_id IN (SELECT x.id FROM outbox_deliveries x JOIN b ON x.event_id = b.id
                              AND @in_part(x.part_at, b.id)))
SELECT (SELECT count(*) FROM m)::integer AS purged,
       (SELECT id::text FROM b ORDER BY id DESC LIMIT 1) AS last,
       (SELECT count(*) FROM b)::integer AS examined
