-- An outbox event processed once none of its deliveries is still open.
-- parameters: $1 = event id
UPDATE outbox_events SET processed_at = now() WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid)) AND processed_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM outbox_deliveries WHERE event_id = $1
 AND status IN ('PENDING', 'RETRYING'))
