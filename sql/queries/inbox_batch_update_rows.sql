-- The verdicts of a batch's evaluated inbox events, one statement for all:
-- each row's new status, its attempt row (each charged its share of the
-- batch's time) and, for a dead-lettered event, its dead_letters row unless
-- one is open already.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = jsonb array of {id, status, outcome, attempts, deferred, wait, error, a_outcome,
--   a_error, dl_reason}, $2 = duration per attempt (ms), $3 = worker id
-- columns: id, due_ms
WITH v AS (SELECT *, hookd_id_part(v.id) AS pa FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, status text, outcome text, attempts int,
  deferred int, wait bigint, error text, a_outcome text, a_error text, dl_reason text)),
 upd AS (UPDATE webhook_inbox w SET status = v.status, outcome = coalesce(v.outcome, w.outcome),
  processed_at = CASE WHEN v.status = 'PROCESSED' THEN now() ELSE w.processed_at END,
  attempts = coalesce(v.attempts, w.attempts), deferrals = w.deferrals + v.deferred,
  next_attempt_at = CASE WHEN v.wait IS NULL THEN w.next_attempt_at
   ELSE now() + v.wait * interval '1 millisecond' END,
  last_error = v.error
  FROM v WHERE w.id = v.id AND @in_part_of(w.part_at, v.pa, CASE WHEN v.pa IS NULL THEN '-infinity'::timestamptz END)
  RETURNING w.id, w.next_attempt_at),
 att AS (INSERT INTO attempts (source, source_id, outcome, duration_ms, error, worker_id)
  SELECT 'inbox', v.id, v.a_outcome, $2::double precision, v.a_error, $3 FROM v),
 dl AS (INSERT INTO dead_letters (source, source_id, reason, attempts, last_error)
  SELECT 'inbox', v.id, v.dl_reason, v.attempts, v.error FROM v WHERE v.dl_reason IS NOT NULL
  ON CONFLICT (source, source_id) WHERE replayed_at IS NULL DO NOTHING)
SELECT upd.id::text AS id, ceil(extract(epoch FROM upd.next_attempt_at) * 1000)::bigint AS due_ms FROM upd
