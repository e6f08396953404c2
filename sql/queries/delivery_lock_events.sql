-- Locks the outbox events of a batch of successes, in id order (the order
-- delivery_lock_event is taken in, one event after another).
-- parameters: $1 = event ids (uuid[], binary)
-- columns: locked
SELECT 1 AS locked FROM outbox_events WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE
