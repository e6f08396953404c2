-- One delivery attempt in the attempts history (recorded one by one).
-- parameters: $1 = delivery id, $2 = outcome, $3 = duration (ms, text), $4 = HTTP status or NULL,
--   $5 = error or NULL, $6 = response excerpt or NULL, $7 = worker id
INSERT INTO attempts (source, source_id, outcome, duration_ms, status_code, error,
 response_excerpt, worker_id) VALUES ('delivery', $1, $2, $3, $4, $5, $6, $7)
