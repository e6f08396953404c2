-- The deferred events of an entity that just changed, other than the one
-- applied: due now. SKIP LOCKED: a sibling another worker holds is being
-- evaluated right now; waiting for it here is how two batches deadlock.
-- parameters: $1 = entity type, $2 = entity id, $3 = the applied event's id
-- columns: id, due_ms
UPDATE webhook_inbox u SET next_attempt_at = now() FROM (
 SELECT id, part_at FROM webhook_inbox WHERE status = 'DEFERRED' AND entity_type = $1
 AND entity_id = $2 AND id <> $3 FOR UPDATE SKIP LOCKED) x
 WHERE u.id = x.id AND u.part_at = x.part_at
 RETURNING u.id::text AS id, (extract(epoch FROM u.next_attempt_at) * 1000)::bigint AS due_ms
