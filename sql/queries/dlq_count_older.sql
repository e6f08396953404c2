-- How many dead letters `hookd dlq purge --dry-run` would delete.
-- parameters: $1 = dead for longer than this many ms
-- columns: entries
SELECT count(*) AS entries FROM dead_letters WHERE dead_at < now() - $1::bigint * interval '1 millisecond'
