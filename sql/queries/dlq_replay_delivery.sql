-- Puts a dead delivery back to PENDING with a fresh attempt budget.
-- parameters: $1 = delivery id (uuid)
UPDATE outbox_deliveries
   SET status = 'PENDING', attempts = 0, last_error = NULL,
       next_attempt_at = now(), replayed_at = now()
 WHERE id = $1::uuid AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid))
