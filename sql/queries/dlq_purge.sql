-- Deletes the dead letters older than a cut-off (their source rows stay until
-- [retention] expires them), and counts them.
-- parameters: $1 = dead for longer than this many ms
-- columns: entries
WITH gone AS (
    DELETE FROM dead_letters WHERE dead_at < now() - $1::bigint * interval '1 millisecond' RETURNING 1
)
SELECT count(*) AS entries FROM gone
