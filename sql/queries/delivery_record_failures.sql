-- A batch of failed attempts that will be retried, in one statement: each
-- delivery RETRYING with its attempts, last answer and due time, and its
-- attempt row - where the delivery is still open and its attempts are still
-- the count it was loaded with (anything else, e.g. the same delivery sent
-- twice, is left to the one-by-one path, which records it too). Returns the
-- batch index and due time (epoch ms, Postgres's clock) of each recorded.
-- The event row is not locked: a delivery that stays open cannot finish its
-- event, so there is nothing to serialise with its siblings' outcomes.
-- (The part_at condition makes each row a primary-key probe in one
-- partition; joined on the id alone the planner once chose a scan of the
-- table, and `d.id = ANY ($1)` then probed every partition.)
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_part, once per row, sql/0018_ids_carry_partition.sql), never in
-- every one.
-- parameters: $1 = delivery ids (uuid[]), $2 = attempts before this one (int[]),
--   $3 = HTTP status codes (int[], NULL: none), $4 = durations, ms (float8[]), $5 = errors (text[]),
--   $6 = response excerpts (text[]), $7 = batch indexes (int[]), $8 = waits, ms (bigint[]),
--   $9 = worker id; the arrays binary
-- Open is written `NOT IN ('SUCCEEDED', 'DEAD')` (the same, by the CHECK constraint), not
-- `IN ('PENDING', 'RETRYING')`: that form matches the partial indexes on open
-- deliveries, and with statistics from before a storm the planner can scan every open
-- delivery of the partition to find a batch by id.
-- columns: i, due_ms
WITH f AS (SELECT *, hookd_id_part(x.id) AS pa FROM unnest($1::uuid[], $2::int[], $3::int[], $4::float8[], $5::text[],
  $6::text[], $7::int[], $8::bigint[]) AS x(id, prev, code, dur, error, excerpt, i, wait_ms)),
 upd AS (UPDATE outbox_deliveries d SET status = 'RETRYING', attempts = f.prev + 1, last_status_code = f.code,
  last_error = f.error, next_attempt_at = statement_timestamp() + f.wait_ms * interval '1 millisecond'
  FROM f WHERE d.id = f.id AND @in_part_of(d.part_at, f.pa, CASE WHEN f.pa IS NULL THEN '-infinity'::timestamptz END)
  AND d.status NOT IN ('SUCCEEDED', 'DEAD') AND d.attempts = f.prev
  RETURNING d.id, d.next_attempt_at),
 att AS (INSERT INTO attempts (source, source_id, outcome, duration_ms, status_code, error, response_excerpt,
  worker_id) SELECT 'delivery', f.id, 'failed', f.dur, f.code, f.error, f.excerpt, $9 FROM f JOIN upd ON upd.id = f.id)
 SELECT f.i, ceil(extract(epoch FROM upd.next_attempt_at) * 1000)::bigint AS due_ms FROM f JOIN upd ON upd.id = f.id
