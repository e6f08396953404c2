-- Moves an expiring partition's survivors to _kept; how many are left
-- (held by another transaction: the partition waits for the next pass).
-- parameters: $1 = table, $2 = partition
-- columns: remaining
SELECT hookd_retention_move($1::regclass, $2::regclass) AS remaining
