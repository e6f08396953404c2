-- An outbox event processed once none of its deliveries is still open.
-- The event and its deliveries are looked up in the event's partition and
-- _kept only (a delivery lives in its event's partition, or _kept: part_at
-- from the id, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = event id
UPDATE outbox_events SET processed_at = now() WHERE id = $1
 AND @in_part(part_at, $1::uuid) AND processed_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM outbox_deliveries WHERE event_id = $1
 AND status IN ('PENDING', 'RETRYING')
 AND @in_part(part_at, $1::uuid))
