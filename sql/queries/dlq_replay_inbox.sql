-- Puts a dead-lettered inbox event back to PENDING with a fresh attempt budget.
-- parameters: $1 = inbox row id (uuid)
UPDATE webhook_inbox
   SET status = 'PENDING', attempts = 0, deferrals = 0, outcome = NULL,
       last_error = NULL, next_attempt_at = now(), replayed_at = now()
 WHERE id = $1::uuid AND @in_part(part_at, $1::uuid)
