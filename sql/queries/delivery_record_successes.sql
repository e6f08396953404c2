-- A batch of successful deliveries in one statement: SUCCEEDED where still
-- open, with their attempt rows; returns the batch index of each recorded.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_part, once per row, sql/0018_ids_carry_partition.sql), never in
-- every one.
-- parameters: $1 = jsonb array of {i, id, code, dur, at, excerpt}, $2 = worker id
-- Open is written `NOT IN ('SUCCEEDED', 'DEAD')` (the same, by the CHECK constraint), not
-- `IN ('PENDING', 'RETRYING')`: that form matches the partial indexes on open
-- deliveries, and with statistics from before a storm the planner can scan every open
-- delivery of the partition to find a batch by id.
-- columns: i
WITH s AS (SELECT *, hookd_id_part(x.id) AS pa FROM jsonb_to_recordset($1::jsonb) AS x(i int, id uuid, code int,
  dur float8, at bigint, excerpt text)),
 upd AS (UPDATE outbox_deliveries d SET status = 'SUCCEEDED', attempts = d.attempts + 1,
  last_status_code = s.code, last_error = NULL, delivered_at = to_timestamp(s.at / 1000.0)
  FROM s
  WHERE d.id = s.id AND @in_part_of(d.part_at, s.pa, CASE WHEN s.pa IS NULL THEN '-infinity'::timestamptz END)
  AND d.status NOT IN ('SUCCEEDED', 'DEAD') RETURNING d.id, d.attempts),
 att AS (INSERT INTO attempts (source, source_id, outcome, duration_ms, status_code,
  response_excerpt, worker_id) SELECT 'delivery', s.id, 'succeeded', s.dur, s.code, s.excerpt, $2
  FROM s JOIN upd ON upd.id = s.id)
 SELECT s.i FROM s JOIN upd ON upd.id = s.id
