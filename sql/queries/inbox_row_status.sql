-- The status of an inbox event inbox_lock_row could not lock: terminal,
-- or busy elsewhere (no row: gone).
-- parameters: $1 = inbox id
-- columns: status
SELECT status FROM webhook_inbox WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid))
