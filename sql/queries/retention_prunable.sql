-- How many rows the batched deletes would remove (--dry-run): _kept rows of
-- a partitioned table, or 'dedup' keys, or 'dead_letters'.
-- parameters: $1 = table or 'dedup' or 'dead_letters', $2 = window, ms
-- columns: prunable
SELECT hookd_retention_prunable($1::text, $2::bigint * interval '1 millisecond') AS prunable
