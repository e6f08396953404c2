-- Drops a detached partition, after putting back any survivor found in it.
-- parameters: $1 = table, $2 = the detached partition
-- columns: rescued
SELECT hookd_retention_drop($1::regclass, $2::regclass) AS rescued
