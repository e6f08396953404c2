-- After _far was detached: drops it, creates the partitions ahead and a new _far.
-- parameters: $1 = table, $2 = the detached _far, $3 = partition width, ms, $4 = widths ahead
-- columns: extended
SELECT hookd_retention_extend($1::regclass, $2::regclass, $3::bigint * interval '1 millisecond', $4::int)
 IS NULL AS extended
