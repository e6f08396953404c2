-- The attempts history of a batch's evaluated inbox events, each charged
-- its share of the batch's time.
-- parameters: $1 = jsonb array of {id, outcome, error}, $2 = duration per attempt (ms),
--   $3 = worker id
INSERT INTO attempts (source, source_id, outcome, duration_ms, error, worker_id)
 SELECT 'inbox', v.id, v.outcome, $2::double precision, v.error, $3
 FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, outcome text, error text)
