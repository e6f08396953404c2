-- One evaluation attempt of an inbox event, in the attempts history (the
-- per-event path).
-- parameters: $1 = inbox id, $2 = outcome, $3 = duration (ms, text),
--   $4 = error or NULL, $5 = worker id
INSERT INTO attempts (source, source_id, outcome, duration_ms, error, worker_id)
 VALUES ('inbox', $1, $2, $3, $4, $5)
