-- Locks a claimed batch's inbox events and reads them (the set-based
-- evaluation); rows it cannot lock are gone, terminal or busy.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, partner_name, event_type, entity_type, entity_id, status, attempts, deferrals, age_ms
SELECT id::text AS id, partner_name, event_type, coalesce(entity_type, '') AS entity_type, entity_id, status,
 attempts, deferrals,
 (extract(epoch FROM now() - coalesce(replayed_at, received_at)) * 1000)::bigint AS age_ms
 FROM webhook_inbox WHERE id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED
