-- The events of a batch of successes processed where none of their
-- deliveries is still open.
-- parameters: $1 = event ids (uuid[], binary)
UPDATE outbox_events e SET processed_at = now() WHERE e.id = ANY($1::uuid[])
 AND e.processed_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = e.id
 AND d.status IN ('PENDING', 'RETRYING'))
