-- The verdicts of a batch's evaluated inbox events, one statement for all.
-- parameters: $1 = jsonb array of {id, status, outcome, attempts, deferred, wait, error}
-- columns: id, due_ms
UPDATE webhook_inbox w SET status = v.status, outcome = coalesce(v.outcome, w.outcome),
 processed_at = CASE WHEN v.status = 'PROCESSED' THEN now() ELSE w.processed_at END,
 attempts = coalesce(v.attempts, w.attempts), deferrals = w.deferrals + v.deferred,
 next_attempt_at = CASE WHEN v.wait IS NULL THEN w.next_attempt_at
  ELSE now() + v.wait * interval '1 millisecond' END,
 last_error = v.error
 FROM jsonb_to_recordset($1::jsonb)
  AS v(id uuid, status text, outcome text, attempts int, deferred int, wait bigint, error text)
 WHERE w.id = v.id
 RETURNING w.id::text AS id, ceil(extract(epoch FROM w.next_attempt_at) * 1000)::bigint AS due_ms
