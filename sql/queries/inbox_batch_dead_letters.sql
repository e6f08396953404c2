-- The dead_letters rows of a batch's dead-lettered inbox events, except
-- where one is open already.
-- parameters: $1 = jsonb array of {id, reason, attempts, error}
INSERT INTO dead_letters (source, source_id, reason, attempts, last_error)
 SELECT 'inbox', v.id, v.reason, v.attempts, v.error
 FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, reason text, attempts int, error text)
 ON CONFLICT (source, source_id) WHERE replayed_at IS NULL DO NOTHING
