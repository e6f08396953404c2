-- In the claim's transaction: one delivery row per (event, endpoint) -
-- SUCCEEDED with its attempt row when the first attempt answered 2xx (`at`
-- set), RETRYING with its failed attempt row when it failed plainly (`error`
-- set), PENDING otherwise; due after wait_ms - and the events fanned out;
-- processed unless one of their deliveries is still open (one written now,
-- or one that existed before: an event fanned out again by hand). Times are
-- the statement's, not the transaction's: the claim began up to a window
-- earlier. The events are found by their tuple ids (stable: the claim locked
-- them), each in its own partition and _kept only (a tuple id is unique only
-- within a partition; part_at from the id: hookd_id_keys,
-- sql/0018_ids_carry_partition.sql), and updated by the same tuple ids: a
-- TID scan per event, never a probe of every partition (the history's
-- partitions answered each tuple id with a page of their own, checked
-- against all the claimed ids). A join on the ids alone planned, with a
-- new partition's stale statistics, as a sort of the whole partition per
-- pass. An event's earlier open deliveries live in its partition or _kept
-- too, and are looked up there, one probe each.
-- A delivery takes its event's part_at: it lives in (and expires with) its
-- event's partition, and UNIQUE (event_id, endpoint_id, part_at) still
-- makes an event fanned out again keep its one delivery per endpoint.
-- parameters: $1 = delivery ids, $2 = event ids, $3 = endpoint ids (uuid[]),
--   $4 = status codes (int[]), $5 = answered at, epoch ms (bigint[]), $6 = durations, ms (float8[]),
--   $7 = response excerpts (text[]), $8 = waits, ms (bigint[]), $9 = the claimed events' ids (uuid[]),
--   $10 = worker id, $11 = errors of failed first attempts (text[]), $12 = the claimed events' tuple ids
--   (tid[], in the order of $9); the arrays binary, NULL elements
--   where there was no answer
-- columns: inserted
WITH r AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::bigint[], $6::float8[],
  $7::text[], $8::bigint[], $11::text[]) AS x(id, event_id, endpoint_id, code, at, dur, excerpt, wait_ms, error)),
 k AS MATERIALIZED (SELECT k.*, c.tid FROM hookd_id_keys($9::uuid[]) k
  JOIN unnest($9::uuid[], $12::tid[]) AS c(id, tid) ON c.id = k.id),
 e AS MATERIALIZED (SELECT o.id, o.part_at, o.ctid AS tid, k.part_at AS id_part, k.any_at FROM k
  CROSS JOIN LATERAL (SELECT o.id, o.part_at, o.ctid FROM outbox_events o WHERE o.ctid = k.tid AND o.id = k.id
   AND @in_part_of(o.part_at, k.part_at, k.any_at) OFFSET 0) o),
 open AS (SELECT e.id FROM e CROSS JOIN LATERAL (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = e.id
  AND d.status IN ('PENDING', 'RETRYING') AND @in_part_of(d.part_at, e.id_part, e.any_at)
  LIMIT 1) d),
 ins AS (INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, attempts, next_attempt_at,
  last_status_code, last_error, delivered_at, created_at, part_at)
  SELECT r.id, event_id, endpoint_id,
   CASE WHEN at IS NOT NULL THEN 'SUCCEEDED' WHEN error IS NOT NULL THEN 'RETRYING' ELSE 'PENDING' END,
   CASE WHEN at IS NULL AND error IS NULL THEN 0 ELSE 1 END,
   statement_timestamp() + wait_ms * interval '1 millisecond',
   code, error, to_timestamp(at / 1000.0), statement_timestamp(), e.part_at FROM r JOIN e ON e.id = r.event_id
  ON CONFLICT DO NOTHING RETURNING id, event_id, status),
 att AS (INSERT INTO attempts (source, source_id, attempted_at, outcome, duration_ms, status_code, error,
  response_excerpt, worker_id) SELECT 'delivery', r.id, coalesce(to_timestamp(r.at / 1000.0), statement_timestamp()),
  CASE WHEN ins.status = 'SUCCEEDED' THEN 'succeeded' ELSE 'failed' END, r.dur, r.code, r.error, r.excerpt, $10
  FROM r JOIN ins ON ins.id = r.id WHERE ins.status IN ('SUCCEEDED', 'RETRYING')),
 ev AS (UPDATE outbox_events o SET fanned_out_at = statement_timestamp(),
  processed_at = CASE WHEN o.id IN (SELECT event_id FROM ins WHERE status IN ('PENDING', 'RETRYING'))
   OR o.id IN (SELECT id FROM open) THEN NULL ELSE statement_timestamp() END
  FROM e WHERE o.ctid = e.tid AND o.part_at = e.part_at AND o.id = e.id)
 SELECT count(*) AS inserted FROM ins
