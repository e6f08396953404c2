-- A failed attempt of an inbox event: RETRYING, due after the retry wait.
-- parameters: $1 = inbox id, $2 = wait (ms), $3 = last error, $4 = attempts
-- columns: due_ms
UPDATE webhook_inbox SET status = 'RETRYING', attempts = $4,
 next_attempt_at = now() + $2::bigint * interval '1 millisecond', last_error = $3 WHERE id = $1
 AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid))
 RETURNING ceil(extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms
