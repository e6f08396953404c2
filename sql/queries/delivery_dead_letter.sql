-- The dead_letters row of a dead delivery, unless one is open already.
-- An expired payload's ('payload expired') is written closed, as in
-- delivery_record_dead (why: there).
-- parameters: $1 = delivery id, $2 = reason, $3 = attempts, $4 = last error
INSERT INTO dead_letters (source, source_id, reason, attempts, last_error, replayed_at, skipped_at)
 VALUES ('delivery', $1, $2, $3, $4, CASE WHEN $2::text = 'payload expired' THEN now() END,
  CASE WHEN $2::text = 'payload expired' THEN now() END)
 ON CONFLICT (source, source_id) WHERE replayed_at IS NULL DO NOTHING
