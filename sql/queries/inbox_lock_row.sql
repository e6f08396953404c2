-- Locks one inbox event for evaluation and reads it (the per-event path);
-- no row: gone, or held by another worker (SKIP LOCKED).
-- parameters: $1 = inbox id
-- columns: partner_name, event_type, entity_type, entity_id, status, attempts, deferrals, age_ms
SELECT partner_name, event_type, coalesce(entity_type, '') AS entity_type, entity_id, status, attempts,
 deferrals, (extract(epoch FROM now() - coalesce(replayed_at, received_at)) * 1000)::bigint AS age_ms
 FROM webhook_inbox WHERE id = $1
 AND @in_part(part_at, $1::uuid) FOR UPDATE SKIP LOCKED
