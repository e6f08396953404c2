-- A failed delivery attempt: RETRYING, due after the endpoint's retry wait.
-- parameters: $1 = delivery id, $2 = attempts, $3 = HTTP status or NULL, $4 = last error,
--   $5 = wait (ms)
-- columns: due_ms
UPDATE outbox_deliveries SET status = 'RETRYING', attempts = $2, last_status_code = $3,
 last_error = $4, next_attempt_at = now() + $5::bigint * interval '1 millisecond' WHERE id = $1
 AND @in_part(part_at, $1::uuid)
 RETURNING ceil(extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms
