-- The outbox event of a replayed delivery is no longer processed.
-- parameters: $1 = delivery id (uuid)
UPDATE outbox_events SET processed_at = NULL
 WHERE id = (SELECT event_id FROM outbox_deliveries WHERE id = $1::uuid AND @in_part(part_at, $1::uuid))
   AND @in_part(part_at, $1::uuid)
