-- An inbox row by its key, after an insert retried on a new connection
-- (the first attempt's commit may have landed).
-- parameters: $1 = partner, $2 = partner event id
-- columns: id, due_ms
SELECT id::text AS id, (extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms FROM webhook_inbox
 WHERE partner_name = $1 AND partner_event_id = $2
