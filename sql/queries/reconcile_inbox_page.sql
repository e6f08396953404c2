-- One page of the reconciler's walk over the inbox events that are not terminal
-- and due within the horizon, in (next_attempt_at, id) order after a cursor.
-- The ORDER BY names the table's columns: a bare id or next_attempt_at would
-- sort by the text output columns of the same name, and Postgres could not
-- use the partial "due" index (a sort of every non-terminal row per page
-- instead of an index range scan). Run with db_exec_index_order.
-- parameters: $1 = horizon in ms, $2 = cursor next_attempt_at (text; '-infinity'
--   to start), $3 = cursor id (uuid; all zeros to start), $4 = page size
-- columns: id, due_ms, next_attempt_at
SELECT id::text AS id, ceil(extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms,
       next_attempt_at::text AS next_attempt_at
  FROM webhook_inbox
 WHERE status IN ('PENDING', 'DEFERRED', 'RETRYING')
   AND next_attempt_at <= now() + $1::bigint * interval '1 millisecond'
   AND (next_attempt_at, id) > ($2::timestamptz, $3::uuid)
 ORDER BY webhook_inbox.next_attempt_at, webhook_inbox.id
 LIMIT $4::int
