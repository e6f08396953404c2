-- An inbox event evaluated for good: PROCESSED with its outcome (applied,
-- noop, ignored).
-- parameters: $1 = inbox id, $2 = outcome
UPDATE webhook_inbox SET status = 'PROCESSED', outcome = $2, processed_at = now(),
 last_error = NULL WHERE id = $1
 AND @in_part(part_at, $1::uuid)
