-- Locks a delivery still open and reads its attempts (no row: finished
-- elsewhere meanwhile).
-- parameters: $1 = delivery id
-- columns: attempts
SELECT attempts FROM outbox_deliveries WHERE id = $1
 AND @in_part(part_at, $1::uuid) AND status IN ('PENDING', 'RETRYING')
 FOR UPDATE
