-- Every attempt of one inbox event or delivery, oldest first (`hookd dlq show`).
-- parameters: $1 = source ('inbox' | 'delivery'), $2 = source row id (uuid)
-- columns: attempted_at, outcome, duration_ms, status_code, error, response, worker
SELECT to_char(attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS attempted_at,
       outcome, duration_ms, status_code, coalesce(error, '') AS error,
       coalesce(response_excerpt, '') AS response, coalesce(worker_id, '') AS worker
  FROM attempts
 WHERE source = $1 AND source_id = $2::uuid AND @since_id(part_at, $2::uuid)
 ORDER BY id
