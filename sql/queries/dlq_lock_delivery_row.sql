-- Locks the delivery of a dead letter being replayed; its status must still be
-- DEAD and its endpoint enabled.
-- parameters: $1 = delivery id (uuid)
-- columns: status, enabled, name
SELECT d.status, ep.enabled, ep.name
  FROM outbox_deliveries d
  JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
 WHERE d.id = $1::uuid AND @in_part(d.part_at, $1::uuid)
   FOR UPDATE OF d
