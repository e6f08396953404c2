-- Locks an outbox event: the lock that serialises the outcomes of one
-- event's deliveries, so the last one recorded sees the others done.
-- parameters: $1 = event id
-- columns: locked
SELECT 1 AS locked FROM outbox_events WHERE id = $1
 AND @in_part(part_at, $1::uuid) FOR UPDATE
