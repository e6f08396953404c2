-- An inbox event evaluated for good: PROCESSED with its outcome (applied,
-- noop, ignored).
-- parameters: $1 = inbox id, $2 = outcome
UPDATE webhook_inbox SET status = 'PROCESSED', outcome = $2, processed_at = now(),
 last_error = NULL WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid))
