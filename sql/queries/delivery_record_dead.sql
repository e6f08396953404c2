-- A batch of failed attempts that end their delivery, in one statement: the
-- last attempt, 410 Gone, a bad URL, a disabled or deleted endpoint. Each
-- delivery DEAD with its attempts and last answer, its attempt row, its
-- dead_letters row (unless one is open already), and the endpoints that
-- answered 410 disabled - where the delivery is still open and its attempts
-- are still the count it was loaded with (anything else is left to the
-- one-by-one path). The caller has locked the events (delivery_lock_events)
-- and marks them processed after (delivery_finish_events). Returns the
-- batch index of each recorded. Open is written `NOT IN ('SUCCEEDED',
-- 'DEAD')`, as in delivery_record_failures (why: there).
-- An expired payload (reason 'payload expired', sql/0020) was never sent:
-- no attempt row and no attempt counted (Svix's worker makes no attempt
-- for a message without a payload), and its dead letter is written closed
-- (skipped: a replay could only die the same way), so that it holds no
-- successor of an ordered endpoint.
-- parameters: $1 = delivery ids (uuid[]), $2 = attempts before this one (int[]),
--   $3 = HTTP status codes (int[], NULL: none), $4 = durations, ms (float8[]), $5 = errors (text[]),
--   $6 = response excerpts (text[]), $7 = batch indexes (int[]), $8 = attempt outcomes (text[]: failed, gone),
--   $9 = dead-letter reasons (text[]), $10 = endpoint names (text[]), $11 = worker id; the arrays binary
-- columns: i
WITH f AS (SELECT *, hookd_id_part(x.id) AS pa FROM unnest($1::uuid[], $2::int[], $3::int[], $4::float8[],
  $5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $10::text[]) AS x(id, prev, code, dur, error, excerpt, i,
  outcome, reason, endpoint)),
 upd AS (UPDATE outbox_deliveries d SET status = 'DEAD',
  attempts = CASE WHEN f.reason = 'payload expired' THEN f.prev ELSE f.prev + 1 END, last_status_code = f.code,
  last_error = f.error
  FROM f WHERE d.id = f.id AND @in_part_of(d.part_at, f.pa, CASE WHEN f.pa IS NULL THEN '-infinity'::timestamptz END)
  AND d.status NOT IN ('SUCCEEDED', 'DEAD') AND d.attempts = f.prev
  RETURNING d.id, d.attempts),
 att AS (INSERT INTO attempts (source, source_id, outcome, duration_ms, status_code, error, response_excerpt,
  worker_id) SELECT 'delivery', f.id, f.outcome, f.dur, f.code, f.error, f.excerpt, $11 FROM f JOIN upd ON upd.id = f.id
  WHERE f.reason <> 'payload expired'),
 dl AS (INSERT INTO dead_letters (source, source_id, reason, attempts, last_error, replayed_at, skipped_at)
  SELECT 'delivery', f.id, f.reason, d.attempts, f.error, x.closed, x.closed
   FROM f JOIN upd d ON d.id = f.id
   CROSS JOIN LATERAL (SELECT CASE WHEN f.reason = 'payload expired' THEN now() END AS closed) x
  ON CONFLICT (source, source_id) WHERE replayed_at IS NULL DO NOTHING),
 gone AS (UPDATE webhook_endpoints SET enabled = false, updated_at = now(),
  disabled_reason = 'the endpoint answered 410 Gone'
  WHERE name IN (SELECT f.endpoint FROM f JOIN upd ON upd.id = f.id WHERE f.outcome = 'gone'))
 SELECT f.i FROM f JOIN upd ON upd.id = f.id
