-- Closes an open dead letter of an outbound delivery without replaying it
-- (`hookd dlq skip`): the delivery stays DEAD, and the deliveries an ordered
-- endpoint held behind it go on.
-- parameters: $1 = dead letter id, or its delivery's id (uuid)
-- columns: id, source_id
UPDATE dead_letters SET replayed_at = now(), skipped_at = now()
 WHERE source = 'delivery' AND replayed_at IS NULL AND (id = $1::uuid OR source_id = $1::uuid)
RETURNING id::text AS id, source_id::text AS source_id
