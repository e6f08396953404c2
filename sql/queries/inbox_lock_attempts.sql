-- Locks an inbox event whose evaluation failed and reads its attempts (no
-- row: another worker took it meanwhile).
-- parameters: $1 = inbox id
-- columns: attempts
SELECT attempts FROM webhook_inbox WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid)) FOR UPDATE SKIP LOCKED
