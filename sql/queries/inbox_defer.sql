-- An inbox event deferred (its entity is not in a state it applies to yet):
-- DEFERRED, due again after the wait.
-- parameters: $1 = inbox id, $2 = wait (ms), $3 = why
-- columns: due_ms
UPDATE webhook_inbox SET status = 'DEFERRED', deferrals = deferrals + 1,
 next_attempt_at = now() + $2::bigint * interval '1 millisecond', last_error = $3 WHERE id = $1
 AND @in_part(part_at, $1::uuid)
 RETURNING ceil(extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms
