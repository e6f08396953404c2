-- The deliveries an endpoint still owes (its circuit just opened: those
-- waiting in Redis are parked at once), over the partial index of 0014.
-- parameters: $1 = endpoint name
-- columns: id
SELECT d.id::text AS id FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
 WHERE e.name = $1 AND d.status IN ('PENDING', 'RETRYING')
