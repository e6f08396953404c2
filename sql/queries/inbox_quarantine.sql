-- An inbox event dead-lettered: QUARANTINED with its attempts and last error
-- (the per-event path; inbox_dead_letter adds the dead_letters row).
-- parameters: $1 = inbox id, $2 = attempts, $3 = last error
UPDATE webhook_inbox SET status = 'QUARANTINED', outcome = 'dead', attempts = $2,
 last_error = $3 WHERE id = $1
 AND @in_part(part_at, $1::uuid)
