-- What a pass does to one partitioned table: finalize an interrupted
-- detach, drop an orphaned detached partition, expire the partitions older
-- than the window (sql/0012_retention.sql, hookd_retention_plan).
-- parameters: $1 = table, $2 = window, ms
-- columns: action, part, hi, rows_estimate
SELECT action, part, hi::text AS hi, rows_estimate
 FROM hookd_retention_plan($1::regclass, $2::bigint * interval '1 millisecond')
