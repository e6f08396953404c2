-- Deletes a batch of _kept rows that are terminal and older than the window.
-- parameters: $1 = table, $2 = window, ms, $3 = batch size
-- columns: deleted
SELECT hookd_retention_prune_kept($1::regclass, $2::bigint * interval '1 millisecond', $3::int) AS deleted
