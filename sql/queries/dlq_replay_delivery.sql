-- Puts a dead delivery back to PENDING with a fresh attempt budget.
-- parameters: $1 = delivery id (uuid)
UPDATE outbox_deliveries
   SET status = 'PENDING', attempts = 0, last_error = NULL,
       next_attempt_at = now(), replayed_at = now()
 WHERE id = $1::uuid AND @in_part(part_at, $1::uuid)
