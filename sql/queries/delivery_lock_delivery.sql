-- Locks a delivery still open and reads its attempts (no row: finished
-- elsewhere meanwhile).
-- parameters: $1 = delivery id
-- columns: attempts
SELECT attempts FROM outbox_deliveries WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid)) AND status IN ('PENDING', 'RETRYING')
 FOR UPDATE
