-- An endpoint's circuit closed: every delivery it still owes that is waiting
-- for a later retry is due now (Postgres first; the caller schedules them in
-- Redis). Attempts and history are untouched: only the wait is cut short.
-- Deliveries already due (most of a backlog: parked when they came due, and
-- made due again in Redis by the closing circuit_report) are not written:
-- rewriting every row of a large backlog would hold its row locks against
-- the record jobs of the very drain it starts.
-- parameters: $1 = endpoint name
-- columns: id, due_ms
UPDATE outbox_deliveries d SET next_attempt_at = statement_timestamp()
 FROM webhook_endpoints e
 WHERE e.name = $1 AND d.endpoint_id = e.id AND d.status IN ('PENDING', 'RETRYING')
 AND d.next_attempt_at > statement_timestamp()
 RETURNING d.id::text AS id, ceil(extract(epoch FROM d.next_attempt_at) * 1000)::bigint AS due_ms
