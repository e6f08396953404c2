-- How many rows of a partition expiry would keep (--dry-run).
-- parameters: $1 = table, $2 = partition
-- columns: survivors
SELECT hookd_retention_survivors_count($1::regclass, $2::regclass) AS survivors
