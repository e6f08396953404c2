-- The dead_letters row of a quarantined inbox event, unless one is open
-- already (the per-event path).
-- parameters: $1 = inbox id, $2 = reason, $3 = attempts, $4 = last error
INSERT INTO dead_letters (source, source_id, reason, attempts, last_error)
 VALUES ('inbox', $1, $2, $3, $4)
 ON CONFLICT (source, source_id) WHERE replayed_at IS NULL DO NOTHING
