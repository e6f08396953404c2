-- The deferred events of a machine's entities the batch changed, outside
-- the batch: due now. SKIP LOCKED: a sibling another worker holds is being
-- evaluated right now.
-- The rows are updated where they were found: by (id, part_at), one partition each.
-- parameters: $1 = machine (entity type), $2 = entity ids (text[], binary),
--   $3 = the batch's ids (uuid[], binary)
-- columns: id, due_ms
UPDATE webhook_inbox u SET next_attempt_at = now() FROM (
 SELECT x.id, x.part_at FROM unnest($2::text[]) AS k(id),
 LATERAL (SELECT w.id, w.part_at FROM webhook_inbox w WHERE w.status = 'DEFERRED' AND w.entity_type = $1
 AND w.entity_id = k.id AND w.id <> ALL($3::uuid[]) FOR UPDATE SKIP LOCKED) x) x
 WHERE u.id = x.id AND u.part_at = x.part_at
 RETURNING u.id::text AS id, (extract(epoch FROM u.next_attempt_at) * 1000)::bigint AS due_ms
