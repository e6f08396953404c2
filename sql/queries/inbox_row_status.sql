-- The status of an inbox event inbox_lock_row could not lock: terminal,
-- or busy elsewhere (no row: gone).
-- parameters: $1 = inbox id
-- columns: status
SELECT status FROM webhook_inbox WHERE id = $1
 AND @in_part(part_at, $1::uuid)
