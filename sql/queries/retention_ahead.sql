-- Partitions ahead: NULL when they reach far enough (or were just made to),
-- else the empty _far partition the caller detaches concurrently.
-- parameters: $1 = table, $2 = partition width, ms, $3 = widths ahead
-- columns: far
SELECT hookd_retention_ahead($1::regclass, $2::bigint * interval '1 millisecond', $3::int) AS far
