-- Deletes a batch of expired dedup keys ('dedup') or replayed dead letters
-- ('dead_letters').
-- parameters: $1 = what, $2 = window, ms, $3 = batch size
-- columns: deleted
SELECT hookd_retention_prune($1::text, $2::bigint * interval '1 millisecond', $3::int) AS deleted
