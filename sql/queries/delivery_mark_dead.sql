-- A delivery dead-lettered: DEAD with its attempts and last answer
-- (delivery_dead_letter adds the dead_letters row).
-- parameters: $1 = delivery id, $2 = attempts, $3 = HTTP status or NULL, $4 = last error
UPDATE outbox_deliveries SET status = 'DEAD', attempts = $2, last_status_code = $3,
 last_error = $4 WHERE id = $1
 AND @in_part(part_at, $1::uuid)
